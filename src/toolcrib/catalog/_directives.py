"""Provider prose that addresses the model (R-4.7): a structural test, :func:`is_directive`.

The blocklist of :mod:`toolcrib.catalog._lures` knows phrasings; this module knows grammar. A
card keeps sentences that say what a tool does; a sentence goes when it

1. opens a turn of its own: a role prefix (``Assistant:``), a vocative (``GPT, …``, ``Note to the
   model``) or a notice header (``New rule from the operator``, ``SYSTEM NOTICE``), see
   :func:`opens_turn`;
2. names the gateway's own meta-tools (``execute_tool``, ``search_tools``);
3. announces a change of regime (``from now on``, ``effective immediately``);
4. dismisses the model's instructions (a dismissal word and a reference to its instructions);
5. or commands — a clause that starts with a verb from a general list of English verbs, ``you
   must``, ``please``, ``could you``, or the model named as a party (``the assistant must``,
   ``assistants now …``) — *and* reaches outside the tool: the model's instructions, secrets to
   disclose, the conversation, another tool by name, an outside address, or doing it unseen.

An imperative alone is not enough: "Use this tool to list files" is usage of this tool and stays.
Naming another tool is not: "use 'get_next_task' first" goes, sibling of the same server or not
(a card has no view of its siblings); on the real catalogs this is nearly all the rule drops.
The structure is English; other languages rely on the blocklist's ten languages.
"""

from __future__ import annotations

import re
from typing import Literal

from toolcrib.catalog._fold import fold

__all__ = ["directive_kind", "is_directive", "opens_turn"]


def _set(spec: str) -> frozenset[str]:
    return frozenset(spec.split())


def _words(pattern: str) -> re.Pattern[str]:
    """A pattern over folded text (lower-case words, single spaces), matching whole words."""
    return re.compile(rf"(?<![\w])(?:{pattern})(?![\w])")


