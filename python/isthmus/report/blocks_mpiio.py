"""MPI-IO on pio's tables and plots (docs/mpiio.md): an unmodified program's write
throughput, case after case (pio against the MPI's own MPI-IO, two-phase against
independent), from the `app` runner's rows."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from isthmus.report.plotting import pyplot
from isthmus.report.results import made_by, pct, size, table


def block_cases(res: dict[str, Any]) -> str:
    wan = any("wan_bytes" in r for r in res["rows"])
    rows = [[r["case"], f"{r['median']:.1f} ({pct(r['spread'])})",
             *([size(r["wan_bytes"])] if wan else []),
             " ".join(f"{v:.1f}" for v in r["reps"])] for r in res["rows"]]  # fmt: skip
    head = ["case", "write MiB/s (median, spread)",
            *(["wide-area bytes, both ways (median)"] if wan else []), "every run"]  # fmt: skip
    return table(head, rows, right_from=1) + "\n" + made_by(res) + "\n"


def plot_cases(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    rows = res["rows"]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.2), constrained_layout=True)
    y = list(range(len(rows)))[::-1]
    med = [r["median"] for r in rows]
    err = [
        [r["median"] - min(r["reps"]) for r in rows],
        [max(r["reps"]) - r["median"] for r in rows],
    ]
    ax.barh(y, med, xerr=err, capsize=3, color=["tab:blue" if "pio" in r["case"] or "phase" in
            r["case"] or "independent" in r["case"] or "direct" in r["case"] else "tab:gray"
            for r in rows])  # fmt: skip
    ax.set_yticks(y, [r["case"] for r in rows], fontsize=8)
    ax.set_xlabel("write MiB/s (median; bars: every run's range)")
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _median(res: dict[str, Any], case: str) -> float | None:
    return next((r["median"] for r in res["rows"] if r["case"] == case), None)


def over(res: dict[str, Any], mine: str, other: str, least: float) -> tuple[str, str, str, bool]:
    """Each case named `..., mine` over its twin `..., other` (same MPI and pattern, same
    run): (median ratio, largest spread of the two, worst case, every ratio >= least)."""
    pts = []
    for r in res["rows"]:
        if not r["case"].endswith(mine):
            continue
        twin = _median(res, r["case"][: -len(mine)] + other)
        if twin:
            pts.append((r["median"] / twin, r["case"][: -len(mine)].rstrip(", ")))
    if not pts:
        return "no pairs", "-", "-", False
    spread = max(r["spread"] for r in res["rows"])
    worst = min(pts)
    ratios = [v for v, _ in pts]
    return (f"{statistics.median(ratios):.2f}x", pct(spread), f"{worst[0]:.2f}x ({worst[1]})",
            all(v >= least for v in ratios))  # fmt: skip
