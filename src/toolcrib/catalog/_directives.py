"""Provider prose that addresses the model (R-4.7): a structural test, :func:`is_directive`.

The blocklist of :mod:`toolcrib.catalog._lures` knows phrasings; this module knows grammar. A
card keeps sentences that say what a tool does; a sentence goes when it

1. opens a turn of its own: a role prefix (``Assistant:``), a vocative (``GPT, …``, ``Note to the
   model``) or a notice header (``New rule from the operator``, ``SYSTEM NOTICE``), see
   :func:`opens_turn`;
2. names the gateway's own meta-tools (``execute_tool``, ``search_tools``);
3. announces a change of regime (``from now on``, ``effective immediately``);
4. dismisses the model's instructions (a dismissal word and a reference to its instructions);
5. or commands — an imperative from a general list of English verbs, ``you must``, ``please``,
   ``could you``, ``the assistant must`` — *and* reaches outside the tool: the model's
   instructions, secrets to disclose, the conversation, another tool by name, an outside address,
   or doing it unseen.

An imperative alone is not enough: "Use this tool to list files" is usage of this tool and stays.
The structure is English; other languages rely on the blocklist's ten languages.
"""

from __future__ import annotations

import re
from typing import Literal

from toolcrib.catalog._fold import fold

__all__ = ["directive_kind", "is_directive", "opens_turn"]

_VERBS = frozenset(
    """accept access acknowledge act add adjust allow alter answer append apply approve archive ask
    assign attach authorize avoid back be behave believe block bookmark bring build buy calculate
    call cancel capture carry cc bcc change check choose clean clear click close collect combine
    comment compare compile complete comply compose compute confirm connect consider continue
    convert copy correct count create cut deactivate decline decode decrypt delete deliver deny
    deploy describe destroy determine disable disclose discard display do download drop dump edit
    email embed empty enable encode encrypt end enter erase escalate evaluate execute expand export
    expose extract fetch fill find finish fix flag follow force format forward gather generate get imagine suppose picture envision
    give go grant grab hand handle hide ignore import include inform insert install invoke keep
    kill launch leak leave let list load lock log look mail make mark mention merge message modify
    move name navigate note notify obey open order output overwrite paste pause pay perform permit
    persist pick place post prefer prepare pretend print proceed process prompt provide publish
    pull purge push put query read reboot record redirect refer refresh register reject release
    reload remember remove rename render repeat replace reply report request reset resolve respond
    restart restore retrieve return reveal review revoke rewrite roleplay rotate route run save
    say scan schedule search select send set share show skip sort speak specify start stop store
    submit summarize supply switch sync take tell terminate transfer translate transmit treat
    trigger trust type unlock update upload use verify view visit wait wipe write""".split()
)
_CONDUCT = re.compile(r"(?<!\w)(?:behave|comply|obey|pretend|roleplay|role play)(?!\w)")
"""Verbs that can only be about the model's own conduct, never a tool's action."""
_LEAD_IN = frozenset(
    """please kindly now then also first immediately always never just simply so and next finally
    quickly secretly silently quietly carefully instead additionally afterwards later again""".split()
)
_MODEL = r"(?:ai|assistants?|models?|llms?|agents?|chatbots?|bots?|claude|gpt|chatgpt|gemini|copilot)"
_OBLIGATION = (
    r"(?:must|should|shall|has to|have to|needs? to|will now|is now|are now|ought to"
    r"|(?:is|are) (?:to|required|expected|authori[sz]ed|permitted|allowed|instructed|obliged|obligated))"
)
_SUBORDINATE = re.compile(
    r"^\W*(?:when|whenever|before|after|if|once|while|as soon as|upon|for|in|unless)\b[^,;:]{0,120}[,;:]\s*", re.IGNORECASE
)
_LABEL = re.compile(r"^[^:]{1,30}:\s+")


def _words(pattern: str) -> re.Pattern[str]:
    """A pattern over folded text (lower-case words, single spaces), matching whole words."""
    return re.compile(rf"(?<![\w])(?:{pattern})(?![\w])")


