"""The sweep report's network figures: point-to-point bandwidth against message size
(isthmus's benchmarks and NetPIPE), round trips against the link's bound, and the
broadcast model against measurement."""

from __future__ import annotations

import itertools
import os
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from isthmus.config import platform as platform_mod
from isthmus.config.platform import Platform
from isthmus.errors import UserError
from isthmus.model.plogp import Params
from isthmus.report.plotting import BASELINE_STYLE, figure_row, png_base64, rtt_colors, size_axis
from isthmus.report.sweep_data import (
    BANDWIDTH_RECORDS,
    SweepResults,
    point_records,
    rtt_ms,
    x_value,
)


def bandwidth_curves(
    res: SweepResults,
) -> dict[tuple[str, str], dict[str, list[tuple[int, float]]]]:
    """(app, mpi) -> label -> [(bytes, Mbit/s)], native collectives, first repetition."""
    curves: dict[tuple[str, str], dict[str, list[tuple[int, float]]]] = defaultdict(dict)
    for row in res.rows:
        if row["repeat"] != 0 or row["coll"] != "native" or row["status"] != "ok":
            continue
        pdir = res.out / "points" / row["id"]
        points = _bench_bandwidth(pdir / "stdout.txt") or _netpipe_bandwidth(pdir / "np.out")
        if not points:
            continue
        r = rtt_ms(row)
        label = "one cluster" if row["baseline"] else (f"RTT {r:g} ms" if r is not None else "")
        curves[(row["app"], row["mpi"])][label or str(x_value(res, row))] = points
    return curves


def _bench_bandwidth(path: Path) -> list[tuple[int, float]]:
    out = []
    for rec in point_records(path):
        key = BANDWIDTH_RECORDS.get(rec.get("record", ""))
        if key and rec.get("bytes", 0) > 0:
            out.append((int(rec["bytes"]), float(rec[key])))
    return out


def _netpipe_bandwidth(path: Path) -> list[tuple[int, float]]:
    """NetPIPE's output file: bytes, Mbit/s, seconds per line."""
    out = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        f = line.split()
        try:
            out.append((int(float(f[0])), float(f[1])))
        except (IndexError, ValueError):
            continue
    return out


def _against_size(ax: Any, ylabel: str, log_y: bool) -> None:
    """Axes of a figure against message size: log2 sizes in binary prefixes, a grid and a
    legend."""
    size_axis(ax)
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def plot_bandwidth(res: SweepResults) -> list[tuple[str, str]]:
    figures = []
    curves = bandwidth_curves(res)
    for app in dict.fromkeys(a for a, _ in curves):
        mpis = [m for a, m in curves if a == app]
        fig, axes = figure_row(len(mpis), f"{app}: point-to-point bandwidth per round trip")
        for ax, mpi in zip(axes, mpis, strict=True):
            colors = rtt_colors([_label_rtt(k) for k in curves[(app, mpi)] if _label_rtt(k) >= 0])
            for label, pts in sorted(curves[(app, mpi)].items(), key=lambda kv: _label_rtt(kv[0])):
                pts = sorted(pts)
                style = (
                    {"color": colors[_label_rtt(label)]}
                    if _label_rtt(label) in colors
                    else {k: v for k, v in BASELINE_STYLE.items() if k != "label"}
                )
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=label, **style)
            ax.set_title(mpi)
            _against_size(ax, "bandwidth (Mbit/s)", log_y=False)
        figures.append((f"{app}: bandwidth against message size", png_base64(fig)))
    return figures


def _label_rtt(label: str) -> float:
    """The round trip of a curve labelled "RTT 2 ms"; -1 for the one-cluster baseline."""
    try:
        return float(label.split()[1]) if label.startswith("RTT ") else -1.0
    except (IndexError, ValueError):
        return -1.0


def _point_platform(res: SweepResults, row: dict[str, Any]) -> Platform | None:
    """The platform a point ran on: its command's -p file with its --set values."""
    cmd = list(row.get("command", []))
    path = res.sweep["platform"]
    sets = []
    for flag, value in itertools.pairwise(cmd):
        if flag == "-p":
            path = value
        elif flag == "--set":
            sets.append(value)
        elif flag == "--":
            break
    try:
        return platform_mod.load(Path(path), sets)
    except UserError:
        return None


def _first_runs(res: SweepResults) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(app, mpi) -> the finished first repetitions of its native, multi-cluster points."""
    by_app: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in res.rows:
        native = row["coll"] == "native" and not row["baseline"]
        if row["status"] == "ok" and native and row["repeat"] == 0:
            by_app[(row["app"], row["mpi"])].append(row)
    return by_app


def plot_rtt_bound(res: SweepResults) -> list[tuple[str, str]]:
    """pingpong's minimum round trip against the configured link's 2 (L + m/B)."""
    figures = []
    for (app, mpi), rows in _first_runs(res).items():
        series = []
        for row in rows:
            recs = _pingpong_rtts(res.out / "points" / row["id"] / "stdout.txt")
            p = _point_platform(res, row) if recs else None
            link = next(iter(p.wan.values()), None) if p else None
            if link is None:
                continue
            bound = [
                2 * (link.latency + (m / link.bandwidth if link.bandwidth else 0)) * 1e6
                for m, _ in recs
            ]
            series.append((rtt_ms(row), recs, bound))
        if not series:
            continue
        fig, (ax,) = figure_row(1, f"{app} ({mpi}): measured round trip vs the link's bound")
        colors = rtt_colors([s[0] or 0 for s in series])
        for r, recs, bound in sorted(series, key=lambda s: s[0] or 0):
            color = colors[r or 0]
            ax.plot([m for m, _ in recs], [t for _, t in recs], marker=".", color=color,
                    label=f"RTT {r or 0:g} ms")  # fmt: skip
            ax.plot([m for m, _ in recs], bound, ls="--", color=color)
        _against_size(ax, "round trip (us); dashed: 2 (L + m/B)", log_y=True)
        figures.append((f"{app} ({mpi}): model vs measured round trip", png_base64(fig)))
    return figures


def _coll_latencies(path: Path, collective: str) -> dict[int, float]:
    """bytes -> median latency (us) of one collective in the coll benchmark's records."""
    return {
        int(r["bytes"]): float(r["latency_median_us"])
        for r in point_records(path)
        if r.get("record") == "coll"
        and r.get("collective") == collective
        and r.get("entry", "mpi") == "mpi"
        and r["bytes"] > 0
    }


