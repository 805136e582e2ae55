#!/usr/bin/env python3
"""Repeatability of the benchmark programs: each runs twice on the emulated two-cluster
platform (MPICH or Open MPI, 4 ranks on 2 cores), and the two runs' median figures are
compared point by point. Writes results/model/repeatability.json (or OUT_DIR/repeatability.json).

Usage: scripts/bench_repeat.py [--mpi mpich|openmpi] [OUT_DIR]   (about 5 minutes on 2 cores)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from model_bench_args import mpi_and_output, revision

ROOT = Path(__file__).resolve().parents[1]
ISTHMUS = str(ROOT / "bin" / "isthmus")
TWO = str(ROOT / "examples" / "platforms" / "two-clusters.toml")
MPI = "mpich"  # set from --mpi in main()

# benchmark, program options, the median figure of a record, what names a point
CASES: list[tuple[str, list[str], str, tuple[str, ...]]] = [
    (
        "pingpong",
        ["--peer", "2", "--max-size", "65536", "--seconds-per-size", "0.3"],
        "rtt_median_us",
        ("bytes",),
    ),
    (
        "bw",
        ["--peer", "2", "--min-size", "65536", "--max-size", "1048576", "--iterations", "5"],
        "bandwidth_mbit",
        ("bytes",),
    ),
    (
        "bibw",
        ["--peer", "2", "--min-size", "65536", "--max-size", "1048576", "--iterations", "5"],
        "bandwidth_mbit",
        ("bytes",),
    ),
    (
        "coll",
        [
            "--collectives",
            "barrier,bcast,allreduce,alltoall",
            "--max-size",
            "65536",
            "--iterations",
            "20",
        ],
        "latency_median_us",
        ("collective", "bytes"),
    ),
    ("logp", ["--max-size", "262144"], "g_us", ("class", "bytes")),
]


def run(name: str, args: list[str], out: Path) -> None:
    cmd = [ISTHMUS, "bench", name, "-p", TWO, "--mpi", MPI, "-o", str(out), "--", *args]
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def points(path: Path, figure: str, key: tuple[str, ...]) -> dict[tuple[Any, ...], float]:
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if figure in r:
                out[tuple(r[k] for k in key)] = float(r[figure])
    return out


def main() -> int:
    global MPI
    MPI, out_dir = mpi_and_output(__doc__.splitlines()[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, args, figure, key in CASES:
            runs = []
            for rep in range(2):
                f = Path(tmp) / f"{name}-{rep}.jsonl"
                run(name, args, f)
                runs.append(points(f, figure, key))
            diffs = {
                k: abs(runs[0][k] - runs[1][k]) / statistics.fmean([runs[0][k], runs[1][k]])
                for k in runs[0]
                if k in runs[1] and runs[0][k] + runs[1][k] > 0
            }
            within = sum(d <= 0.05 for d in diffs.values())
            worst: tuple[Any, ...] = max(diffs, key=diffs.__getitem__)
            rows.append(
                {
                    "benchmark": name,
                    "command": f"isthmus bench {name} -p two-clusters.toml --mpi {MPI} -- "
                    + " ".join(args),
                    "figure": figure,
                    "points": len(diffs),
                    "within_5_percent": within,
                    "median_difference": statistics.median(diffs.values()),
                    "max_difference": max(diffs.values()),
                    "worst_point": list(worst),
                }
            )
            r = rows[-1]
            print(
                f"{name:9} {r['within_5_percent']}/{r['points']} points within 5%, median "
                f"difference {100 * r['median_difference']:.1f}%, worst "
                f"{100 * r['max_difference']:.1f}% at {r['worst_point']}"
            )
    rev = revision()
    doc = {"command": "scripts/bench_repeat.py", "git_revision": rev, "mpi": MPI, "rows": rows}
    (out_dir / "repeatability.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
