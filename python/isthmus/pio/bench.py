"""`isthmus pio bench`: pio's benchmark (src/pio/pio_bench.c) on a platform, summarized.

For each workload (contiguous, btio) the program runs once through `isthmus run` (on the
emulated network when the platform is emulated) and writes DIR/WORKLOAD.jsonl: per
repetition the servers' raw throughput, MPI-IO's (ROMIO for both MPIs) and pio's for
every strategy and schedule block. This module reads those records and writes
DIR/summary.json (medians and spreads, the best strategy against raw and MPI-IO, the
spread between strategies as the paper states it), a table, and DIR/WORKLOAD.png with the
paper's plots: throughput (contiguous, Figures 2-3) or time (BTIO, Figures 4-5) against
the schedule block, one line per strategy, raw and MPI-IO as horizontal lines.
"""

from __future__ import annotations

import math
import shutil
import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus.config import paths
from isthmus.config.platform import Platform
from isthmus.config.units import format_size
from isthmus.errors import UserError
from isthmus.launch.run import run
from isthmus.launch.run_record import RunRequest
from isthmus.records import read_bench, write_json

WORKLOADS = ("contiguous", "btio")
STRATEGIES = ("first", "random", "hash", "window")
OPS = ("write", "read")


@dataclass(frozen=True)
class BenchRequest:
    platform: Platform
    mpi: str
    out_dir: Path
    workloads: tuple[str, ...]
    program_args: dict[str, list[str]]  # per workload
    overrides: tuple[str, ...] = ()
    timeout: float | None = None


# BT-IO's array side per class (src/pio/pio_bench.c --class)
BTIO_SIDE = {"S": 12, "W": 24, "A": 64}


def check_btio_clients(clients: int, klass: str) -> None:
    """BT-IO splits the array over a q x q grid of clients: q must divide the side."""
    q = math.isqrt(clients)
    if q * q != clients or BTIO_SIDE[klass] % q:
        raise UserError(
            f"--class {klass}: btio needs a square number of clients that divides the array "
            f"side {BTIO_SIDE[klass]}; the platform has {clients} (ranks that are not I/O servers)"
        )


def run_bench(req: BenchRequest) -> int:
    """Runs the program per workload, then summarizes. Returns the first failing exit code."""
    if req.platform.io is None:
        raise UserError(f"{req.platform.path}: no [io] table: pio needs I/O servers (docs/pio.md)")
    req.out_dir.mkdir(parents=True, exist_ok=True)
    # The servers' files go to a scratch directory of this run (the platform's directory
    # is for applications); Open MPI's MPI-IO is ROMIO, as MPICH's is.
    scratch = Path(tempfile.mkdtemp(prefix="isthmus-pio-bench-"))
    environment = (("ISTHMUS_PIO_DIR", str(scratch)), ("OMPI_MCA_io", "romio321"))
    try:
        for workload in req.workloads:
            output = req.out_dir / f"{workload}.jsonl"
            rc = run(
                RunRequest(
                    platform=req.platform,
                    app=[str(paths.program(req.mpi, "pio_bench")), *req.program_args[workload]],
                    mpi=req.mpi,
                    overrides=req.overrides,
                    timeout=req.timeout,
                    stdout=output,
                    environment=environment,
                )
            )
            if rc != 0:
                return rc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = summarize_dir(req.out_dir, network_peak(req.platform))
    write_json(req.out_dir / "summary.json", summary)
    console = Console(width=max(Console().width, 140))
    for w in summary["workloads"]:
        console.print(table(w))
    return 0


