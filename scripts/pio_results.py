#!/usr/bin/env python3
"""The tables of results/pio/README.md, from the summary.json that `isthmus pio bench`
wrote into each results/pio/<run>/ directory.

Usage: scripts/pio_results.py [results/pio]   (prints Markdown)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STRATEGIES = ("first", "random", "hash", "window")


def size(n: int) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"


def ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def main() -> int:
    top = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results" / "pio"
    print(
        "| run | workload | op | network peak | raw | MPI-IO | MPI-IO via servers | "
        + " | ".join(f"{s}-IOS (b)" for s in STRATEGIES)
        + " | best / peak | best / raw | best / MPI-IO | best / via servers"
        + " | window / best of the 3 | spread |"
    )
    print("|---" * (13 + len(STRATEGIES)) + "|")
    for summary in sorted(top.glob("*/summary.json")):
        doc = json.loads(summary.read_text())
        for w in doc["workloads"]:
            for op, o in w["ops"].items():
                per = o["best_per_strategy"]
                cells = [
                    f"{per[s]['mb_s']:.0f} ({size(per[s]['block'])})" if s in per else "-"
                    for s in STRATEGIES
                ]
                peak = o["network_peak_mb_s"]
                via = o.get("mpiio_servers_mb_s")
                via_cell = "-" if not via else f"{via['median']:.0f}"
                print(
                    f"| {summary.parent.name} | {w['workload']} | {op} | "
                    f"{'-' if peak is None else f'{peak:.0f}'} | {o['raw_mb_s']['median']:.0f} | "
                    f"{o['mpiio_mb_s']['median']:.0f} | {via_cell} | {' | '.join(cells)} | "
                    f"{ratio(o['best_over_network_peak'])} | {ratio(o['best_over_raw'])} | "
                    f"{ratio(o['best_over_mpiio'])} | {ratio(o.get('best_over_mpiio_servers'))} | "
                    f"{ratio(o['window_over_best_of_papers'])} | "
                    f"{100 * o['spread']:.0f}% |"
                )
    # window-IOS against the best of the paper's three at each schedule block
    print()
    print("| run | workload | op | window-IOS / best of the other three at b = 4 KiB, 8 KiB, ... |")
    print("|---|---|---|---|")
    for summary in sorted(top.glob("*/summary.json")):
        doc = json.loads(summary.read_text())
        for w in doc["workloads"]:
            for op, o in w["ops"].items():
                by: dict[int, dict[str, float]] = {}
                for pt in o["points"]:
                    by.setdefault(pt["block"], {})[pt["strategy"]] = pt["median"]
                cells = []
                for b in sorted(by):
                    others = [by[b][s] for s in STRATEGIES[:3] if s in by[b]]
                    if "window" in by[b] and others:
                        cells.append(f"{by[b]['window'] / max(others):.2f}")
                print(f"| {summary.parent.name} | {w['workload']} | {op} | {' '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