_ROLE_PREFIX = re.compile(
    r"^\W*(?:system|assistant|user|human|developer|admin|operator)\s*:"
    r"|\brole[\"']?\s*[:=]\s*[\"']?(?:system|assistant|developer)\b",
    re.IGNORECASE,
)
_VOCATIVE_START = re.compile(rf"^\W*(?:(?:hey|hi|hello|dear|attention|ok|okay)\W+)?(?:the )?{_MODEL}\s*[,:!.]", re.IGNORECASE)
_ADDRESS = _words(
    rf"\w*(?:note|message|notice|memo|reminder|instructions?|attention|warning|hint) (?:to|for) (?:the |any |all |every )?{_MODEL}"
)
_ADDRESS_HEADER = re.compile(rf"\b(?:to|for)\s+(?:the\s+|any\s+|all\s+)?{_MODEL}\s*:", re.IGNORECASE)
_NOTICE = _words(
    r"(?:new|updated|revised|additional|latest|amended|special|urgent|override) (?:rules?|instructions?|polic(?:y|ies)"
    r"|directives?|guidelines?|orders|mandate)"
    r"|(?:operator|system|admin|administrator|developer|host|platform|security|compliance|moderator|openai|anthropic|root)"
    r" (?:notice|note|message|update|override|alert|announcement|directive|instructions?|mandate|orders?)"
    r"|(?:message|note|notice|instructions?|update|memo|directive|orders?) from (?:the |your )?(?:\w+ )?"
    r"(?:operator|system|admin|administrator|developer|host|platform|owner|creator|maintainers?|anthropic|openai)"
    r"|as (?:the|your) (?:operator|system|admin|administrator|developer|owner|creator)"
)
_META_TOOLS = re.compile(r"execute[\W_]{0,2}tool|search[_\-.]tools|toolcrib__", re.IGNORECASE)
_META_WORDS = _words(r"execute tools?|toolcrib")
_REGIME = _words(
    r"from now on|from this (?:point|moment|time) (?:on|onwards?|forward)|henceforth|going forward|effective immediately"
    r"|for the rest of (?:this|the) (?:conversation|session|chat)|until (?:told|instructed) otherwise"
    r"|for all future (?:requests|responses|messages|answers)"
)
_DISMISS = _words(
    r"ignor\w*|disregard\w*|forget\w*|set aside|put aside|lay aside|drop|abandon|discard|override\w*|overrule\w*"
    r"|supersed\w*|replac\w*|void|cancel\w*|bypass\w*|circumvent\w*|stop following|do not follow|don t follow"
    r"|no longer|obsolete|outdated|invalid|deprecated|revoked|suspended|lifted|not apply"
)
_INSTRUCTIONS = _words(
    r"(?:your|its|the model s|the assistant s|system|hidden|secret|original|initial|previous|prior|earlier|above|preceding"
    r"|former|real|true|old|current|existing|default|internal|all|any|these|those|other)(?: \w+){0,2}"
    r" (?:instructions?|guidance|guidelines?|directives?|prompts?|system messages?|programming|training|persona"
    r"|safeguards|guardrails)"
    r"|(?:your|its|system|hidden|secret|original|initial|previous|prior|earlier|above|preceding|former) (?:rules|configuration"
    r"|config|polic(?:y|ies)|context|memory|constraints|restrictions|orders|directions|limitations|principles)"
    r"|(?:what )?you (?:were|have been|are) (?:told|instructed|advised|asked|programmed|trained|given)"
    r"|system (?:prompt|message|instructions?)"
)
_DISCLOSE = _words(
    r"output\w*|print\w*|reveal\w*|send\w*|repl(?:y|ies|ying)|respond\w*|answer\w*|shar(?:e|es|ing)|show\w*|display\w*|includ\w*|past(?:e|es|ing)|pass(?:es|ing)?"
    r"|forward\w*|e?mail\w*|post\w*|upload\w*|append\w*|dump\w*|disclos\w*|leak\w*|tell|give|list|expos\w*"
    r"|exfiltrat\w*|transmit\w*|copy|copies|attach\w*|insert\w*|put|write|fill|cc|bcc|spell out|read out"
)
_SECRETS = _words(
    r"credentials?|passwords?|passphrases?|passwd|secrets?|(?:api|access|auth|bearer|oauth|session|refresh|stored|saved"
    r"|admin|private|secret|signing|ssh|personal access) (?:keys?|tokens?)|tokens|apikeys?|env(?: file| vars?)?"
    r"|environment variables|cookies?|private keys?|id rsa|keychain|seed phrase|mnemonic"
)
_CONVERSATION = _words(
    r"your (?:reply|replies|response|responses|answer|answers|output|next message|final answer|message)"
    r"|(?:conversation|chat|message) (?:history|log|context)|the conversation|this conversation"
    r"|before (?:answering|responding|replying)|in (?:the|your) chat"
)
_TOOL_REF = re.compile(
    r"\b(?:call(?:ing)?|invok(?:e|ing)|run(?:ning)?|us(?:e|ing)|execut(?:e|ing)|trigger(?:ing)?|prefer(?:ring)?|via"
    r"|through|instead of|rather than)\s+(?:the\s+)?"
    r"(?:(?P<q>['\"`])[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+(?P=q)|[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?:\(\))?(?![\w=(-]))"
    r"(?!\s*(?:parameter|param|field|argument|option|property|flag|attribute|key|column|value|format|syntax)s?\b)",
    re.IGNORECASE,
)
_OTHER_TOOLS = _words(
    r"(?:other|another|different|external|third party|any other|all other) (?:tools?|servers?|plugins?|connectors?"
    r"|functions?|integrations?|assistants?|mcp servers?)"
    r"|the (?!same |this |next |following |previous |current |above |below )[a-z]+ (?:tool|function|plugin)"
    r"|every (?:tool )?(?:call|request)"
)
_OUTSIDE = re.compile(
    r"\bto\s+(?:https?://|www\.|[\w.+-]+@[\w-]+\.)|\b(?:b?cc)\s+[\w.+-]+@|\bthe (?:url|address|endpoint|webhook|server)"
    r" (?:below|above|provided|given|here)\b|\bwebhook\b",
    re.IGNORECASE,
)
_UNSEEN = _words(
    r"silently|secretly|quietly|covertly|discreetly|without (?:asking|telling|informing|notifying|confirming|alerting"
    r"|letting)|without (?:the )?(?:user s )?(?:knowledge|confirmation|noticing)"
    r"|skip(?:ping)? (?:the )?(?:user )?confirmation|(?:do not|don t|never) (?:tell|inform|notify|alert|mention|show)"
    r"|hid(?:e|es|den|ing) (?:\w+ ){0,3}from (?:the )?(?:user|human|operator)s?|keep (?:\w+ ){0,3}(?:hidden|secret)"
)
_MODEL_ADDRESSED = _words(
    rf"(?:the|an?|any|all|every|each|your) (?:\w+ )?{_MODEL}|{_MODEL}(?: \w+){{0,3}} {_OBLIGATION}"
    rf"|(?:mandatory|required|essential|imperative|critical|necessary) that (?:the )?{_MODEL}"
)
"""The model named as a party (``the assistant …``, ``any language model …``): a command in the third person."""
_MODEL_FIRST = re.compile(rf"{_MODEL}(?!\w)")
_SECOND_PERSON = _words(
    r"you(?: \w+)? (?:must|should|shall|need to|have to|are to|are required to|will now|are now|ought to)"
    r"|(?:please|kindly)|(?:could|would|can|will) you|i (?:need|want|would like) you to|(?:make|be) sure (?:you|to)"
)


