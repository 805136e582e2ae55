"""Which ranks to run on the zipper hosts, from a profile's traffic (`isthmus profile
advise`; docs/zipper.md, "Placement"; zipper-forwarder-mmpi section 2.2).

A message between ranks of two sites crosses both sites' networks through a forwarder,
unless one of the two runs on a zipper host: that rank reaches its own site natively and
the other through the forwarder on its own host, with no network hop on its side. So
the bytes that still cross are those between ranks of different sites of which neither
is on a zipper host, and the ranks to put there are a vertex cover of the cross-site
traffic graph (the paper's vertex-cut set), as far as the zipper hosts' slots go.

How the set is chosen, and why:
- Two sites make the graph bipartite, and König's theorem gives a minimum vertex cover
  from a maximum matching (networkx: Hopcroft-Karp), exactly and in O(E sqrt(V)): the
  fewest ranks that leave no byte crossing, the paper's vertex-cut set. (More sites:
  networkx's 2-approximate weighted cover.) It is printed, and is where the search starts.
- But the zipper hosts' slots are few and always full: a rank moved there pushes the one
  that ran there into the slot it left, in that slot's site, and its bytes may cross
  then. So the cover is not always the answer (nor does it fit, when the slots are fewer:
  then the question is which k ranks cover the most bytes, maximum coverage, NP-hard).
  Every candidate set is therefore scored exactly, pushes included: all k-subsets of the
  ranks when there are at most EXACT_LIMIT of them (exact; jobs up to a few dozen ranks),
  else the best of the cover, the greedy choice (the rank covering most bytes not yet
  covered, (1 - 1/e) of the best coverage) and the profiled placement, improved by swaps
  of one rank in for one out until none gains. A pushed rank takes, of the slots left,
  the one in the site its bytes go to most. When nothing gains, nothing moves.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
from networkx.algorithms import bipartite

from isthmus.config import placement
from isthmus.config.topology import Platform, Slot
from isthmus.errors import UserError

EXACT_LIMIT = 20_000  # k-subsets tried one by one; beyond, greedy and swaps


@dataclass(frozen=True)
class Advice:
    slots: list[Slot]  # every world rank's slot, the advised placement
    before: int  # bytes crossing a forwarder between networks in the profiled run
    after: int  # ... with the advised placement
    total_cross_site: int  # bytes between ranks of different sites, profiled run
    cover: list[int]  # the minimum (or approximate) vertex cover of the cross-site graph
    cover_method: str
    method: str
    moved: list[int]  # world ranks whose slot changes


class _Problem:
    """The profile's traffic on the platform's slots, and the score of a placement."""

    def __init__(self, weights: np.ndarray, platform: Platform, profiled: list[Slot]) -> None:
        self.w = weights  # symmetric: bytes between two ranks, both ways
        self.profiled = profiled
        self.zipper_hosts = {f"{z.name}{i}" for z in platform.zippers for i in range(z.hosts)}
        self.joins = placement.host_clusters(platform)  # the clusters a rank there may join
        groups = platform.sites()
        self.site_of_cluster = {c: i for i, g in enumerate(groups) for c in g}
        self.on_zipper = [s.host in self.zipper_hosts for s in profiled]

    def site(self, slot: Slot) -> int:
        return self.site_of_cluster[slot.cluster]

    def crossing(self, slots: list[Slot]) -> int:
        """Bytes between ranks of different sites, neither on a zipper host."""
        site = np.array([self.site(s) for s in slots])
        free = np.array([s.host not in self.zipper_hosts for s in slots])
        mask = (site[:, None] != site[None, :]) & free[:, None] & free[None, :]
        return int(self.w[mask].sum() // 2)

    def placement(self, chosen: set[int]) -> list[Slot]:
        """Chosen ranks on the zipper slots, the others where they ran: a chosen rank
        takes the zipper slot of a rank not chosen, which takes a cluster slot a chosen
        rank left, the one of the site its bytes go to most."""
        slots = list(self.profiled)
        arriving = sorted(r for r in chosen if not self.on_zipper[r])
        pushed = [r for r, z in enumerate(self.on_zipper) if z and r not in chosen]
        vacated = [self.profiled[r] for r in arriving]
        for r, p in zip(arriving, pushed, strict=True):
            host = self.profiled[p].host
            own = self.profiled[r].cluster  # counted in its own cluster where the zipper joins it
            slots[r] = Slot(host, own if own in self.joins[host] else self.joins[host][0])
        for p in pushed:
            staying = [o for o in range(len(slots)) if o not in pushed]
            best = max(
                range(len(vacated)),
                key=lambda i: sum(
                    int(self.w[p, o])
                    for o in staying
                    if self.site(slots[o]) == self.site(vacated[i])
                ),
            )
            slots[p] = vacated.pop(best)
        return slots


def _weights(profile: dict[str, Any]) -> np.ndarray:
    """Bytes between every pair of ranks, both ways, point-to-point and collective."""
    t = profile["traffic"]
    w = np.array(t["p2p"]["bytes"], dtype=np.int64) + np.array(t["coll"]["bytes"], dtype=np.int64)
    return w + w.T


def _cover(problem: _Problem, nranks: int) -> tuple[list[int], str]:
    """A minimum vertex cover of the cross-site graph (exact for two sites)."""
    g: nx.Graph[int] = nx.Graph()
    site = [problem.site(s) for s in problem.profiled]
    for a in range(nranks):
        for b in range(a + 1, nranks):
            if site[a] != site[b] and problem.w[a, b] > 0:
                g.add_edge(a, b, weight=int(problem.w[a, b]))
    if g.number_of_edges() == 0:
        return [], "no cross-site traffic"
    if len(set(site)) == 2:
        left = {v for v in g if site[v] == site[min(g)]}
        matching = bipartite.hopcroft_karp_matching(g, top_nodes=left)
        cover = bipartite.to_vertex_cover(g, matching, top_nodes=left)
        return sorted(cover), "minimum vertex cover (König: Hopcroft-Karp matching)"
    cover = nx.algorithms.approximation.min_weighted_vertex_cover(g)
    return sorted(cover), "vertex cover (2-approximation: more than two sites)"


def profiled_slots(profile: dict[str, Any], platform: Platform) -> list[Slot]:
    """Where the profiled run's ranks ran (its run section; else the default slots)."""
    placed = profile.get("run", {}).get("platform", {}).get("placement")
    if not placed:
        return platform.default_slots()
    slots = [Slot(h, c) for h, c in zip(placed["hosts"], placed["clusters"], strict=True)]
    if sorted(s.host for s in slots) != sorted(s.host for s in platform.default_slots()):
        raise UserError(
            f"the profiled run placed its ranks on hosts platform {platform.name} does not "
            "have: expected the platform of the profiled run"
        )
    return slots