def plot_bcast_model(res: SweepResults, cores: int = 0) -> list[tuple[str, str]]:
    """The coll benchmark's Bcast with WAN-aware collectives (the two-layer pipelined
    broadcast the P-LogP optimizer shapes) against the model's prediction for it, from
    parameters derived from the configured platform (docs/model.md), per round trip; the
    MPI's own Bcast measured alongside. Medians over repetitions. The caption gives the gap
    between measured and predicted at the lowest and highest round trip, with the ranks per
    core the points ran at (cores: as the profiles recorded, else this machine's)."""
    from isthmus.model import plogp

    runs: dict[tuple[str, str], dict[tuple[float, str], list[dict[int, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    platforms: dict[tuple[str, str, float], Platform] = {}
    for row in res.rows:
        r = rtt_ms(row)
        if row["status"] != "ok" or r is None:
            continue
        lat = _coll_latencies(res.out / "points" / row["id"] / "stdout.txt", "bcast")
        if not lat:
            continue
        runs[(row["app"], row["mpi"])][(r, row["coll"])].append(lat)
        if row["coll"] == "isthmus" and (row["app"], row["mpi"], r) not in platforms:
            p = _point_platform(res, row)
            if p is not None:
                platforms[(row["app"], row["mpi"], r)] = p
    figures = []
    for (app, mpi), by_point in runs.items():
        rtts = sorted({r for r, coll in by_point if coll == "isthmus"})
        if not rtts:
            continue
        fig, (ax,) = figure_row(1, f"{app} ({mpi}): Bcast, P-LogP model vs measured")
        colors = rtt_colors(rtts)
        gaps: dict[float, float] = {}
        nranks = 0
        for r in rtts:
            medians = _median_curve(by_point[(r, "isthmus")])
            sizes = sorted(medians)
            color = colors[r]
            ax.plot(sizes, [medians[m] for m in sizes], marker="o", color=color,
                    label=f"RTT {r:g} ms: isthmus")  # fmt: skip
            native = _median_curve(by_point.get((r, "native"), []))
            if native:
                ns = sorted(native)
                ax.plot(ns, [native[m] for m in ns], marker="x", ls=":", color=color)
            p = platforms.get((app, mpi, r))
            if p is None:
                continue
            params = plogp.from_platform(p)
            clusters = [c.ranks for c in p.clusters if c.ranks > 0]
            predicted = [_pipelined_prediction(params, clusters, m) for m in sizes]
            ax.plot(sizes, predicted, ls="--", color=color)
            gaps[r] = statistics.median(
                medians[m] / t for m, t in zip(sizes, predicted, strict=True) if t
            )
            nranks = sum(clusters)
        _against_size(ax, "latency (us); dashed: model, dotted: native", log_y=True)
        caption = (
            f"{app} ({mpi}): Bcast with isthmus collectives against the P-LogP prediction of "
            "its two-layer pipelined broadcast (parameters from the configured platform)."
        )
        if gaps and nranks:
            low, high = min(gaps), max(gaps)
            share = cores or os.cpu_count() or 1
            caption += (
                f" Measured over predicted, median over sizes: {gaps[low]:.1f}x at {low:g} ms, "
                f"{gaps[high]:.1f}x at {high:g} ms. The points ran {nranks} ranks and the "
                f"router on {share} cores ({nranks / share:.1f} ranks per core): a rank waits "
                "for a core and the MPI stack adds its own time, which the model (links "
                "only) does not charge; the gap weighs most where the links are fastest."
            )
        figures.append((caption, png_base64(fig)))
    return figures


def _pipelined_prediction(params: Params, clusters: list[int], big_m: int) -> float:
    """The model's time (us) for the broadcast WAN-aware collectives run: the two-layer
    pipelined one across clusters, the optimized single-layer tree inside one."""
    from isthmus.model import bcast as model

    times = {x.name: x.shape.time for x in model.predict_bcast(params, clusters, big_m)}
    return times.get("two-layer pipelined", times["optimized"])


def _median_curve(runs: list[dict[int, float]]) -> dict[int, float]:
    sizes = sorted({m for run in runs for m in run})
    return {m: statistics.median([run[m] for run in runs if m in run]) for m in sizes}


def _pingpong_rtts(path: Path) -> list[tuple[int, float]]:
    return [
        (int(r["bytes"]), float(r["rtt_min_us"]))
        for r in point_records(path)
        if r.get("record") == "pingpong" and r["bytes"] > 0
    ]
