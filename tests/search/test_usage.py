"""R-5.12 the usage channel: what it keeps, how much one member can weigh, and what it may never do."""

from __future__ import annotations

import numpy as np
import pytest
from tests.search.conftest import doc

from toolcrib.search import SearchIndex
from toolcrib.search.gate import PAIR_FEATURES, Evidence, pair_features
from toolcrib.search.semantic import load_encoder
from toolcrib.search.usage import (
    FULL_WEIGHT,
    HALF_LIFE_DAYS,
    MAX_EXAMPLES,
    MAX_PER_MEMBER,
    MEMBER_SHARE,
    PastSearch,
    Usage,
    UsageChannel,
)

DAY = 86_400.0


def _unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _past(member: str, at: float = 0.0, seed: int = 0) -> PastSearch:
    return PastSearch(_unit(seed), member, at)


def test_r5_12_one_member_makes_at_most_a_fixed_share_of_a_tools_evidence() -> None:
    channel = UsageChannel()
    channel.learn("a__t", [_past("ann", at=i, seed=i) for i in range(MAX_PER_MEMBER)], now=100.0)
    _, mass = channel.means(_unit(0), {"a__t": 0}, 1)
    assert mass[0] == pytest.approx(MEMBER_SHARE)
    assert MEMBER_SHARE < 0.5
    members = [_past(f"m{i}", seed=i) for i in range(int(FULL_WEIGHT))]
    channel.learn("a__t", members, now=0.0)
    assert channel.means(_unit(0), {"a__t": 0}, 1)[1][0] == pytest.approx(1.0)


def test_r5_12_examples_are_bounded_per_tool_and_per_member_newest_kept() -> None:
    channel = UsageChannel()
    flood = [_past("ann", at=float(i), seed=i) for i in range(40)]
    channel.learn("a__t", flood, now=100.0)
    kept = channel.examples("a__t")
    assert len(kept) == MAX_PER_MEMBER
    assert sorted(p.at for p in kept) == [float(i) for i in range(40 - MAX_PER_MEMBER, 40)]
    many = [_past(f"m{i % 20}", at=float(i), seed=i) for i in range(200)]
    channel.learn("a__t", many, now=300.0)
    kept = channel.examples("a__t")
    assert len(kept) == MAX_EXAMPLES
    assert min(p.at for p in kept) == 200 - MAX_EXAMPLES


def test_r5_12_evidence_decays_with_age() -> None:
    channel = UsageChannel()
    now = 1_000 * DAY
    channel.learn("a__t", [_past("ann", at=now - HALF_LIFE_DAYS * DAY)], now=now)
    assert channel.means(_unit(0), {"a__t": 0}, 1)[1][0] == pytest.approx(0.5 / FULL_WEIGHT)


def test_r5_12_forget_one_tool_or_every_tool() -> None:
    channel = UsageChannel()
    channel.learn("a__t", [_past("ann")], now=0.0)
    channel.learn("a__u", [_past("bob")], now=0.0)
    channel.forget("a__t")
    assert not channel.examples("a__t")
    assert channel.examples("a__u")
    channel.forget()
    assert len(channel) == 0
    assert not channel


def test_r5_12_a_tool_without_past_searches_gets_neutral_evidence() -> None:
    channel = UsageChannel()
    channel.learn("a__t", [_past("ann", seed=1)], now=0.0)
    usage = channel.evidence(
        _unit(1), {"a__t": 0, "a__u": 1}, ["a__t", "a__u"].__getitem__, 2, lambda mean: np.arange(2)
    )
    assert usage.best[0] > 0
    assert usage.mass[0] > 0
    assert usage.best[1] == usage.mean[1] == usage.mass[1] == 0.0


def test_r5_12_a_tools_fit_is_how_near_its_past_searches_are_to_its_own_text() -> None:
    """#31: the mean cosine of a tool's past searches to its own text, beside the nearest past
    search, so that a request near a past search but far from the tool's text reads apart from a
    paraphrase of it; a tool without past searches, or without a text vector, has none."""
    channel = UsageChannel()
    searches = [_past("ann", seed=1), _past("bob", seed=2)]
    channel.learn("a__t", searches, now=0.0)
    texts = np.stack([_unit(3), _unit(4)])
    usage = channel.evidence(
        _unit(1),
        {"a__t": 0, "a__u": 1},
        ["a__t", "a__u"].__getitem__,
        2,
        lambda mean: np.arange(2),
        None,
        texts,
    )
    expected = float(np.mean([float(p.vector @ texts[0]) for p in searches]))
    assert usage.fit[0] == pytest.approx(expected, abs=1e-5)
    assert usage.fit[1] == 0.0
    blind = channel.evidence(_unit(1), {"a__t": 0}, ["a__t"].__getitem__, 1, lambda mean: np.arange(1))
    assert blind.fit[0] == 0.0


def test_r5_12_a_tools_centroid_is_where_its_past_searches_point_together() -> None:
    """#31: the cosine to the unit mean of a tool's past searches (weighted as the evidence is),
    read beside the nearest one: a request between two past searches is nearer their centroid
    than either of them; a tool without past searches has none."""
    channel = UsageChannel()
    first, second = _unit(1), _unit(2)
    channel.learn("a__t", [PastSearch(first, "ann", 0.0), PastSearch(second, "bob", 0.0)], now=0.0)
    between = (first + second) / np.linalg.norm(first + second)
    usage = channel.evidence(
        between.astype(np.float32),
        {"a__t": 0, "a__u": 1},
        ["a__t", "a__u"].__getitem__,
        2,
        lambda m: np.arange(2),
    )
    assert usage.centroid[0] == pytest.approx(1.0, abs=1e-5)
    assert usage.centroid[0] > usage.best[0]
    assert usage.centroid[1] == 0.0


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    encoder, reason = load_encoder()
    assert encoder is not None, reason
    index = SearchIndex(encoder=encoder)
    index.replace_account(
        "ops",
        [
            doc("ops", "create_issue", "Create an issue in the tracker with a title and a body."),
            doc("ops", "post_message", "Post a message to a channel."),
            doc("ops", "get_invoice", "Fetch an invoice by its number."),
            doc("ops", "archive_project", "Archive a project so that it no longer shows in lists."),
        ],
    )
    return index


