"""Slurm (issue 48): applications as one job across two Slurm clusters, against the same
network without Slurm and against one cluster (runner `batch`)."""

from __future__ import annotations

from typing import Any

from isthmus.report.results import made_by, table


def _s(stats: dict[str, Any] | None) -> str:
    if not stats:
        return "-"
    return f"{stats['median']:.2f} ({stats['min']:.2f}-{stats['max']:.2f})"


def _ratio(stats: dict[str, Any] | None) -> str:
    if not stats:
        return "-"
    return f"{stats['median']:.2f} ({stats['min']:.2f}-{stats['max']:.2f})"


def block_apps(res: dict[str, Any]) -> str:
    body = []
    for r in res["rows"]:
        sites = "; ".join(
            f"{s['site']} {_s(s['submit_to_init_seconds'])} (queued {s['queued_seconds']:.2f})"
            for s in r["sites"]
        )
        same = "yes" if r["output_identical"] else f"**no**: {r['first_difference']}"
        body.append([
            f"{r['app']} ({r['mpi']})", r["case"], _s(r["wall_seconds"]), _s(r["init_seconds"]),
            sites or "-", _ratio(r.get("wall_ratio")), _ratio(r.get("init_ratio")),
            f"{same} ({r['output_lines']} lines)",
        ])  # fmt: skip
    head = ["application", "case", "wall, s", "to the last MPI_Init, s",
            "per Slurm site: submission to MPI_Init, s", "wall / without Slurm",
            "to MPI_Init / without Slurm", "output equal to one cluster's"]  # fmt: skip
    return table(head, body, right_from=2) + "\n" + made_by(res) + "\n"


def output_identical(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    """(measured, spread, worst, met): every Slurm case's output equals the one-cluster
    run's in every repetition."""
    slurm = [r for r in res["rows"] if r["sites"]]
    same = [r for r in slurm if r["output_identical"]]
    worst = next((r for r in slurm if not r["output_identical"]), None)
    apps = sorted({f"{r['app']} ({r['mpi']})" for r in slurm})
    return (
        f"{len(same)} of {len(slurm)} Slurm cases identical ({', '.join(apps)})",
        f"{min((r['output_lines'] for r in slurm), default=0)} lines or more compared",
        f"{worst['app']}, {worst['case']}: {worst['first_difference']}" if worst else "none differ",
        bool(slurm) and len(same) == len(slurm),
    )
