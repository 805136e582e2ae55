"""The scale model's tables (results/dilation/README.md): weak scaling of compute with and
without dilation, and the ranks' time interposed by the layer against libfaketime."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

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
    wake_lines = {"sleep0_cpu_ns": "us of CPU per nanosleep(0)",
                  "pingpong_cpu_ns": "us of CPU per wake-up (two threads, pipes)",
                  "sleep1us_real_ns": "us a 1 us nanosleep lasts (slack 1 ns)"}  # fmt: skip
    for n, what in wake_lines.items():
        if all(n in r.get("wake_ns", {}) for r in rows):
            body.append([what] + [f"{r['wake_ns'][n]['median'] / 1e3:.1f} "
                                  f"({pct(r['wake_ns'][n]['spread'])})" for r in rows])  # fmt: skip
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


# What names a row (the rest are its figures); the value compared: the first present.
KEYS = ("kind", "mpi", "case", "collective", "entry", "point", "key", "bytes", "figure")
VALUES = ("median_us", "median", "measured_us")
# Each dilated experiment and its 2 x auto twin (the convergence check).
TWINS = {
    "collectives/latency-dilated": "collectives/latency-dilated-2x",
    "zipper/p2p-dilated": "zipper/p2p-dilated-2x",
    "model/bcast-dilated": "model/bcast-dilated-2x",
    "zipper/p2p-dilated-8": "zipper/p2p-dilated-16",
}


def _at(res: dict[str, Any]) -> str:
    """The dilation an experiment ran at, as a column names it."""
    k = str(res["header"].get("dilate"))
    return {"auto": "auto", "auto*2": "2 x auto"}.get(k) or f"K = {float(k):g}"


def _key(row: dict[str, Any]) -> str:
    return repr([(k, repr(row[k])) for k in KEYS if k in row])


def _label(row: dict[str, Any]) -> str:
    parts = [str(row.get(k, "")) for k in ("mpi", "case", "collective", "entry")]
    if parts[1].startswith(parts[0]):  # the case names its MPI already
        parts = parts[1:]
    parts += [f"{row['bytes']} B"] if "bytes" in row else []
    parts += [f"{k}={v}" for k, v in (row.get("point") or {}).items()]
    return ", ".join(dict.fromkeys(p for p in parts if p))


def convergence_rows(res: dict[str, Any], more: dict[str, Any]) -> list[tuple[str, float, float]]:
    """Every row at K and at more dilation, matched on everything but its figures: (what,
    median at K, median at more)."""
    by = {_key(r): r for r in more["rows"]}
    out = []
    for r in res["rows"]:
        other = by.get(_key(r))
        field = next(f for f in VALUES if f in r)
        if other is not None and r.get(field):
            out.append((_label(r), float(r[field]), float(other[field])))
    return out


def block_convergence(res: dict[str, Any]) -> str:
    """A dilated experiment against its 2 x auto twin: the ratio of every figure."""
    twin = TWINS[res["header"]["experiment"]]
    more = results.load_result(twin)
    if more is None:
        return results.missing(twin)
    body = [[what, f"{a:.1f}", f"{b:.1f}", f"{b / a:.3f}"]
            for what, a, b in convergence_rows(res, more)]  # fmt: skip
    at, more_at = _at(res), _at(more)
    head = ["row", f"at {at}", f"at {more_at}", f"{more_at} / {at}"]
    return table(head, body, right_from=1) + "\n" + made_by(res) + "\n" + made_by(more) + "\n"


def converged_within(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    twin = TWINS[res["header"]["experiment"]]
    more = results.load_result(twin)
    if more is None:
        return (f"{twin} not measured", "-", "-", False)
    rows = convergence_rows(res, more)
    ratios = sorted(b / a for _, a, b in rows)
    worst = max(rows, key=lambda r: abs(r[2] / r[1] - 1))
    return (
        f"{ratios[len(ratios) // 2]:.3f} (2 x auto / auto, {len(rows)} rows)",
        "-",
        f"{worst[2] / worst[1]:.3f} ({worst[0]})",
        abs(worst[2] / worst[1] - 1) <= 0.05,
    )


def block_scale(res: dict[str, Any]) -> str:
    body = [[r["mpi"], str(r["ranks"]), f"{r['dilation']['median']:g}",
             f"{r['app_s']['median']:.3f}", f"{r['mpi_s']['median']:.3f}",
             f"{r['wall_real_s']['median']:.1f}"] for r in res["rows"]]  # fmt: skip
    head = ["MPI", "ranks that finished", "K", "slowest rank's time, s (virtual)",
            "of it in MPI, s (virtual)", "real wall time of the run, s"]  # fmt: skip
    return table(head, body, right_from=1) + "\n" + made_by(res) + "\n"


def scale_completed(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    rows = res["rows"]
    done = [r for r in rows if r["ranks"] >= 64]
    worst = max(rows, key=lambda r: r["wall_real_s"]["median"])
    return (
        f"{len(done)} of {len(rows)} MPIs: 64 ranks finished, K {rows[0]['dilation']['median']:g}",
        "-",
        f"{worst['wall_real_s']['median']:.0f} s real ({worst['mpi']})",
        len(done) == len(rows),
    )


# The same rows at four K, for the fit below.
LADDERS = {
    "zipper/p2p-dilated": [
        "zipper/p2p-dilated",
        "zipper/p2p-dilated-2x",
        "zipper/p2p-dilated-8",
        "zipper/p2p-dilated-16",
    ],
}


def fit_dilation(ks: list[float], figures: list[float]) -> tuple[float, float]:
    """Least squares of figure = F + R / K: F, the figure at infinite dilation (virtual
    time), and R, the real time per operation that dilation divides by K (what is left of
    the machine in a figure: wake-ups, system calls, the uncapped router and forwarder)."""
    a = np.column_stack([np.ones(len(ks)), 1.0 / np.asarray(ks)])
    (f, r), *_ = np.linalg.lstsq(a, np.asarray(figures), rcond=None)
    return float(f), float(r)


def block_extrapolation(res: dict[str, Any]) -> str:
    """Every row at each K of its ladder, the fit figure = F + R / K, and the K at which
    that fit puts K and 2 x K within 5% of each other (R / (2 K F + R) <= 0.05)."""
    names = LADDERS[res["header"]["experiment"]]
    loaded = [results.load_result(name) for name in names]
    runs = [r for r in loaded if r is not None]
    if len(runs) < len(names):
        return results.missing(", ".join(names))
    ks = [float(r["header"]["dilate"]) for r in runs]
    by = [{_key(row): row for row in r["rows"]} for r in runs]
    body = []
    for row in runs[0]["rows"]:
        found = [b[_key(row)] for b in by if _key(row) in b]
        if len(found) < len(by):
            continue
        figures = [float(got["median"]) for got in found]
        f, r = fit_dilation(ks, figures)
        k5 = 9.5 * r / f if f > 0 and r > 0 else 1.0
        body.append([_label(row), *(f"{v:.1f}" for v in figures), f"{f:.1f}", f"{r:.0f}",
                     f"{max(1.0, k5):.0f}"])  # fmt: skip
    head = ["row", *(f"K = {k:g}" for k in ks), "fit: at infinite K", "fit: real us per operation",
            "K where K and 2 K agree within 5%"]  # fmt: skip
    text = ("Each figure against K, fit as F + R / K (least squares over the four K): F is "
            "what the platform gives, R what this machine adds per operation in real time, "
            "which dilation divides by K.\n\n")  # fmt: skip
    return text + table(head, body, right_from=1) + "\n" + "".join(made_by(r) + "\n" for r in runs)
