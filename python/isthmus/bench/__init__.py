"""`isthmus bench`: run one of the benchmark programs on a platform and show its results.

The programs (src/bench/, built per MPI into build/bin/MPI/) write JSON lines: a header
record saying what produced them, then one record per measurement. This runs a program
through `isthmus run` (so on the emulated network when the platform is emulated), keeps
its output in a file, and prints the measurements as a table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus import records
from isthmus.config import paths
from isthmus.config.platform import Platform
from isthmus.errors import UserError
from isthmus.launch.run import run
from isthmus.launch.run_record import RunRequest

PROGRAMS = ("pingpong", "bw", "bibw", "coll", "logp", "bcast")
# Record fields left out of the table (the JSON lines keep them).
NOT_SHOWN = ("record", "ranks", "clusters", "ci95_rel", "iterations", "latency_max_us")


def table(header: dict[str, Any], records: list[dict[str, Any]]) -> Table:
    placement = header.get("placement", [])
    clusters = {p["rank"]: p.get("cluster") for p in placement}
    peer = header.get("options", {}).get("peer", 1)
    where = ""
    if header["benchmark"] != "coll" and clusters:
        same = clusters.get(0) == clusters.get(peer)
        where = f", rank 0 and rank {peer} {'in one cluster' if same else 'in different clusters'}"
    t = Table(
        title=f"{header['benchmark']}: {header['mpi_library'][:60]}, {header['ranks']} ranks, "
        f"platform {header.get('platform') or '-'}{where}"
    )
    kind = records[0]["record"] if records else ""
    rows = [r for r in records if r["record"] == kind]
    columns = [k for k in rows[0] if k not in NOT_SHOWN] if rows else []
    for c in columns:
        t.add_column(c, justify="left" if c in ("collective", "class") else "right")
    for r in rows:
        t.add_row(*(f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in columns))
    for r in records:
        if r["record"] == "logp_latency":
            t.caption = (t.caption or "") + f"{r['class']}: L = {r['L_us']:.1f} us  "
    return t


def bench(
    name: str,
    platform: Platform,
    mpi: str,
    args: list[str],
    output: Path,
    overrides: tuple[str, ...] = (),
    net: str | None = None,
    timeout: float | None = None,
) -> int:
    if name not in PROGRAMS:
        raise UserError(f"unknown benchmark {name!r}: expected one of {', '.join(PROGRAMS)}")
    program = paths.program(mpi, name)
    req = RunRequest(
        platform=platform,
        app=[str(program), *args],
        mpi=mpi,
        overrides=overrides,
        net=net,
        timeout=timeout,
        stdout=output,
    )
    rc = run(req)
    if output.exists() and output.stat().st_size:
        header, recs = records.read_bench(output)
        Console(width=max(Console().width, 120)).print(table(header, recs))
    return rc
