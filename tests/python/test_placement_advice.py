"""`isthmus profile advise`'s choice (python/isthmus/profile/advise.py) on traffic
matrices made up here: the bytes it leaves crossing against every placement of the same
slots, and the cases the paper names (a vertex-cut set that fits the zipper slots)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import PLATFORMS
from isthmus.config import platform as platform_mod
from isthmus.config.topology import Platform
from isthmus.profile import advise

ZIPPER = PLATFORMS / "zipper.toml"


def ranked(per_cluster_hosts: int, zipper_ranks: int) -> Platform:
    return platform_mod.load(
        Path(ZIPPER),
        [
            f"clusters.left.hosts={per_cluster_hosts}",
            f"clusters.right.hosts={per_cluster_hosts}",
            f"zippers.gate.ranks_per_host={zipper_ranks}",
        ],
    )


def profile_of(p2p: list[list[int]]) -> dict[str, Any]:
    n = len(p2p)
    return {"nranks": n, "traffic": {"p2p": {"bytes": p2p}, "coll": {"bytes": [[0] * n] * n}}}


def best_possible(problem: advise._Problem, n: int, k: int) -> int:
    """The fewest bytes crossing over every choice of the k ranks on the zipper host."""
    return min(
        problem.crossing(problem.placement(set(c))) for c in itertools.combinations(range(n), k)
    )


def test_a_vertex_cut_set_that_fits_leaves_nothing_crossing() -> None:
    """Ranks 0-1 (left) and 2-3 (right) talk only through ranks 1 and 2: on the zipper
    host they carry everything across, and no byte crosses both networks."""
    plat = ranked(2, 2)  # ranks 0, 1 left; 2, 3 right; 4, 5 on gate0 (counted in left)
    m = [[0] * 6 for _ in range(6)]
    for a, b, nbytes in ((0, 1, 500), (1, 2, 10_000), (2, 3, 500), (4, 0, 50), (5, 3, 50)):
        m[a][b] = nbytes
    a = advise.advise(profile_of(m), plat)
    assert a.before == 10_000  # 1-2 crosses; 4 and 5 run on gate0: their bytes do not
    # one of 1 and 2 moves to gate0, the rank it pushes off goes where its peer is, and the
    # other stays: zero bytes with the fewest moves
    on_gate = {r for r, s in enumerate(a.slots) if s.host == "gate0"}
    assert a.after == 0 and len(on_gate & {1, 2}) == 1 and len(a.moved) == 2, a
    assert len(a.cover) == 2  # 1 or 2, and 5 or 3 (5 counts in left: 5-3 is cross-site)
    assert sorted(s.host for s in a.slots) == sorted(s.host for s in plat.default_slots())


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_advice_is_the_best_placement_of_the_slots(data: st.DataObject) -> None:
    """Exact for small jobs: nothing placed better, never worse than the profiled run."""
    hosts, k = data.draw(st.sampled_from([(1, 1), (2, 1), (2, 2), (3, 2)]))
    plat = ranked(hosts, k)
    n = plat.total_ranks
    cells = st.integers(min_value=0, max_value=1000)
    m = data.draw(st.lists(st.lists(cells, min_size=n, max_size=n), min_size=n, max_size=n))
    a = advise.advise(profile_of(m), plat)
    problem = advise._Problem(advise._weights(profile_of(m)), plat, plat.default_slots())
    assert a.after == best_possible(problem, n, k) <= a.before
    assert a.after == problem.crossing(a.slots)
    assert sorted(s.host for s in a.slots) == sorted(s.host for s in plat.default_slots())


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_past_the_exact_limit_greedy_and_swaps_never_lose(data: st.DataObject) -> None:
    """With the exhaustive search off, the greedy cover and swaps still leave no more
    crossing than the profiled run, and fill every slot once."""
    plat = ranked(3, 2)
    n = plat.total_ranks
    cells = st.integers(min_value=0, max_value=1000)
    m = data.draw(st.lists(st.lists(cells, min_size=n, max_size=n), min_size=n, max_size=n))
    limit = advise.EXACT_LIMIT
    advise.EXACT_LIMIT = 0
    try:
        a = advise.advise(profile_of(m), plat)
    finally:
        advise.EXACT_LIMIT = limit
    assert a.after <= a.before and "swaps" in a.method
    assert sorted(s.host for s in a.slots) == sorted(s.host for s in plat.default_slots())
