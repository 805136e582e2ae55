"""The P-LogP broadcast model and its optimizer (Kielmann, Bal, Gorlatch: "Bandwidth-
efficient collective communication for clustered wide area systems", sections 2-3).

A broadcast of M bytes is split into k = ceil(M/m) segments of m bytes and sent down a
tree of degree d and height h. Its completion time is T = (k-1) gamma + lambda, with the
paper's upper bounds

    gamma  = max(g(m), or(m) + d s(m))      (or(m) only when the tree has inner nodes)
    lambda = h ((d-1) s(m) + r(m))

per layer. In the LAN layer s = g_l and r = L_l + g_l; in the WAN layer a coordinator's
consecutive sends go to different wide-area links, so s_w = max(g_l, os_w) and r_w = L_w +
g_w. The two-layer broadcast runs a WAN tree between the clusters' coordinators and a LAN
tree in each cluster, either one after the other (sequential) or pipelined per segment:
T = (k-1) gamma + lambda_w + lambda_l with gamma = max(g_w, or_w + d_w s_w + d_l s_l).

The optimizer is the paper's heuristic: segment sizes m = ceil(M/2^i) for every i, then
hill climbing on the segment count k (k-5, k-1, k+1, k+5) until nothing improves; for each
m only tree degrees from ceil(g/s) upward where the height drops (and, in the LAN layer of
the pipelined broadcast, degrees up to gamma'/s_l). src/model/plogp_model.c is the same
algorithm in C, inside libisthmus; tests check that both choose alike. All times are
microseconds, sizes bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from isthmus.model.plogp import LinkClass, Params

HILL_STEPS = (-5, -1, 1, 5)
NO_LINK = LinkClass(0.0, (0,), (0.0,), (0.0,), (0.0,))  # a class that costs nothing


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def tree_height(p: int, d: int) -> int:
    """The minimal height of a tree of p nodes and degree d: min h with sum d^i >= p."""
    h, reach, level = 0, 1, 1
    while reach < p:
        level *= d
        reach += level
        h += 1
    return h


@dataclass(frozen=True)
class Layer:
    """The P-LogP functions one layer's tree uses."""

    g: Callable[[float], float]
    s: Callable[[float], float]
    r: Callable[[float], float]
    or_: Callable[[float], float]


def lan_layer(lan: LinkClass) -> Layer:
    return Layer(lan.g, lan.g, lan.r, lan.or_at)


def wan_layer(wan: LinkClass, lan: LinkClass) -> Layer:
    return Layer(wan.g, lambda m: max(lan.g(m), wan.os(m)), wan.r, wan.or_at)


@dataclass(frozen=True)
class Shape:
    """A broadcast's shape and its predicted completion time."""

    time: float
    segment: int  # m, bytes
    segments: int  # k
    degree: int = 0  # WAN layer (or the single layer)
    height: int = 0
    lan_degree: int = 0  # two-layer only
    lan_height: int = 0
    gamma: float = 0.0
    gamma_bound: str = ""  # "gap" or "forwarding": which term bounds gamma


def single_time(layer: Layer, p: int, d: int, m: int, big_m: int) -> tuple[float, float, str]:
    """(T, gamma, what bounds gamma) of a single-layer tree of degree d over p nodes."""
    if p <= 1:
        return 0.0, 0.0, "gap"
    h = tree_height(p, d)
    k = ceil_div(big_m, m)
    gap = layer.g(m)
    work = (layer.or_(m) if h >= 2 else 0.0) + d * layer.s(m)
    gamma = gap if gap >= work else work
    lam = h * ((d - 1) * layer.s(m) + layer.r(m))
    return (k - 1) * gamma + lam, gamma, "gap" if gap >= work else "forwarding"