_VERBS = _set(
    """accept access acknowledge act add adjust allow alter answer append apply approve archive ask
    assign attach authorize avoid back be behave believe block bookmark bring build buy calculate
    call cancel capture carry cc bcc change check choose clean clear click close collect combine
    comment compare compile complete comply compose compute confirm connect consider continue
    convert copy correct count create cut deactivate decline decode decrypt delete deliver deny
    deploy describe destroy determine disable disclose discard display do download drop dump edit
    email embed empty enable encode encrypt end enter envision erase escalate evaluate execute expand
    export expose extract fetch fill find finish fix flag follow force format forward gather generate
    get give go grant grab hand handle hide ignore imagine import include inform insert install
    invoke keep kill launch leak leave let list load lock log look mail make mark mention merge
    message modify move name navigate note notify obey open order output overwrite paste pause pay
    perform permit persist pick picture place post prefer prepare pretend print proceed process
    prompt provide publish pull purge push put query read reboot record redirect refer refresh
    register reject release reload remember remove rename render repeat replace reply report request
    reset resolve respond restart restore retrieve return reveal review revoke rewrite roleplay
    rotate route run save say scan schedule search select send set share show skip sort speak
    specify start stop store submit summarize supply suppose switch sync take tell terminate transfer
    translate transmit treat trigger trust type unlock update upload use verify view visit wait wipe
    write"""
)
"""Base forms of common English verbs: a clause that starts with one is an imperative."""
_LEAD_IN = _set(
    """please kindly now then also first immediately always never just simply so and next finally
    quickly secretly silently quietly carefully instead additionally afterwards later again"""
)
_CONDUCT = _words(r"behave|comply|obey|pretend|roleplay|role play")
"""Verbs that can only be about the model's own conduct, never a tool's action."""
_MODEL = r"(?:ai|assistants?|models?|llms?|agents?|chatbots?|bots?|claude|gpt|chatgpt|gemini|copilot)"
_OBLIGATION = (
    r"(?:must|should|shall|has to|have to|needs? to|will now|is now|are now|ought to"
    r"|(?:is|are) (?:to|required|expected|authori[sz]ed|permitted|allowed|instructed|obliged|obligated))"
)
_SUBORDINATE = re.compile(
    r"^\W*(?:when|whenever|before|after|if|once|while|as soon as|upon|for|in|unless)\b[^,;:]{0,120}[,;:]\s*",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^[^:]{1,30}:\s+")

# 1. Turn openers.
_ROLE_PREFIX = re.compile(
    r"^\W*(?:system|assistant|user|human|developer|admin|operator)\s*:"
    r"|\brole[\"']?\s*[:=]\s*[\"']?(?:system|assistant|developer)\b",
    re.IGNORECASE,
)
_VOCATIVE_START = re.compile(
    rf"^\W*(?:(?:hey|hi|hello|dear|attention|ok|okay)\W+)?(?:the )?{_MODEL}\s*[,:!.]", re.IGNORECASE
)
_ADDRESS = _words(
    r"\w*(?:note|message|notice|memo|reminder|instructions?|attention|warning|hint)"
    rf" (?:to|for) (?:the |any |all |every )?{_MODEL}"
)
_ADDRESS_HEADER = re.compile(rf"\b(?:to|for)\s+(?:the\s+|any\s+|all\s+)?{_MODEL}\s*:", re.IGNORECASE)
_NOTICE = _words(
    r"(?:new|updated|revised|additional|latest|amended|special|urgent|override)"
    r" (?:rules?|instructions?|polic(?:y|ies)|directives?|guidelines?|orders|mandate)"
    r"|(?:operator|system|admin|administrator|developer|host|platform|security|compliance|moderator"
    r"|openai|anthropic|root)"
    r" (?:notice|note|message|update|override|alert|announcement|directive|instructions?|mandate|orders?)"
    r"|(?:message|note|notice|instructions?|update|memo|directive|orders?) from (?:the |your )?(?:\w+ )?"
    r"(?:operator|system|admin|administrator|developer|host|platform|owner|creator|maintainers?|anthropic|openai)"
    r"|as (?:the|your) (?:operator|system|admin|administrator|developer|owner|creator)"
)
# 2-4. Meta-tools, a change of regime, a dismissal of the model's instructions.
_META_TOOLS = re.compile(r"execute[\W_]{0,2}tool|search[_\-.]tools|toolcrib__", re.IGNORECASE)
_META_WORDS = _words(r"execute tools?")
_REGIME = _words(
    r"from now on|from this (?:point|moment|time) (?:on|onwards?|forward)|henceforth|going forward"
    r"|effective immediately|for the rest of (?:this|the) (?:conversation|session|chat)"
    r"|until (?:told|instructed) otherwise|for all future (?:requests|responses|messages|answers)"
)
_DISMISS = _words(
    r"ignor\w*|disregard\w*|forget\w*|set aside|put aside|lay aside|drop|abandon|discard|override\w*"
    r"|overrule\w*|supersed\w*|replac\w*|void|cancel\w*|bypass\w*|circumvent\w*|stop following"
    r"|do not follow|don t follow|no longer|obsolete|outdated|invalid|deprecated|revoked|suspended|lifted"
    r"|not apply"
)
_INSTRUCTIONS = _words(
    r"(?:your|its|the model s|the assistant s|system|hidden|secret|original|initial|previous|prior|earlier"
    r"|above|preceding|former|real|true|old|current|existing|default|internal|all|any|these|those|other)"
    r"(?: \w+){0,2} (?:instructions?|guidance|guidelines?|directives?|prompts?|system messages?|programming"
    r"|training|persona|safeguards|guardrails)"
    r"|(?:your|its|system|hidden|secret|original|initial|previous|prior|earlier|above|preceding|former)"
    r" (?:rules|configuration|config|polic(?:y|ies)|context|memory|constraints|restrictions|orders|directions"
    r"|limitations|principles)"
    r"|(?:what )?you (?:were|have been|are) (?:told|instructed|advised|asked|programmed|trained|given)"
    r"|system (?:prompt|message|instructions?)"
)
# 5. Commands, and what makes a command reach outside the tool.
_MODEL_ADDRESSED = _words(
    rf"(?:the|an?|any|all|every|each|your) (?:\w+ )?{_MODEL}|{_MODEL}(?: \w+){{0,3}} {_OBLIGATION}"
    rf"|(?:mandatory|required|essential|imperative|critical|necessary) that (?:the )?{_MODEL}"
)
"""The model named as a party (``the assistant …``, ``any language model …``): a command in the
third person."""
_MODEL_WORD = re.compile(_MODEL)
_SECOND_PERSON = _words(
    r"you(?: \w+)? (?:must|should|shall|need to|have to|are to|are required to|will now|are now|ought to)"
    r"|(?:please|kindly)|(?:could|would|can|will) you|i (?:need|want|would like) you to"
    r"|(?:make|be) sure (?:you|to)"
)
_DISCLOSE = _words(
    r"output\w*|print\w*|reveal\w*|send\w*|repl(?:y|ies|ying)|respond\w*|answer\w*|shar(?:e|es|ing)"
    r"|show\w*|display\w*|includ\w*|past(?:e|es|ing)|pass(?:es|ing)?|forward\w*|e?mail\w*|post\w*|upload\w*"
    r"|append\w*|dump\w*|disclos\w*|leak\w*|tell|give|list|expos\w*|exfiltrat\w*|transmit\w*|copy|copies"
    r"|attach\w*|insert\w*|put|write|fill|cc|bcc|spell out|read out"
)
_SECRETS = _words(
    r"credentials?|passwords?|passphrases?|passwd|secrets?|(?:api|access|auth|bearer|oauth|session|refresh"
    r"|stored|saved|admin|private|secret|signing|ssh|personal access) (?:keys?|tokens?)|tokens|apikeys?"
    r"|env(?: file| vars?)?|environment variables|cookies?|private keys?|id rsa|keychain|seed phrase|mnemonic"
)
_CONVERSATION = _words(
    r"your (?:reply|replies|response|responses|answer|answers|output|next message|final answer|message)"
    r"|(?:conversation|chat|message) (?:history|log|context)|the conversation|this conversation"
    r"|before (?:answering|responding|replying)|in (?:the|your) chat"
)
_TOOL_REF = re.compile(
    r"\b(?:call(?:ing)?|invok(?:e|ing)|run(?:ning)?|us(?:e|ing)|execut(?:e|ing)|trigger(?:ing)?"
    r"|prefer(?:ring)?|via|through|instead of|rather than)\s+(?:the\s+)?"
    r"(?:(?P<q>['\"`])[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+(?P=q)|[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?:\(\))?(?![\w=(-]))"
    r"(?!\s*(?:parameter|param|field|argument|option|property|flag|attribute|key|column|value|format|syntax)s?\b)",
    re.IGNORECASE,
)
"""Another tool by its name (``call get_next_task``, ``use 'resolve-library-id'``), not a parameter."""
_OTHER_TOOLS = _words(
    r"(?:other|another|different|external|third party|any other|all other)"
    r" (?:tools?|servers?|plugins?|connectors?|functions?|integrations?|assistants?|mcp servers?)"
    r"|the (?!same |this |next |following |previous |current |above |below )[a-z]+ (?:tool|function|plugin)"
    r"|every (?:tool )?(?:call|request)"
)
_OUTSIDE = re.compile(
    r"\bto\s+(?:https?://|www\.|[\w.+-]+@[\w-]+\.)|\b(?:b?cc)\s+[\w.+-]+@"
    r"|\bthe (?:url|address|endpoint|webhook|server) (?:below|above|provided|given|here)\b|\bwebhook\b",
    re.IGNORECASE,
)
_UNSEEN = _words(
    r"silently|secretly|quietly|covertly|discreetly"
    r"|without (?:asking|telling|informing|notifying|confirming|alerting|letting)"
    r"|without (?:the )?(?:user s )?(?:knowledge|confirmation|noticing)"
    r"|skip(?:ping)? (?:the )?(?:user )?confirmation"
    r"|(?:do not|don t|never) (?:tell|inform|notify|alert|mention|show)"
    r"|hid(?:e|es|den|ing) (?:\w+ ){0,3}from (?:the )?(?:user|human|operator)s?"
    r"|keep (?:\w+ ){0,3}(?:hidden|secret)"
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
    """An imperative (a clause that starts with a verb), ``you must``, ``please``, or the model as a party."""
    for n, text in enumerate(_clauses(sentence)):
        words = (folded if n == 0 else fold(text)).split()
        while words and words[0] in _LEAD_IN:
            words = words[1:]
        if words[:2] in (["do", "not"], ["don", "t"]):
            words = words[2:]
        if words and (words[0] in _VERBS or _MODEL_WORD.fullmatch(words[0])):
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
