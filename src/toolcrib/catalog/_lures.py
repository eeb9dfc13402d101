"""What reads as an instruction to the model (R-4.7): word lists and the one test, :func:`is_lure`.

Word lists are written naturally and folded with :func:`fold` before compiling, so accents,
case and homoglyphs never matter. Latin and Cyrillic words match whole words (``_`` stands for
a space in the regex lists); Chinese, Japanese and Korean markers match as substrings (no spaces
between words there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from toolcrib.catalog._fold import fold, squash

__all__ = ["is_lure"]

_IGNORE = """ignore ignores ignoring disregard disregarding forget forgetting override overriding bypass
neglect discard dismiss abandon ignorez ignorer ignora ignoren ignorar ignoriere ignorieren ignoriert
oublie oubliez oublier olvida olvide olviden olvidar vergiss vergesst vergessen dimentica dimenticate
ignorare esqueca esquece desconsidere descarta игнорируй игнорируйте игнорировать проигнорируй забудь
забудьте пропусти отбрось"""
_INSTRUCTIONS = """instruction instructions prompt prompts directive directives guardrails programming
consignes regles instrucciones indicaciones directrices anweisung anweisungen instruktionen vorgaben
istruzioni instrucoes инструкция инструкции инструкций указания промпт"""
_RULES = """rules guidelines commands orders constraints policies context messages restrictions training
reglas normas regles regeln regole regras правила"""
_PRIOR = """previous prior above earlier preceding former all any your system initial original these those
other every existing sus tus vuestras anteriores previas ses tes vos precedentes ihre deine eure
vorherigen bisherigen sue tue precedenti suas tuas твои ваши свои предыдущие прежние"""
_REVEAL = """reveal print show output send leak share tell display disclose expose exfiltrate dump repeat
email post upload transmit forward paste copy spell revele revelez reveler montre montrez affiche affichez
envoie envoyez donne donnez divulgue imprime revela revelar muestra muestre mostrar envia enviar dame dime
comparte verrate verraten zeige zeig zeigen gib sende schicke drucke teile nenne rivela mostra invia
stampa mostre envie покажи раскрой отправь выведи сообщи скажи дай напечатай перешли выдай"""
_SECRETS = r"""secret secrets credential credentials password passwords passwd passphrase apikey api_keys?
api_tokens? access_tokens? auth_tokens? bearer_tokens? oauth_tokens? session_tokens?
refresh_tokens? personal_access_tokens? your_tokens? private_keys? ssh_keys? secret_keys?
access_keys? signing_keys? environment_variables env_vars? env_file session_cookies?
system_prompt initial_prompt your_instructions your_prompt mot_de_passe mots_de_passe identifiants
cle_api jetons? contrasena contrasenas credenciales secretos clave_api passwort passworter kennwort
zugangsdaten geheimnisse geheimnis api_schlussel anmeldedaten credenziali segreti chiave_api senha
senhas credenciais segredos пароль пароли секрет секреты токен токены учетные_данные ключ_api"""
_PHRASES = r"""system_prompt system_message initial_prompt hidden_prompt developer_message developer_mode
dan_mode god_mode jailbreak jailbroken (?:previous|prior|above|earlier|preceding)_instructions
(?:new|updated|real|true|actual|hidden|secret|important|additional_secret)_instructions
you_are_now you_re_now youre_now you_must_now you_will_now from_now_on as_an_ai
as_a_language_model as_an_llm as_an_ai_assistant you_are_(?:an_ai|chatgpt|claude|gpt|gemini|dan|a_helpful)
pretend_(?:to_be|you_are) role_?play_as act_as_if_you stay_in_character
(?:do_not|don_t|dont|never)_(?:tell|inform|mention_this_to|show_this_to|alert)_the_user
without_(?:telling|informing|asking|notifying)_the_user the_user_(?:must|should)_not_(?:know|see|notice)
hide_this_from keep_this_(?:secret|hidden) do_not_reveal_this
(?:the_)?(?:ai|assistant|llm|agent|chatbot|claude|chatgpt|gemini|copilot|language_model|ai_model)_(?:must|should|shall|needs_to|has_to|is_required_to|always|never)\b
(?:attention|note_to|dear|hey|hi|message_to)_(?:the_)?(?:ai|assistant|model|llm|agent|claude|chatgpt|gpt|bot)\b
always_(?:call|use|invoke|run|prefer)_this_tool (?:call|use|invoke|run)_this_tool_(?:first|before|instead)
instead_of_(?:using|calling)_(?:any_)?other_tools? do_not_use_(?:any_)?other_tools?
(?:override|bypass|disable|circumvent|turn_off|ignore)_(?:the_|your_|all_|any_)?(?:safety|security|content|filters?|guardrails?|restrictions?|polic(?:y|ies)|moderation)\b
id_rsa id_ed25519 etc_passwd etc_shadow ssh_(?:folder|directory|keys?) aws_credentials mcp_json
tu_es_maintenant vous_etes_maintenant a_partir_de_maintenant en_tant_qu_(?:ia|intelligence_artificielle)
en_tant_que_ia nouvelles_instructions ne_dis_pas_a_l_utilisateur prompt_systeme invite_systeme
ahora_eres ahora_usted_es a_partir_de_ahora desde_ahora_eres como_(?:una_)?ia como_un_modelo_de_lenguaje
nuevas_instrucciones no_le_digas_al_usuario prompt_del_sistema instrucciones_del_sistema
du_bist_jetzt sie_sind_jetzt von_nun_an als_ki als_sprachmodell neue_anweisungen systemprompt
systemanweisungen sag_dem_benutzer_nicht ora_sei da_ora_in_poi nuove_istruzioni agora_voce_e
novas_instrucoes теперь_ты ты_теперь с_этого_момента отныне как_ии как_языковая_модель
новые_инструкции системный_промпт системные_инструкции не_говори_пользователю"""
_CJK_IGNORE = "忽略 忽视 忽視 无视 無視 忘记 忘記 不要理会 不理会 무시 잊어"
_CJK_INSTRUCTIONS = """指令 指示 说明 說明 提示 规则 規則 命令 设定 設定 ルール
지시 지침 명령 규칙 프롬프트"""
_CJK_REVEAL = """显示 顯示 透露 泄露 洩露 告诉 告訴 发送 發送 输出 輸出 打印 给我 給我 提供 公开
教えて 送信 表示 보여 알려 출력 공개 전송"""
_CJK_SECRETS = """密码 密碼 密钥 密鑰 凭证 凭据 憑證 令牌 系统提示 系統提示 秘密 机密 機密
パスワード 認証情報 シークレット トークン 비밀번호 자격 증명 토큰 api key"""
_CJK_PHRASES = """你现在是 你現在是 从现在开始 從現在開始 从现在起 作为ai 作为一个ai 作為ai
作为人工智能 新的指令 新指令 系统提示 系統提示 系统指令 不要告诉用户 不要告訴用戶
あなたは今 新しい指示 システムプロンプト 지금부터 너는 시스템 프롬프트 새로운 지시"""
_SQUASHED = """previousinstructions priorinstructions earlierinstructions aboveinstructions ignoreprevious
ignoreallprevious ignoreallinstructions ignoreyourinstructions ignoretheinstructions ignoreallrules
disregardprevious disregardall disregardyour forgetprevious forgetallprevious forgetyourinstructions
forgeteverything systemprompt jailbreak developermode youarenow youmustnow imstart endoftext
revealyoursecret revealthesecret revealthepassword revealthecredentials revealyourcredentials"""
_MARKUP = re.compile(
    r"<\|?\s*im_(?:start|end|sep)|<\|[a-z_]{2,30}\|>|\[/?inst\]|<<\s*/?sys\s*>>|\{\{\s*system"
    r"|</?\s*(?:system|sys|assistant|instructions?|important|admin|prompt|secret|hidden)\s*>"
    r"|^\W*(?:system|assistant|developer|admin)\s*:|#{2,}\s*(?:system|instruction)",
    re.IGNORECASE,
)
_BLOB = re.compile(r"[A-Za-z0-9+/]{32,}={0,2}")


def _words(spec: str) -> list[str]:
    return spec.split()


def _alternation(words: Iterable[str], *, is_regex: bool = False) -> str:
    """Longest first; plain words are folded, regex words spell a space as ``_``."""
    folded = (w.replace("_", " ") for w in words) if is_regex else (fold(w) for w in words)
    return "|".join(sorted(set(folded), key=len, reverse=True))


def _whole(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w)(?:{pattern})(?!\w)")


def _near(first: str, second: str, gap: int) -> re.Pattern[str]:
    return _whole(rf"(?:{first})(?: \S+){{0,{gap}}} (?:{second})")


_IGNORE_RE = _alternation(_words(_IGNORE))
_RULES_NEAR = _whole(
    rf"(?:{_IGNORE_RE})(?: \S+){{0,3}} (?:{_alternation(_words(_PRIOR))})(?: \S+){{0,3}} "
    rf"(?:{_alternation([*_words(_RULES), *_words(_INSTRUCTIONS)])})"
)
_INSTRUCTIONS_NEAR = _near(_IGNORE_RE, _alternation(_words(_INSTRUCTIONS)), 6)
_SECRETS_NEAR = _near(_alternation(_words(_REVEAL)), _alternation(_words(_SECRETS), is_regex=True), 7)
_PHRASES_RE = _whole(_alternation(_words(_PHRASES), is_regex=True))
_CJK_PHRASES_RE = re.compile(_alternation(_words(_CJK_PHRASES)))
_SQUASHED_RE = re.compile(_alternation(_words(_SQUASHED)))
_FOLDED_RULES = (_RULES_NEAR, _INSTRUCTIONS_NEAR, _SECRETS_NEAR, _PHRASES_RE)
_CJK_PAIRS = tuple(
    ([fold(w) for w in _words(verbs)], [fold(w) for w in _words(nouns)])
    for verbs, nouns in ((_CJK_IGNORE, _CJK_INSTRUCTIONS), (_CJK_REVEAL, _CJK_SECRETS))
)


def is_lure(sentence: str) -> bool:
    """Whether a sentence reads as an instruction to the model, in any disguise we know."""
    if _MARKUP.search(sentence) or _has_blob(sentence):
        return True
    folded = fold(sentence)
    if any(rule.search(folded) for rule in _FOLDED_RULES):
        return True
    if _SQUASHED_RE.search(squash(folded)) or _CJK_PHRASES_RE.search(folded):
        return True
    return any(_contains_any(folded, verbs) and _contains_any(folded, nouns) for verbs, nouns in _CJK_PAIRS)


def _contains_any(text: str, needles: list[str]) -> bool:
    """Whether any of the (already folded) needles occurs in the text."""
    return any(needle in text for needle in needles)


def _has_blob(sentence: str) -> bool:
    """A base64-looking run: long, and mixing upper case, lower case and digits."""
    for match in _BLOB.finditer(sentence):
        blob = match.group()
        if (
            any(c.isupper() for c in blob)
            and any(c.islower() for c in blob)
            and any(c.isdigit() for c in blob)
        ):
            return True
    return False
