"""Lower bounds of bandwidth-bound collectives on a platform of C equal clusters of n
ranks, every pair of clusters joined by its own link (latency L, bandwidth B each way).

The bound of a collective is a cut argument on the wide-area links, whatever the
algorithm: the bytes that must cross into (or out of) one cluster, spread as evenly as
possible over the C - 1 links into it, take at least max_link_bytes / B, after one
latency L. Per link (M = bytes of one rank's block; for Allreduce and Bcast, the vector):

  Bcast      M / (C - 1) into each non-root cluster over each of its links: every cluster
             must receive M and has C - 1 links in (the root cluster must send M out
             over C - 1 links: the same figure). Relaying through other clusters is
             allowed, so it is a third of "each cluster gets M from the root".
  Allgather  n M on every link: a cluster must receive (C - 1) n M over C - 1 links.
  Alltoall   n^2 M on every link: (C - 1) n^2 M must enter each cluster.
  Allreduce  2 M / C on every link: a reduce-scatter and an allgather of the M / C
             pieces each move (C - 1) M / C into a cluster.

`flows` gives the link loads that meet the bound (the pattern tcp_floor's plain-TCP
transfer reproduces); `lower_bound_s` = L + max(flow) / B. docs/collectives.md derives
them in words.
"""

from __future__ import annotations

from isthmus.config.platform import Platform
from isthmus.errors import UserError

BOUNDED = ("bcast", "allgather", "alltoall", "allreduce")


def flows(collective: str, clusters: int, ranks: int, block: int) -> list[list[int]]:
    """bytes[src][dst] between clusters (cluster 0 holds the root) that meet the bound."""
    c, n, m = clusters, ranks, block
    if collective == "bcast":
        per = -(-m // (c - 1))
        return [[per if s != d and d != 0 else 0 for d in range(c)] for s in range(c)]
    per_link = {"allgather": n * m, "alltoall": n * n * m, "allreduce": -(-2 * m // c)}
    if collective not in per_link:
        raise UserError(f"no lower bound for {collective!r}: expected one of {', '.join(BOUNDED)}")
    return [[per_link[collective] if s != d else 0 for d in range(c)] for s in range(c)]


def shape(p: Platform) -> tuple[int, int, float, float]:
    """(C, n, L, B) of a platform of equal clusters joined pairwise by equal links."""
    sizes = {c.ranks for c in p.clusters}
    links = set(p.wan.values())
    if len(sizes) != 1 or len(links) != 1:
        raise UserError(f"{p.path}: lower bounds need equal clusters and equal wide-area links")
    link = links.pop()
    if not link.bandwidth:
        raise UserError(f"{p.path}: lower bounds need a wide-area bandwidth")
    return len(p.clusters), sizes.pop(), link.latency, link.bandwidth


def lower_bound_s(collective: str, p: Platform, block: int) -> float:
    c, n, latency, bandwidth = shape(p)
    most = max(max(row) for row in flows(collective, c, n, block))
    return latency + most / bandwidth
