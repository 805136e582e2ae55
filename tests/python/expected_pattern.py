"""What the profile of tests/apps/pattern.* must contain, computed for n ranks."""

from __future__ import annotations

from collections import Counter

Key = tuple[int, str, int]  # (rank, function, bucket low bound)


def bucket_low(nbytes: int) -> int:
    return 0 if nbytes == 0 else 1 << (nbytes.bit_length() - 1)


def calls(n: int) -> tuple[Counter[Key], Counter[Key]]:
    """(calls, bytes) per (rank, function, size bucket); MPI_Init* and Finalize left out."""
    c: Counter[Key] = Counter()
    b: Counter[Key] = Counter()

    def add(rank: int, fn: str, count: int, size: int) -> None:
        c[(rank, fn, bucket_low(size))] += count
        b[(rank, fn, bucket_low(size))] += count * size

    for r in range(n):
        add(r, "MPI_Send", 10, 8)
        add(r, "MPI_Recv", 10, 8)
        add(r, "MPI_Sendrecv", 5, 1000)
        add(r, "MPI_Irecv", 2, 65536)
        add(r, "MPI_Isend", 2, 65536)
        add(r, "MPI_Waitall", 2, 0)
        add(r, "MPI_Bcast", 3, 4)
        add(r, "MPI_Allreduce", 5, 8)
        add(r, "MPI_Barrier", 1, 0)
        add(r, "MPI_Alltoall", 1, 16)
        add(r, "MPI_Gather", 1, 8)
        add(r, "MPI_Reduce", 1, 4)
        add(r, "MPI_Comm_split", 1, 0)
        add(r, "MPI_Comm_dup", 1, 0)
        add(r, "MPI_Comm_free", 2, 0)
        same_parity = [q for q in range(n) if q % 2 == r % 2]
        if len(same_parity) >= 2 and r == same_parity[0]:
            add(r, "MPI_Send", 1, 100)
        if len(same_parity) >= 2 and r == same_parity[1]:
            add(r, "MPI_Recv", 1, 100)
    return c, b


def matrices(n: int) -> dict[str, list[list[int]]]:
    """Messages and bytes per (sender, receiver), point-to-point and collective."""
    z = [[0] * n for _ in range(n)]
    m = {k: [row[:] for row in z] for k in ("p2p_msgs", "p2p_bytes", "coll_msgs", "coll_bytes")}

    def p2p(s: int, d: int, msgs: int, nbytes: int) -> None:
        m["p2p_msgs"][s][d] += msgs
        m["p2p_bytes"][s][d] += nbytes

    def coll(s: int, d: int, msgs: int, nbytes: int) -> None:
        if s != d:
            m["coll_msgs"][s][d] += msgs
            m["coll_bytes"][s][d] += nbytes

    for r in range(n):
        p2p(r, (r + 1) % n, 10 + 5 + 2, 80 + 5000 + 2 * 65536)
    for parity in (0, 1):
        group = [q for q in range(n) if q % 2 == parity]
        if len(group) >= 2:
            p2p(group[0], group[1], 1, 100)
    for s in range(n):
        for d in range(n):
            if s == 0:
                coll(s, d, 3, 12)  # bcast from 0
            coll(s, d, 5, 40)  # allreduce on world (4) and on the duplicate (1)
            coll(s, d, 1, 16)  # alltoall
            if d == n - 1:
                coll(s, d, 1, 8)  # gather to n-1
            if d == 1:
                coll(s, d, 1, 4)  # reduce to 1
    return m
