"""Field scores of one query term over every tool (SPEC R-5.2, R-5.4, R-5.7).

name: 5 when the term equals a name word, else 3 when one is a prefix of the other (both at
least 3 characters); label: 2 when the term equals a connector or account label word;
description: 1 when the term is a description word, except the R-5.4 words. A term that has no
exact or prefix match anywhere may match vocabulary words by trigram similarity; such a match
scores its similarity times the field score, and counts at that similarity in the floor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from toolcrib.search.postings import EMPTY, Postings, Slots
from toolcrib.search.tokenize import DESCRIPTION_STOP_WORDS, is_cjk

__all__ = ["NAME_EXACT", "NAME_PREFIX", "TermMatch", "match_term"]

NAME_EXACT, NAME_PREFIX, LABEL, DESCRIPTION = 5.0, 3.0, 2.0, 1.0
MIN_PREFIX = 3
TYPO_CANDIDATES = 3
"""At most this many vocabulary words stand in for one mistyped term."""

Vector = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class TermMatch:
    """What one query term earns on each slot."""

    field: Vector  # field sum per slot (typo matches already discounted)
    strength: Vector  # 1.0 exact or prefix, the similarity for a typo match, 0.0 none
    typo: bool  # matched only through trigram similarity
    similar: tuple[str, ...] = ()  # the vocabulary words a mistyped term was matched to, best first

    @property
    def matched(self) -> bool:
        return bool(self.strength.any())


def _cat(arrays: list[Slots]) -> Slots:
    return np.concatenate(arrays) if arrays else EMPTY


def _name_matches(term: str, postings: Postings, prefix: bool) -> tuple[Slots, Slots]:
    exact = postings.name.slots(term)
    if not prefix or len(term) < MIN_PREFIX or not term.isascii():
        return exact, EMPTY
    longer = [postings.name.slots(w) for w in postings.name.with_prefix(term)]
    shorter = [
        postings.name.slots(term[:k]) for k in range(MIN_PREFIX, len(term)) if term[:k] in postings.name
    ]
    return exact, _cat(longer + shorter)


def _fields(terms: list[str], postings: Postings, prefix: bool, norms: tuple[Vector, Vector]) -> Vector:
    size = len(norms[0])
    name = np.zeros(size)
    label = np.zeros(size)
    description = np.zeros(size)
    exact_all: list[Slots] = []
    for term in terms:
        exact, partial = _name_matches(term, postings, prefix)
        name[partial] = NAME_PREFIX
        exact_all.append(exact)
        label[postings.label.slots(term)] = LABEL
        if term not in DESCRIPTION_STOP_WORDS:
            description[postings.description.slots(term)] = DESCRIPTION
    name[_cat(exact_all)] = NAME_EXACT
    return name * norms[0] + label + description * norms[1]


def match_term(
    alternatives: list[str], postings: Postings, norms: tuple[Vector, Vector], *, typo_threshold: float | None
) -> TermMatch:
    """Score a query term (with its synonyms) over every slot.

    ``norms`` are per-slot factors on the name and description scores (1, or less for fields
    longer than average).

    ``typo_threshold`` None disables trigram matching for this term (known app names, values).
    """
    size = len(norms[0])
    field = _fields(alternatives, postings, prefix=True, norms=norms)
    if field.any() or typo_threshold is None or is_cjk(alternatives[0]):
        return TermMatch(field, (field > 0).astype(np.float64), typo=False)
    strength = np.zeros(size)
    similar = postings.vocabulary.similar(alternatives[0], typo_threshold)[:TYPO_CANDIDATES]
    for word, similarity in similar:
        candidate = _fields([word], postings, prefix=False, norms=norms) * similarity
        np.maximum(field, candidate, out=field)
        np.maximum(strength, (candidate > 0) * similarity, out=strength)
    return TermMatch(field, strength, typo=True, similar=tuple(word for word, _ in similar))