def advise(profile: dict[str, Any], platform: Platform) -> Advice:
    nranks: int = profile["nranks"]
    if platform.total_ranks != nranks:
        raise UserError(
            f"the profile has {nranks} ranks, platform {platform.name} {platform.total_ranks}: "
            "expected the platform of the profiled run (with its ranks on zipper hosts)"
        )
    k = sum(z.hosts * z.ranks_per_host for z in platform.zippers)
    if k == 0:
        raise UserError(
            f"platform {platform.name} has no ranks on zipper hosts: expected "
            "zippers.NAME.ranks_per_host of 1 or more"
        )
    profiled = profiled_slots(profile, platform)
    problem = _Problem(_weights(profile), platform, profiled)
    cover, how = _cover(problem, nranks)
    before = problem.crossing(profiled)
    site = np.array([problem.site(s) for s in profiled])
    total = int(problem.w[site[:, None] != site[None, :]].sum() // 2)

    def score(chosen: set[int]) -> tuple[int, int]:  # bytes left crossing, then moves
        return problem.crossing(problem.placement(chosen)), len(chosen - set(_now(problem)))

    if math.comb(nranks, k) <= EXACT_LIMIT:
        chosen = set(min(itertools.combinations(range(nranks), k), key=lambda c: score(set(c))))
        method = f"exact: every {k} of the {nranks} ranks scored"
    else:
        seeds = [set(_now(problem))]
        if len(cover) <= k:  # the cover, the slots left over kept by who had them
            rest = [r for r in _now(problem) if r not in cover]
            rest += sorted(set(range(nranks)) - set(cover) - set(rest),
                           key=lambda r: -int(problem.w[r].sum()))  # fmt: skip
            seeds.append(set(cover) | set(rest[: k - len(cover)]))
        candidates = sorted({v for v in range(nranks) if problem.w[v][site != site[v]].sum() > 0})
        chosen = _greedy_and_swaps(problem, candidates, k, score, seeds)
        method = "the best of the cover, the greedy choice and the profiled one, then swaps"
    if score(chosen) >= score(set(_now(problem))):  # nothing gained: nothing moves
        chosen = set(_now(problem))
    slots = problem.placement(chosen)
    moved = [r for r in range(nranks) if slots[r] != profiled[r]]
    return Advice(slots, before, problem.crossing(slots), total, cover, how, method, moved)


def _now(problem: _Problem) -> list[int]:
    """The ranks on zipper hosts in the profiled run."""
    return [r for r, z in enumerate(problem.on_zipper) if z]


def _greedy_and_swaps(
    problem: _Problem, candidates: list[int], k: int, score: Any, seeds: list[set[int]]
) -> set[int]:
    """The best of the seeds and the greedy cover (the rank covering most bytes not yet
    covered, k times), improved by swapping one rank in for one out until none gains."""
    site = np.array([problem.site(s) for s in problem.profiled])
    greedy: set[int] = set()
    for _ in range(min(k, len(candidates))):

        def gain(v: int) -> int:
            others = [u for u in range(len(site)) if u not in greedy and site[u] != site[v]]
            return int(problem.w[v, others].sum())

        greedy.add(max((v for v in candidates if v not in greedy), key=gain))
    greedy |= set(_now(problem)[: k - len(greedy)]) if len(greedy) < k else set()
    chosen = min([*seeds, greedy], key=score)
    best = score(chosen)
    improved = True
    while improved:
        improved = False
        for out, into in itertools.product(sorted(chosen), candidates):
            if into in chosen:
                continue
            trial = (chosen - {out}) | {into}
            s = score(trial)
            if s < best:
                chosen, best, improved = trial, s, True
                break
    return chosen