def _learn(index: SearchIndex, tool: str, phrasing: str, members: int) -> None:
    vector = index.encode([index.encoding_text(phrasing)])[0]
    index.learn(tool, [PastSearch(vector, f"m{i}", 0.0) for i in range(members)], now=0.0)


def test_r5_12_learned_phrasing_finds_the_tool_people_ran(index: SearchIndex) -> None:
    phrasing = "tuck away the finished initiative"
    cold = [h.public_name for h in index.search(phrasing, limit=3).hits]
    assert cold[:1] != ["ops__archive_project"], cold
    try:
        _learn(index, "ops__archive_project", phrasing, int(FULL_WEIGHT))
        learned = index.search(phrasing, limit=3)
        assert [h.public_name for h in learned.hits][:1] == ["ops__archive_project"]
        hidden = index.search(phrasing, limit=3, visible=lambda name: name != "ops__archive_project")
        assert "ops__archive_project" not in [h.public_name for h in hidden.hits]
    finally:
        index.forget()


def test_r5_12_usage_never_outranks_an_exact_name_match(index: SearchIndex) -> None:
    try:
        _learn(index, "ops__post_message", "create issue", int(FULL_WEIGHT))
        assert [h.public_name for h in index.search("create issue").hits][:1] == ["ops__create_issue"]
        assert [h.public_name for h in index.search("create_issue").hits][:1] == ["ops__create_issue"]
    finally:
        index.forget()


def test_r5_12_a_request_far_from_every_past_search_is_decided_as_without_history(
    index: SearchIndex,
) -> None:
    """#31: one ranker and one gate; the usage channel only adds evidence where a past search is
    nearer the request than its tool's own text, so elsewhere nothing changes, to the last digit
    (before #31 a second set of models decided any request near a learned tool)."""
    query = "create an issue in the tracker"
    cold = index.evidence(query)
    assert cold is not None
    far = -index.encode([index.encoding_text(query)])[0]  # as far from the request as can be
    try:
        index.learn("ops__get_invoice", [PastSearch(far, f"m{i}", 0.0) for i in range(3)], now=0.0)
        warm = index.evidence(query)
        assert warm is not None
        assert warm.usage is not None
        assert warm.usage.mass[index.slot("ops__get_invoice")] > 0  # learned, and read
        before, after = index.gate.decide(cold), index.gate.decide(warm)
        assert before is not None
        assert after is not None
        assert after.probability == before.probability
        assert after.slots.tolist() == before.slots.tolist()
        assert after.ranked.tolist() == before.ranked.tolist()
    finally:
        index.forget()


def _evidence(cosine: list[float], best: list[float], mass: list[float]) -> tuple[Evidence, np.ndarray]:
    n = len(cosine)
    zeros = np.zeros(n)
    usage = Usage(best=np.array(best), mean=zeros, mass=np.array(mass), fit=zeros, centroid=zeros)
    evidence = Evidence(
        score=zeros,
        share=zeros,
        name_share=zeros,
        name_words=zeros,
        label=zeros,
        cosine=np.array(cosine),
        cosine_mean=0.2,
        cosine_std=0.1,
        live=np.ones(n, dtype=bool),
        terms=3,
        unmatched=0.0,
        usage=usage,
    )
    return evidence, np.arange(n, dtype=np.int64)


def _typical(cosine: list[float], best: list[float], mass: list[float]) -> list[float]:
    evidence, slots = _evidence(cosine, best, mass)
    column = pair_features(evidence, slots, "relative")[:, PAIR_FEATURES.index("usage_typical")]
    return [round(float(v), 6) for v in column]


def test_r5_12_a_sibling_lifted_as_much_as_every_learned_tool_gains_nothing_on_an_unlearned_one() -> None:
    """#31 case b: the request's right tool (slot 0) has no history; its twenty siblings do, and
    each of their past searches stands 0.2 above its own text, as every learned tool's does for
    this request. None of them is lifted above the typical, so none gains on the right tool; one
    whose past searches stand no higher than its text falls behind it (its column is below zero)."""
    cosine = [0.6] + [0.55] * 20 + [0.5]
    best = [0.0] + [0.75] * 20 + [0.5]
    mass = [0.0] + [1.0] * 21
    column = _typical(cosine, best, mass)
    assert column[0] == 0.0
    assert all(v == pytest.approx(0.0, abs=1e-9) for v in column[1:21])
    assert column[21] < 0.0


def test_r5_12_with_few_tools_learned_the_typical_lift_is_none_and_the_column_is_the_lift() -> None:
    """When most of the best candidates have no history (an organization that uses a few tools:
    here one of twenty), what a candidate typically shows is no lift, and the learned tool's column
    is its plain lift times its mass; with no past search nearer than its text the column is zero
    everywhere."""
    cosine = [0.6 - 0.01 * i for i in range(20)]
    lifted = [0.0, 0.89] + [0.0] * 18  # 0.3 above its text (0.59)
    one = [0.0, 0.5] + [0.0] * 18
    assert _typical(cosine, lifted, one) == [0.0, 0.15] + [0.0] * 18
    assert _typical(cosine, [0.0, 0.3] + [0.0] * 18, [0.0, 1.0] + [0.0] * 18) == [0.0] * 20
