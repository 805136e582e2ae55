"""MPI-IO on pio's tables and plots (docs/mpiio.md): an unmodified program's write
throughput, case after case (pio against the MPI's own MPI-IO, two-phase against
independent), from the `app` runner's rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isthmus.report.plotting import pyplot
from isthmus.report.results import made_by, pct, table


def block_cases(res: dict[str, Any]) -> str:
    rows = [[r["case"], f"{r['median']:.1f} ({pct(r['spread'])})",
             " ".join(f"{v:.1f}" for v in r["reps"])] for r in res["rows"]]  # fmt: skip
    head = ["case", "write MiB/s (median, spread)", "every run"]
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