def opens_turn(sentence: str) -> bool:
    """A role prefix, a vocative to the model or a notice header: the rest of its paragraph is theirs."""
    return directive_kind(sentence) == "turn"


def is_directive(sentence: str) -> bool:
    """Whether a sentence addresses the model rather than describing the tool (see the module doc)."""
    return directive_kind(sentence) is not None


def directive_kind(sentence: str) -> Literal["turn", "directive"] | None:
    """``"turn"`` for a sentence that opens a turn, ``"directive"`` for any other directive, else None."""
    folded = fold(sentence)
    if _ROLE_PREFIX.search(sentence) or _VOCATIVE_START.search(sentence) or _ADDRESS_HEADER.search(sentence):
        return "turn"
    if _ADDRESS.search(folded) or _NOTICE.search(folded):
        return "turn"
    if _META_TOOLS.search(sentence) or _META_WORDS.search(folded) or _REGIME.search(folded):
        return "directive"
    if _DISMISS.search(folded) and _INSTRUCTIONS.search(folded):
        return "directive"
    if _is_command(sentence, folded) and (_CONDUCT.search(folded) or _reaches_outside(sentence, folded)):
        return "directive"
    return None


def _is_command(sentence: str, folded: str) -> bool:
    """An imperative (a clause that starts with a verb), ``you must``/``please``, or the model named as a party."""
    for n, text in enumerate(_clauses(sentence)):
        words = (folded if n == 0 else fold(text)).split()
        while words and words[0] in _LEAD_IN:
            words = words[1:]
        if words[:2] in (["do", "not"], ["don", "t"]):
            words = words[2:]
        if words and (words[0] in _VERBS or _MODEL_FIRST.match(" ".join(words[:2]))):
            return True
    return bool(_SECOND_PERSON.search(folded) or _MODEL_ADDRESSED.search(folded))


def _clauses(sentence: str) -> list[str]:
    """The sentence, then without a short leading label (``Note:``) or subordinate clause (``When …,``),
    then each clause after a semicolon."""
    out = [sentence]
    for pattern in (_LABEL, _SUBORDINATE):
        stripped = pattern.sub("", out[-1], count=1)
        if stripped and stripped != out[-1]:
            out.append(stripped)
    return out + [part for part in sentence.split(";")[1:] if part.strip()]


def _reaches_outside(sentence: str, folded: str) -> bool:
    if _INSTRUCTIONS.search(folded) or _CONVERSATION.search(folded) or _UNSEEN.search(folded):
        return True
    if _DISCLOSE.search(folded) and _SECRETS.search(folded):
        return True
    return bool(_TOOL_REF.search(sentence) or _OTHER_TOOLS.search(folded) or _OUTSIDE.search(sentence))
