"""Robustness (issue 43): the soak's outcomes and leftovers, and the repeated runs that
once stalled."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from isthmus.report.results import made_by, table


def block_soak(res: dict[str, Any]) -> str:
    rows = res["rows"]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["platform"], r["program"], r["kill"] or "-"), []).append(r)
    body = []
    for (plat, program, kill), rs in sorted(groups.items()):
        left = sum(bool(r["leftovers"]) for r in rs)
        body.append([
            plat, program, kill, str(len(rs)), str(sum(r["status"] == 0 for r in rs)),
            str(sum(r["named"] for r in rs)), str(sum(r["ended_in_time"] for r in rs)),
            str(left) if not left else f"**{left}**",
            f"{max(r['wall_s'] for r in rs):.1f}",
        ])  # fmt: skip
    head = ["platform", "program", "killed", "runs", "status 0", "named outcome",
            "ended in time", "with leftovers", "longest, s"]  # fmt: skip
    # the same outcome in every run, whatever the network's name
    outcomes = Counter(re.sub(r"network run\d+", "network runN", r["outcome"])
                       for r in rows if r["status"] != 0)  # fmt: skip
    said = table(
        ["outcome (the run's last line)", "runs"],
        [[f"`{o}`" if o else "**none**", str(n)] for o, n in outcomes.most_common()],
    )
    unexpected = [r for r in rows if r["status"] != 0 and not r["kill"]]
    note = (
        f"Runs without a kill that failed: {len(unexpected)}"
        + (" (" + "; ".join(f"run {r['run']}: `{r['outcome']}`" for r in unexpected[:5]) + ")"
           if unexpected else "") + ".\n"
    )  # fmt: skip
    return table(head, body, right_from=3) + "\n" + said + "\n" + note + "\n" + made_by(res) + "\n"


def soak_named(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    """(measured, spread, worst, met): every run ended in time, named, with no leftovers."""
    rows = res["rows"]
    good = [r for r in rows if r["named"] and r["ended_in_time"]]
    left = [r for r in rows if r["leftovers"]]
    worst = max(rows, key=lambda r: r["wall_s"])
    return (
        f"{len(good)} of {len(rows)} runs ended with a named outcome; "
        f"{len(left)} left something behind",
        f"{sum(r['killed'] for r in rows)} runs with a process killed, of "
        f"{sum(bool(r['kill']) for r in rows)} planned (the others ended first)",
        f"longest run {worst['wall_s']:.1f} s",
        len(good) == len(rows) and not left,
    )


def block_stall(res: dict[str, Any]) -> str:
    body = [
        [r["case"], r["mpi"], str(r["runs"]), f"{r['median_s']:.1f}",
         f"{r['min_s']:.1f} to {r['max_s']:.1f}", f"{r['worst_ratio']:.2f}x",
         str(r["stalls"]) if not r["stalls"] else f"**{r['stalls']}**", str(len(r["failed"]))]
        for r in res["rows"]
    ]  # fmt: skip
    head = ["case", "MPI", "runs", "median, s", "range, s", "slowest / median",
            "stalls (over the bound)", "failed"]  # fmt: skip
    return table(head, body, right_from=2) + "\n" + made_by(res) + "\n"


def block_passes(res: dict[str, Any]) -> str:
    """The repeated runs of robustness/races and /stress: how many passed, and what the
    failed ones said."""
    body = [
        [r["case"], r["mpi"], str(r["runs"]), str(r["runs"] - len(r["failed"])),
         f"{r['median_s']:.1f}", f"{r['min_s']:.1f} to {r['max_s']:.1f}",
         "; ".join(f"`{f}`" for f in sorted(set(r["failed"]))[:3]) or "-"]
        for r in res["rows"]
    ]  # fmt: skip
    head = ["case", "MPI", "runs", "passed", "median, s", "range, s", "failures said"]
    return table(head, body, right_from=2) + "\n" + made_by(res) + "\n"


def all_passed(res: dict[str, Any], prefix: str) -> tuple[str, str, str, bool]:
    """(measured, spread, worst, met): every run of the cases named PREFIX... passed."""
    rows = [r for r in res["rows"] if r["case"].startswith(prefix)]
    if not rows:
        return ("not in the results file", "-", "-", False)
    worst = max(rows, key=lambda r: len(r["failed"]))
    return (
        ", ".join(f"{r['runs'] - len(r['failed'])} of {r['runs']} ({r['mpi']})" for r in rows),
        ", ".join(f"{r['min_s']:.1f}-{r['max_s']:.1f} s" for r in rows),
        f"{len(worst['failed'])} failed ({worst['case']}, {worst['mpi']})",
        all(not r["failed"] for r in rows),
    )


def ssend_race(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    """The target asks for a test that fails before the fix: the hang was never
    reproduced here, so there is no fix to show, whatever the runs after say."""
    measured, spread, _, _ = all_passed(res, "probe_ssend")
    return (measured, spread, "the hang never happened here: no failing run before a fix", False)


def stall_within(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    rows = res["rows"]
    worst = max(rows, key=lambda r: r["worst_ratio"])
    return (
        ", ".join(f"{r['median_s']:.1f} s" for r in rows),
        ", ".join(f"{r['min_s']:.1f}-{r['max_s']:.1f} s" for r in rows),
        f"{worst['worst_ratio']:.2f}x the median ({worst['case'][:40]})",
        all(r["stalls"] == 0 and not r["failed"] for r in rows),
    )