def degrees(p: int, start: int, stop: int) -> Iterator[int]:
    """Degrees from start (clamped to [1, p-1]) up to stop, each only where the height of a
    p-node tree drops: a degree in between cannot be faster."""
    if p <= 1:
        yield 0
        return
    first = min(max(start, 1), p - 1)
    last = tree_height(p, first)
    yield first
    for d in range(first + 1, min(stop, p - 1) + 1):
        h = tree_height(p, d)
        if h < last:
            last = h
            yield d


def first_degree(layer: Layer, m: int) -> int:
    """ceil(g(m)/s(m)): fewer successors would leave bandwidth unused."""
    s = layer.s(m)
    return math.ceil(layer.g(m) / s) if s > 0 else 1


def every_degree(p: int) -> range:
    """All degrees of a p-node tree (the exhaustive search's; 0 alone when p <= 1)."""
    return range(1, p) if p > 1 else range(0, 1)


def best_single_for(layer: Layer, p: int, m: int, big_m: int, every: bool = False) -> Shape:
    best: Shape | None = None
    for d in every_degree(p) if every else degrees(p, first_degree(layer, m), p - 1):
        t, gamma, bound = single_time(layer, p, d, m, big_m)
        if best is None or t < best.time:
            best = Shape(t, m, ceil_div(big_m, m), d, tree_height(p, d), 0, 0, gamma, bound)
    assert best is not None
    return best


def pipelined_time(
    wan: Layer, lan: Layer, pw: int, pl: int, dw: int, dl: int, m: int, big_m: int
) -> tuple[float, float, str]:
    hw, hl = tree_height(pw, dw), tree_height(pl, dl)
    k = ceil_div(big_m, m)
    gap = wan.g(m)
    work = wan.or_(m) + dw * wan.s(m) + (dl * lan.s(m) if pl > 1 else 0.0)
    gamma = gap if gap >= work else work
    lam_w = hw * ((dw - 1) * wan.s(m) + wan.r(m))
    lam_l = hl * ((dl - 1) * lan.s(m) + lan.r(m)) if pl > 1 else 0.0
    return (k - 1) * gamma + lam_w + lam_l, gamma, "gap" if gap >= work else "forwarding"


def best_pipelined_for(
    wan: Layer, lan: Layer, pw: int, pl: int, m: int, big_m: int, every: bool = False
) -> Shape:
    """The best tree degrees for segment size m; every=True tries all of them."""
    best: Shape | None = None
    for dw in every_degree(pw) if every else degrees(pw, first_degree(wan, m), pw - 1):
        spare = max(wan.g(m) - wan.or_(m) - dw * wan.s(m), lan.s(m))  # gamma'
        sl = lan.s(m)
        top = math.floor(spare / sl) if sl > 0 else pl - 1
        for dl in every_degree(pl) if every else degrees(pl, 1, max(top, 1)):
            t, gamma, bound = pipelined_time(wan, lan, pw, pl, dw, dl, m, big_m)
            if best is None or t < best.time:
                best = Shape(
                    t,
                    m,
                    ceil_div(big_m, m),
                    dw,
                    tree_height(pw, dw),
                    dl,
                    tree_height(pl, dl),
                    gamma,
                    bound,
                )
    assert best is not None
    return best


def optimize(big_m: int, cost: Callable[[int], Shape]) -> Shape:
    """The paper's segment-size heuristic over cost(m)."""
    if big_m <= 1:
        return cost(1)
    best = cost(big_m)
    i = 1
    while True:
        m = ceil_div(big_m, 1 << i)
        cand = cost(m)
        if cand.time < best.time:
            best = cand
        if m == 1:
            break
        i += 1
    k = ceil_div(big_m, best.segment)
    while True:
        step_best = best
        step_k = k
        for dk in HILL_STEPS:
            k2 = k + dk
            if 1 <= k2 <= big_m:
                cand = cost(ceil_div(big_m, k2))
                if cand.time < step_best.time:
                    step_best, step_k = cand, k2
        if step_best is best:
            return best
        best, k = step_best, step_k


