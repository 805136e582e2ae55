"""Live adaptation's tables and plot (issue 47; runner `live`): how the adaptive layer's
calls follow a change of the WAN against the static choices, what adaptation costs when
nothing changes, and whether random changes ever made the ranks disagree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isthmus.report.plotting import pyplot
from isthmus.report.results import made_by, size, table

FOLLOW_CALLS = 50  # the target: within 15% of the best static choice within 50 calls
WITHIN = 1.15
OVERHEAD = 1.01  # adaptation on over off when nothing changes


def _rows(res: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in res["rows"] if r.get("kind") == kind]


def follow_checks(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Per MPI, collective, size and change: calls to follow, steady ratio to the best
    static choice and to the static choice made for the old network, and verdicts."""
    out = []
    for r in _rows(res, "phase"):
        if r["phase"] == "before":
            continue
        follow = r["calls_to_follow"]
        out.append(
            {
                **r,
                # came within 15% by call 50 and stayed: the phase's steady median within too
                "follows": follow is not None
                and follow <= FOLLOW_CALLS
                and r["adaptive_over_best"] is not None
                and r["adaptive_over_best"] <= WITHIN,
                "beats_old": r["adaptive_over_old"] is not None and r["adaptive_over_old"] < 1.0,
            }
        )
    return out


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def block_live(res: dict[str, Any]) -> str:
    body = []
    for r in follow_checks(res):
        med = r["median_us"]
        body.append(
            [
                r["mpi"],
                r["collective"],
                size(r["bytes"]),
                "to 20 ms" if r["phase"] == "changed" else "back to 1 ms",
                "-" if r["calls_to_follow"] is None else str(r["calls_to_follow"]),
                "yes" if r["follows"] else "**no**",
                f"{med['adaptive'] / 1e3:.2f}",
                f"{med[r['best_static']] / 1e3:.2f} ({r['best_static']})",
                _x(r["adaptive_over_best"]),
                _x(r["adaptive_over_old"]),
                "yes" if r["beats_old"] else "**no**",
            ]
        )
    head = [
        "MPI",
        "collective",
        "size",
        "change",
        "calls to follow",
        f"<= {FOLLOW_CALLS}",
        "adaptive, ms",
        "best static, ms",
        "adaptive / best",
        "adaptive / old static",
        "faster than old static",
    ]
    out = (
        f"Per change: the calls (of that collective and size) after it until the adaptive "
        f"layer's median of 5 samples is within {WITHIN}x of the best static choice's steady "
        "median in the new phase (the phase's first iterations left out), and the steady "
        "medians of the samples. A sample is one call's time (the slowest rank's, median "
        "over repetitions), for Bcast the mean over one turn of its root round the ranks "
        "(the series program moves the root each call, and a call's time depends on where "
        f"it is). It follows when it came within by call {FOLLOW_CALLS} and its steady "
        "median is within too:\n\n" + table(head, body, right_from=4)
    )
    over = _rows(res, "overhead")
    if over:
        rows = [
            [
                r["mpi"],
                _x(r["median"]),
                ", ".join(f"{x:.3f}" for x in r["ratios"]),
                "yes" if r["median"] is not None and r["median"] <= OVERHEAD else "**no**",
                ", ".join(map(str, r["switches_when_steady"])),
            ]
            for r in over
        ]
        out += (
            "\nWhen nothing changes: the collectives' total time with adaptation on over off "
            "(runs alternating), and the switches made anyway:\n\n"
            + table(["MPI", "on / off", "per repetition", f"<= {OVERHEAD}", "switches"], rows)
        )
    out += "\n" + made_by(res) + "\n"
    return out


def plot_live(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    series = _rows(res, "series")
    p = res["params"]
    fig, axes = plt.subplots(
        len(series) // 3 or 1,
        3,
        figsize=(15, 2.6 * (len(series) // 3 or 1)),
        squeeze=False,
        constrained_layout=True,
    )
    for ax, s in zip(axes.flat, series, strict=False):
        for way, us in s["us"].items():
            if way.startswith("steady") or not us:
                continue
            ax.plot(range(len(us)), [u / 1e3 for u in us], lw=0.8, label=way)
        for at in (p.get("change_at"), p.get("back_at")):
            if at:
                ax.axvline(at, color="gray", ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_title(f"{s['mpi']}: {s['collective']} {size(s['bytes'])}", fontsize=9)
        ax.set_xlabel("call", fontsize=8)
        ax.set_ylabel("ms (slowest rank)", fontsize=8)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(
        "Live adaptation: the WAN changes at the dashed lines (isthmus experiment render)",
        fontsize=10,
    )
    fig.savefig(path, dpi=90)
    plt.close(fig)


def block_random(res: dict[str, Any]) -> str:
    rows = [
        [
            r["mpi"],
            str(r["ranks"]),
            f"{r['ok']} of {r['runs']}",
            str(r["changes"]),
            str(r["switches"]),
            "; ".join(r["failed"][:3]) or "-",
        ]
        for r in _rows(res, "random")
    ]
    head = ["MPI", "ranks", "ended correctly", "network changes", "switches", "failures"]
    return table(head, rows, right_from=1) + "\n" + made_by(res) + "\n"


def follows_within(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    """(median calls to follow, their range, the worst point, met): every change of every
    collective and size followed within FOLLOW_CALLS calls and faster than the old static."""
    checks = follow_checks(res)
    if not checks:
        return "not in the results file", "-", "-", False
    calls = sorted(c["calls_to_follow"] for c in checks if c["calls_to_follow"] is not None)
    missed = [c for c in checks if not (c["follows"] and c["beats_old"])]
    worst = max(checks, key=lambda c: (c["calls_to_follow"] is None, c["calls_to_follow"] or 0))
    median = f"{calls[len(calls) // 2]} calls" if calls else "never followed"
    where = (
        f"{worst['mpi']} {worst['collective']} {size(worst['bytes'])} {worst['phase']}: "
        f"{worst['calls_to_follow']} calls, adaptive / old static "
        f"{_x(worst['adaptive_over_old'])}"
    )
    spread = f"{calls[0]}-{calls[-1]} calls" if calls else "-"
    return (
        median + f" ({len(checks) - len(missed)} of {len(checks)} met)",
        spread,
        where,
        not missed,
    )


def overhead_within(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    over = [r for r in _rows(res, "overhead") if r["median"] is not None]
    if not over:
        return "not in the results file", "-", "-", False
    worst = max(over, key=lambda r: r["median"])
    return (
        ", ".join(f"{r['mpi']} {r['median']:.3f}" for r in over),
        ", ".join(f"{min(r['ratios']):.3f}-{max(r['ratios']):.3f}" for r in over),
        f"{worst['median']:.3f} ({worst['mpi']})",
        worst["median"] <= OVERHEAD,
    )


def no_mismatch(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    rows = _rows(res, "random")
    if not rows:
        return "not in the results file", "-", "-", False
    ok, runs = sum(r["ok"] for r in rows), sum(r["runs"] for r in rows)
    bad = [r for r in rows if r["ok"] < r["runs"]]
    worst = f"{bad[0]['mpi']}, {bad[0]['ranks']} ranks: {bad[0]['failed'][0]}" if bad else "-"
    return f"{ok} of {runs} ended correctly", "-", worst, ok == runs
