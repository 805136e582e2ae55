"""The scale model's tables (results/dilation/README.md): weak scaling of compute with and
without dilation, and the ranks' time interposed by the layer against libfaketime."""

from __future__ import annotations

import re
from typing import Any

from isthmus.report import results
from isthmus.report.results import made_by, pct, table


def _ranks(case: str) -> int:
    m = re.search(r"(\d+) ranks?", case)
    return int(m.group(1)) if m else 0


def block_weak_scaling(res: dict[str, Any]) -> str:
    """Per MPI: time per rank at N ranks, undilated and dilated, against 1 rank alone."""
    out = ""
    for mpi in dict.fromkeys(r["mpi"] for r in res["rows"]):
        rows = [r for r in res["rows"] if r["mpi"] == mpi]
        alone = next((r["median"] for r in rows if _ranks(r["case"]) == 1), None)
        body = []
        for n in sorted({_ranks(r["case"]) for r in rows}):
            cells = [str(n)]
            for dilated in (False, True):
                r = next((r for r in rows if _ranks(r["case"]) == n
                          and ("dilated" in r["case"]) == dilated), None)  # fmt: skip
                if r is None:
                    cells += ["-", "-"]
                    continue
                cells.append(f"{r['median']:.3f} ({pct(r['spread'])})")
                cells.append(f"{r['median'] / alone:.2f}x" if alone else "-")
            body.append(cells)
        out += f"\n{mpi}: slowest rank's time in s (median, spread) and against 1 rank alone:\n\n"
        out += table(["ranks", "undilated", "vs alone", "dilated (auto)", "vs alone"], body,
                     right_from=1)  # fmt: skip
    return out + "\n" + made_by(res) + "\n"


def block_interposition(res: dict[str, Any]) -> str:
    k = res["params"]["dilate"]
    rows = res["rows"]
    clock_names = list(rows[0]["clock_ratio"])
    sleep_names = list(rows[0]["sleep_ratio"])
    head = ["", *(r["way"] for r in rows)]
    body = [
        ["ns per CLOCK_MONOTONIC read"]
        + [f"{r['ns_per_read']['median']:.1f} ({pct(r['ns_per_read']['spread'])})" for r in rows]
    ]
    body += [[f"clock {n}"] + [f"{r['clock_ratio'][n]:.2f}" for r in rows] for n in clock_names]
    body += [[f"sleep {n}"] + [f"{r['sleep_ratio'][n]:.2f}" for r in rows] for n in sleep_names]
    text = (f"Real time per unit of the program's time at K = {k:g}: a scaled clock or sleep "
            f"shows {k:g}, an unscaled one 1 (CPU time must stay 1):\n\n")  # fmt: skip
    return text + table(head, body, right_from=1) + "\n" + made_by(res) + "\n"


def weak_scaling_within(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    """The dilated rows against 1 rank alone: (median, spread, worst, within 5%)."""
    ratios = []
    for mpi in dict.fromkeys(r["mpi"] for r in res["rows"]):
        rows = [r for r in res["rows"] if r["mpi"] == mpi]
        alone = next(r["median"] for r in rows if _ranks(r["case"]) == 1)
        ratios += [(r["median"] / alone, r) for r in rows if "dilated" in r["case"]]
    worst = max(ratios, key=lambda v: abs(v[0] - 1))
    med = sorted(v for v, _ in ratios)[len(ratios) // 2]
    return (
        f"{med:.3f}x of 1 rank alone ({len(ratios)} rows)",
        f"{max(r['spread'] for _, r in ratios):.0%}",
        f"{worst[0]:.3f}x ({worst[1]['case']})",
        abs(worst[0] - 1) <= 0.05,
    )


def convergence_rows(res: dict[str, Any], more: dict[str, Any]) -> list[list[Any]]:
    """Every row of a coll experiment at K and at more dilation, matched: (case,
    collective, point, entry, median at K, median at more, more / K)."""
    key = ("case", "collective", "entry")
    by = {(*(r[k] for k in key), r["point"].get("wan.latency", "")): r for r in more["rows"]}
    out = []
    for r in res["rows"]:
        other = by.get((*(r[k] for k in key), r["point"].get("wan.latency", "")))
        if other is not None:
            out.append([r["case"], r["collective"], r["point"].get("wan.latency", ""),
                        r["entry"], r["median_us"], other["median_us"],
                        other["median_us"] / r["median_us"]])  # fmt: skip
    return out


def block_convergence(res: dict[str, Any]) -> str:
    """collectives/latency-dilated against collectives/latency-dilated-2x."""
    more = results.load_result("collectives/latency-dilated-2x")
    if more is None:
        return results.missing("collectives/latency-dilated-2x")
    rows = convergence_rows(res, more)
    body = [[c, coll, wan, entry, f"{a / 1e3:.3f}", f"{b / 1e3:.3f}", f"{q:.3f}"]
            for c, coll, wan, entry, a, b, q in rows]  # fmt: skip
    head = ["case", "collective", "WAN latency", "entry", "ms at auto", "ms at 2 x auto",
            "2 x auto / auto"]  # fmt: skip
    return table(head, body, right_from=4) + "\n" + made_by(res) + "\n" + made_by(more) + "\n"


def converged_within(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    more = results.load_result("collectives/latency-dilated-2x")
    if more is None:
        return ("2 x auto not measured", "-", "-", False)
    rows = convergence_rows(res, more)
    worst = max(rows, key=lambda r: abs(r[6] - 1))
    med = sorted(r[6] for r in rows)[len(rows) // 2]
    return (
        f"{med:.3f} (2 x auto / auto, {len(rows)} rows)",
        "-",
        f"{worst[6]:.3f} ({worst[0]}, {worst[1]}, {worst[3]}, WAN {worst[2]})",
        abs(worst[6] - 1) <= 0.05,
    )