def exhaustive(big_m: int, cost: Callable[[int], Shape]) -> Shape:
    """Every distinct segmentation (each m = ceil(M/k)), for comparison with optimize()."""
    best: Shape | None = None
    seen = set()
    k = 1
    while k <= big_m:
        m = ceil_div(big_m, k)
        if m not in seen:
            seen.add(m)
            cand = cost(m)
            if best is None or cand.time < best.time:
                best = cand
        # the next k that gives a smaller m
        k = k + 1 if m <= 1 else max(k + 1, ceil_div(big_m, m - 1))
    assert best is not None
    return best


Search = Callable[[int, Callable[[int], Shape]], Shape]


def best_single(
    layer: Layer, p: int, big_m: int, search: Search = optimize, every: bool = False
) -> Shape:
    """The best segmented tree of one layer: by the heuristic, or by exhaustive search
    (search=exhaustive; every=True also tries every degree)."""
    return search(big_m, lambda m: best_single_for(layer, p, m, big_m, every))


def best_pipelined(
    wan: Layer,
    lan: Layer,
    pw: int,
    pl: int,
    big_m: int,
    search: Search = optimize,
    every: bool = False,
) -> Shape:
    """The best pipelined two-layer broadcast, searched as best_single is."""
    return search(big_m, lambda m: best_pipelined_for(wan, lan, pw, pl, m, big_m, every))


# ---------------------------------------------------------------------------------------
# The broadcasts `isthmus model predict` compares


def binomial_time(layer: Layer, p: int, m: int) -> float:
    """One unsegmented message down a binomial tree (as MPI libraries send it): each node
    sends to its children in order, the biggest subtree first, one s(m) apart."""
    arrival = [0.0] * p
    for v in range(p):  # a parent (v minus its lowest bit) comes before its children
        low = v & -v if v else 1 << p.bit_length()
        j = 0
        for i in reversed(range(p.bit_length())):
            if (1 << i) < low and v + (1 << i) < p:
                arrival[v + (1 << i)] = arrival[v] + j * layer.s(m) + layer.r(m)
                j += 1
    return max(arrival)


@dataclass(frozen=True)
class Prediction:
    name: str
    shape: Shape
    layer: str  # what the tree spans


def predict_bcast(params: Params, clusters: list[int], big_m: int) -> list[Prediction]:
    """Predicted broadcasts of big_m bytes on clusters of the given rank counts."""
    # One rank per cluster: no LAN links, so a LAN class need not have been measured.
    lan = params.link("lan") if max(clusters) > 1 or "lan" in params.classes else NO_LINK
    p = sum(clusters)
    m = max(big_m, 1)
    pw, pl = len(clusters), max(clusters)
    out = []
    if pw > 1:
        wan = params.link("wan")
        flat_net = Layer(wan.g, wan.g, wan.r, wan.or_at)  # topology-unaware: all links WAN
        one = "every edge costed as WAN"
    else:
        flat_net, one = lan_layer(lan), "one cluster"
    t, gamma, bound = single_time(flat_net, p, p - 1, m, m)
    out.append(Prediction("flat", Shape(t, m, 1, p - 1, 1, 0, 0, gamma, bound), one))
    binom = binomial_time(flat_net, p, m)
    out.append(Prediction("binomial", Shape(binom, m, 1, 0, tree_height(p, 2)), one))
    out.append(Prediction("optimized", best_single(flat_net, p, m), one))
    if pw > 1:
        w, lnl = wan_layer(params.link("wan"), lan), lan_layer(lan)
        tw, tl = best_single(w, pw, m), best_single(lnl, pl, m)
        seq = Shape(
            tw.time + tl.time,
            tw.segment,
            tw.segments,
            tw.degree,
            tw.height,
            tl.degree,
            tl.height,
            tw.gamma,
            tw.gamma_bound,
        )
        out.append(Prediction("two-layer sequential", seq, f"{pw} clusters, then their LANs"))
        pipe = best_pipelined(w, lnl, pw, pl, m)
        out.append(Prediction("two-layer pipelined", pipe, f"{pw} clusters and their LANs"))
    return out