def network_peak(p: Platform) -> dict[str, float | None]:
    """The emulated network's bound on pio's aggregate throughput in MB/s (the paper's
    "theoretical point-to-point bandwidth"): writes end at the servers' switch ports, reads
    at the clients' (docs/net.md: a port is shared by all traffic into its host), and
    traffic between the clients' and servers' clusters also crosses that link. None where
    a link is not rate-limited."""
    assert p.io is not None
    names = p.rank_clusters()
    nranks = len(names)
    servers = p.io_server_ranks(nranks)
    clients = [r for r in range(nranks) if r not in servers]

    def into(ranks: list[int], sources: list[int]) -> float | None:
        total = 0.0
        for r in ranks:
            port = p.cluster(names[r]).lan.bandwidth
            if port is None:
                return None
            total += port
        between = [
            p.wan[(names[a], names[b])].bandwidth
            for a in sources[:1]
            for b in ranks[:1]
            if names[a] != names[b]
        ]
        if between and between[0] is not None:
            total = min(total, between[0])
        return total / 1e6

    return {"write": into(servers, clients), "read": into(clients, servers)}


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(
    header: dict[str, Any], records: list[dict[str, Any]], peak: dict[str, float | None]
) -> dict[str, Any]:
    """Medians over repetitions, and what the issue asks to compare, per operation."""
    groups: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for r in records:
        if r.get("record") == "pio":
            groups[(r["op"], r["method"], r["strategy"], r["block"])].append(r["mb_s"])
    workload = next((r["workload"] for r in records if r.get("record") == "pio"), "?")
    out: dict[str, Any] = {
        "workload": workload,
        "command": header.get("command"),
        "mpi_library": header.get("mpi_library"),
        "platform": header.get("platform"),
        "git_revision": header.get("git_revision"),
        "date": header.get("date"),
        "ops": {},
    }
    for op in OPS:
        pio = {(s, b): _stats(v) for (o, m, s, b), v in groups.items() if o == op and m == "pio"}
        if not pio:
            continue
        raw = _stats(groups[(op, "raw", None, None)])
        mpiio = _stats(groups[(op, "mpiio", None, None)])
        # ROMIO with the servers as aggregators (absent from results made before it)
        via = groups.get((op, "mpiio-servers", None, None))
        mpiio_servers = _stats(via) if via else None
        best = max(pio, key=lambda k: pio[k]["median"])
        worst = min(pio, key=lambda k: pio[k]["median"])
        by_strategy = {
            s: max((v["median"], b) for (s2, b), v in pio.items() if s2 == s)
            for s in sorted({s for s, _ in pio})
        }
        papers = [s for s in ("first", "random", "hash") if s in by_strategy]
        bound = peak.get(op)
        out["ops"][op] = {
            "raw_mb_s": raw,
            "mpiio_mb_s": mpiio,
            "mpiio_servers_mb_s": mpiio_servers,
            "network_peak_mb_s": bound,
            "best_over_network_peak": pio[best]["median"] / bound if bound else None,
            "best": {"strategy": best[0], "block": best[1], "mb_s": pio[best]},
            "best_over_raw": pio[best]["median"] / raw["median"],
            "best_over_mpiio": pio[best]["median"] / mpiio["median"],
            "best_over_mpiio_servers": (
                pio[best]["median"] / mpiio_servers["median"] if mpiio_servers else None
            ),
            "spread": pio[best]["median"] / pio[worst]["median"] - 1,
            "worst": {"strategy": worst[0], "block": worst[1], "mb_s": pio[worst]},
            "best_per_strategy": {s: {"mb_s": m, "block": b} for s, (m, b) in by_strategy.items()},
            "window_over_best_of_papers": (
                by_strategy["window"][0] / max(by_strategy[s][0] for s in papers)
                if "window" in by_strategy and papers
                else None
            ),
            "points": [
                {"strategy": s, "block": b, **v} for (s, b), v in sorted(pio.items(), key=str)
            ],
        }
    return out


def summarize_dir(out_dir: Path, peak: dict[str, float | None]) -> dict[str, Any]:
    workloads = []
    for w in WORKLOADS:
        f = out_dir / f"{w}.jsonl"
        if f.exists():
            header, records = read_bench(f)
            workloads.append(summarize(header, records, peak))
    if not workloads:
        raise UserError(f"{out_dir}: no pio benchmark results (contiguous.jsonl, btio.jsonl)")
    return {"command": "isthmus pio bench", "workloads": workloads}


def table(w: dict[str, Any]) -> Table:
    t = Table(
        title=f"pio bench, {w['workload']}: median MB/s ({w['platform']}, {w['mpi_library'][:40]})"
    )
    columns = (
        "op",
        "network",
        "raw",
        "MPI-IO",
        "MPI-IO via servers",
        *STRATEGIES,
        "/network",
        "/raw",
        "/MPI-IO",
        "/via servers",
        "spread",
    )
    for c in columns:
        t.add_column(c, justify="left" if c == "op" else "right")
    for op, o in w["ops"].items():
        per = o["best_per_strategy"]
        peak = o["network_peak_mb_s"]
        t.add_row(
            op,
            f"{peak:.0f}" if peak else "-",
            f"{o['raw_mb_s']['median']:.0f}",
            f"{o['mpiio_mb_s']['median']:.0f}",
            f"{o['mpiio_servers_mb_s']['median']:.0f}" if o["mpiio_servers_mb_s"] else "-",
            *(
                f"{per[s]['mb_s']:.0f}@{format_size(per[s]['block'])}" if s in per else "-"
                for s in STRATEGIES
            ),
            f"{o['best_over_network_peak']:.2f}" if peak else "-",
            f"{o['best_over_raw']:.2f}",
            f"{o['best_over_mpiio']:.2f}",
            f"{o['best_over_mpiio_servers']:.2f}" if o["best_over_mpiio_servers"] else "-",
            f"{100 * o['spread']:.0f}%",
        )
    t.caption = "strategies: best median and its schedule block; /x: the best strategy over x"
    return t
