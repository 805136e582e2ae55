"""The MPI-IO part of a profile (docs/profile.md, "io"): per file, what Darshan's MPI-IO
module reports: opens, reads and writes split into independent, collective and
nonblocking, bytes, time in reads, writes and the other calls, and the access sizes in
power-of-two buckets. Whether a call is collective or nonblocking is in its MPI name."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus.config.units import format_size

# MPI_File_{i?}{read|write}{_at?}{_all|_shared|_ordered?}{_begin|_end?}
_DATA = re.compile(r"MPI_File_(i?)(read|write)(_at)?(_all|_shared|_ordered)?(_begin|_end)?")


@dataclass(frozen=True)
class Access:
    """What a data call is: its operation and its kind."""

    op: str  # "read" or "write"
    collective: bool  # _all, _ordered (and their split forms)
    nonblocking: bool  # MPI_File_iX
    split_end: bool  # X_end: the bytes were counted at X_begin


def access(function: str) -> Access | None:
    """The kind of a data call, or None for the others (open, close, sync, set_view...)."""
    m = _DATA.fullmatch(function)
    if not m:
        return None
    return Access(
        op=m.group(2),
        collective=m.group(4) in ("_all", "_ordered"),
        nonblocking=m.group(1) == "i",
        split_end=m.group(5) == "_end",
    )


@dataclass
class FileSummary:
    file: str
    ranks: set[int] = field(default_factory=set)
    opens: int = 0
    # per op ("read", "write"): independent, collective and nonblocking calls, bytes, time
    independent: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    collective: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    nonblocking: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    bytes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    meta_seconds: float = 0.0
    # (op, bucket low bound) -> accesses, over all ranks
    sizes: dict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))

    def common_sizes(self, op: str, n: int = 2) -> list[tuple[int, int]]:
        """The n most frequent access-size buckets of op: (bucket low bound, accesses)."""
        mine = [(low, c) for (o, low), c in self.sizes.items() if o == op]
        return sorted(mine, key=lambda t: (-t[1], t[0]))[:n]


def files(data: dict[str, Any]) -> list[FileSummary]:
    """Per file, over all ranks, in order of the bytes moved (most first)."""
    io = data.get("io", {})
    out: dict[str, FileSummary] = {}
    for rank, name, function, calls, nbytes, seconds in io.get("calls", {}).get("rows", []):
        f = out.setdefault(name, FileSummary(name))
        f.ranks.add(rank)
        kind = access(function)
        if function == "MPI_File_open":
            f.opens += calls
        if kind is None:
            f.meta_seconds += seconds
            continue
        f.seconds[kind.op] += seconds
        f.bytes[kind.op] += nbytes
        if kind.split_end:
            continue
        if kind.collective:
            f.collective[kind.op] += calls
        else:
            f.independent[kind.op] += calls
        if kind.nonblocking:
            f.nonblocking[kind.op] += calls
    for _rank, name, op, low, count in io.get("access_sizes", {}).get("rows", []):
        out.setdefault(name, FileSummary(name)).sizes[(op, low)] += count
    return sorted(out.values(), key=lambda f: (-(f.bytes["read"] + f.bytes["write"]), f.file))


def show(data: dict[str, Any], console: Console) -> None:
    summary = files(data)
    if not summary:
        return
    t = Table(title="MPI-IO per file (all ranks; calls: independent / collective / nonblocking)")
    for col in (
        "file",
        "ranks",
        "opens",
        "reads",
        "writes",
        "read",
        "written",
        "read s",
        "write s",
        "other s",
        "common access sizes",
    ):
        t.add_column(col, justify="left" if col in ("file", "common access sizes") else "right")
    for f in summary:
        common = [
            f"{op[0]} {format_size(low)}+ x{c}"
            for op in ("read", "write")
            for low, c in f.common_sizes(op)
        ]
        t.add_row(
            f.file,
            str(len(f.ranks)),
            str(f.opens),
            *(
                f"{f.independent[op]} / {f.collective[op]} / {f.nonblocking[op]}"
                for op in ("read", "write")
            ),
            format_size(f.bytes["read"]),
            format_size(f.bytes["write"]),
            f"{f.seconds['read']:.6f}",
            f"{f.seconds['write']:.6f}",
            f"{f.meta_seconds:.6f}",
            ", ".join(common),
        )
    console.print(t)
    dropped = data.get("io", {}).get("files_dropped", 0)
    if dropped:
        console.print(f"MPI-IO: {dropped} file(s) beyond the per-rank table were not recorded")
