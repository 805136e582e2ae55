"""The performance table: every target of the project against its measurement.

The targets' words, references and experiments are data (`experiments/targets.toml`);
this module turns an experiment's results file into the target's row: the median over
the points the target covers, the spread (the largest repetition spread among them), the
worst point, and met / not met. A target whose experiment has no results file made by
`isthmus experiment` yet is listed as not measured: the table never cites older numbers.
"""

from __future__ import annotations

import statistics
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from isthmus.config import paths
from isthmus.report import blocks_adaptive as adaptive
from isthmus.report import blocks_collectives, blocks_grid, blocks_live, blocks_slurm, results
from isthmus.report import blocks_dilation as dilation
from isthmus.report import blocks_mpiio as mpiio
from isthmus.report import blocks_robustness as robustness

TARGETS_FILE = paths.ROOT / "experiments" / "targets.toml"


@dataclass
class Measured:
    median: str
    spread: str
    worst: str
    met: bool


def _small(res: dict[str, Any], key: str) -> Measured:
    rows = blocks_collectives.latency_rows(res)
    if key == "speedup":  # against the MPI's own with the same sleeping waits
        rows = [r for r in rows if "sleeping" in r["case"]]
    if key != "one":
        rows = [r for r in rows if key in r]
    if key == "one":
        vals = [(r["mpi_wan"], r) for r in rows]
        worst = max(vals, key=lambda v: v[0])
        return Measured(
            f"{statistics.median([v for v, _ in vals]):.2f} WAN latencies",
            f"{max(r['mpi']['spread'] for r in rows):.0%}",
            f"{worst[0]:.2f} ({worst[1]['case']}, {worst[1]['collective']})",
            worst[0] <= 1.10,
        )
    # only where the MPI's own needs two or more wide-area latencies
    rows = [r for r in rows if r["native_wan"] >= 1.9]
    vals = [(r[key], r) for r in rows]
    worst = min(vals, key=lambda v: v[0])
    return Measured(
        f"{statistics.median([v for v, _ in vals]):.2f}x ({len(vals)} rows)",
        f"{max(max(r['mpi']['spread'], r['native']['spread']) for r in rows):.0%}",
        f"{worst[0]:.2f}x ({worst[1]['case']}, {worst[1]['collective']})",
        worst[0] >= 2.0,
    )


def _large(res: dict[str, Any], key: str) -> Measured:
    rows = [
        r
        for r in blocks_collectives.bandwidth_rows(
            res, results.load_result("collectives/tcp-floor")
        )
    ]
    rows = [r for r in rows if r[key] is not None]
    if not rows:
        return Measured("no TCP floor measured", "-", "-", False)
    spread = f"{max(r['isthmus']['spread'] for r in rows):.0%}"
    vals = [(r[key], r) for r in rows]
    if key == "native_over_isthmus":
        worst = min(vals, key=lambda v: v[0])
        ok = worst[0] >= 1.0
        unit = " (MPI's own time / isthmus's)"
    else:
        worst = max(vals, key=lambda v: v[0])
        ok = worst[0] <= 1.15
        unit = "x"
    where = f"{worst[1]['mpi']}, {worst[1]['collective']} {results.size(worst[1]['bytes'])}"
    return Measured(
        f"{statistics.median([v for v, _ in vals]):.2f}{unit}",
        spread,
        f"{worst[0]:.2f}{unit} ({where})",
        ok,
    )


def _within(
    points: list[tuple[float, str]],
    ok: Callable[[float], bool],
    fmt: str,
    badness: Callable[[float], float] = abs,
) -> Measured:
    """Points (value, where) against a per-point test: how many pass, and the worst (the
    largest badness)."""
    passing = sum(ok(v) for v, _ in points)
    worst = max(points, key=lambda p: badness(p[0]))
    return Measured(
        f"{passing} of {len(points)} points within",
        "-",
        f"{fmt.format(worst[0])} ({worst[1]})",
        passing == len(points),
    )


def _router_delay(res: dict[str, Any]) -> Measured:
    pts = []
    for r in (r for r in res["rows"] if r["kind"] == "delay"):
        e = r["raw_error_us"]
        value = e["max"] if abs(e["max"]) >= abs(e["min"]) else e["min"]
        pts.append((value / r["tolerance_us"], f"{r['proto']} at {r['delay_ms']:g} ms"))
    m = _within(pts, lambda x: abs(x) <= 1.0, "{:+.2f} x tolerance")
    m.spread = "every run's point counted"
    return m


def _router_rate(res: dict[str, Any]) -> Measured:
    pts = [(v, f"{r['rate_mbit']:g} Mbit/s") for r in res["rows"] if r["kind"] == "rate"
           for v in (r["fraction"]["min"], r["fraction"]["max"])]  # fmt: skip
    return _within(pts, lambda x: 0.90 <= x <= 1.02, "{:.3f} of the rate",
                   lambda x: max(0.90 - x, x - 1.02, -abs(x - 0.96)))  # fmt: skip


def _router_throughput(res: dict[str, Any]) -> Measured:
    rows = [r for r in res["rows"] if r["kind"] == "mtu" and r["mtu"] in (1500, 9000)]
    median = ", ".join(f"{r['goodput_gbps']['median']:.2f} Gbit/s at {r['mtu']}" for r in rows)
    worst = min(rows, key=lambda r: r["goodput_gbps"]["min"])
    spread = max((r["goodput_gbps"]["max"] - r["goodput_gbps"]["min"]) / r["goodput_gbps"]["median"]
                 for r in rows)  # fmt: skip
    return Measured(
        median,
        f"{spread:.0%}",
        f"{worst['goodput_gbps']['min']:.2f} Gbit/s (MTU {worst['mtu']})",
        all(r["goodput_gbps"]["min"] >= 4.0 for r in rows),
    )


def _overhead(res: dict[str, Any]) -> Measured:
    limits = (("layer_off", 3.0, "off"), ("layer_on", 25.0, "on"))
    pts = [(r[mode]["median_ns"] / limit, f"{r['mpi']}, {r['benchmark']}, {name}")
           for r in res["rows"] for mode, limit, name in limits]  # fmt: skip
    m = _within(pts, lambda x: x <= 1.0, "{:.2f} x the limit", lambda x: x)
    m.median = f"{m.median}; median added per call: " + ", ".join(
        f"{name} {statistics.median([r[mode]['median_ns'] for r in res['rows']]):.1f} ns"
        for mode, name in (("layer_off", "off"), ("layer_on", "on"))
    )
    return m


def _model(res: dict[str, Any]) -> Measured:
    pts = [(r["error"] / (0.03 if r["bytes"] >= 65536 else 0.05),
            f"{r['mpi']}, {r['case']}, {results.size(r['bytes'])}")
           for r in res["rows"] if r["kind"] == "bcast"]  # fmt: skip
    return _within(pts, lambda x: abs(x) <= 1.0, "{:+.2f} x the allowed error")


def _pio(res: dict[str, Any], key: str, least: float) -> Measured:
    pts = [(r[key], f"{r['case']}, {r['workload']} {r['op']}") for r in res["rows"]
           if r.get(key) is not None]  # fmt: skip
    m = _within(pts, lambda x: x >= least, "{:.2f}", lambda x: -x)
    m.median = f"{statistics.median([v for v, _ in pts]):.2f} ({m.median})"
    return m


def _demo(res: dict[str, Any]) -> Measured:
    r = res["rows"][0]
    slowest = max(r["runs"], key=lambda x: x["seconds"])
    all_ok = all(x["ok"] == x["points"] for x in r["runs"])
    return Measured(
        f"{r['median_s'] / 60:.1f} min",
        f"{(r['max_s'] - r['min_s']) / r['median_s']:.0%}",
        f"{slowest['seconds'] / 60:.1f} min, {slowest['ok']} of {slowest['points']} points ok",
        r["max_s"] <= 660 and all_ok,  # "about 10 minutes": within 10%
    )


def _zero(res: dict[str, Any]) -> Measured:
    rows = [r for r in blocks_collectives.zero_rows(res) if "forced" not in r["case"]]
    worst = max(rows, key=lambda r: r["worst"][0])
    w = worst["worst"]
    return Measured(
        f"{sum(r['points'] - r['over_3'] for r in rows)} of {sum(r['points'] for r in rows)} "
        f"points within 3%; median ratio {statistics.median([r['median'] for r in rows]):.3f}",
        f"{sum(r['over_3_outside_spread'] for r in rows)} over 3% beyond the spread",
        f"{w[0]:.2f} ({worst['case']}, {w[2]}, {results.size(w[3])})",
        all(r["over_3"] == 0 for r in rows),
    )


def _never_slower(res: dict[str, Any]) -> Measured:
    ratios = []
    pairs = blocks_grid.entry_pairs(res)
    for (mpi, coll, _point, nbytes), e in pairs.items():
        layer, native = e["mpi"], e["native"]
        slower = blocks_grid.slower_beyond_spread(layer, native)
        ratios.append((layer["median_us"] / native["median_us"], slower, mpi, coll, nbytes))
    if not ratios:
        return Measured("no point measured both ways", "-", "-", False)
    bad = [r for r in ratios if r[1]]
    worst = max(ratios)
    ctl = blocks_grid.control(res, pairs)
    return Measured(
        f"{statistics.median(r[0] for r in ratios):.2f} (layer / the MPI's own, "
        f"{len(ratios)} points)",
        f"{len(bad)} of {len(ratios)} points over 5% beyond the spread"
        + (f" ({ctl})" if ctl else ""),
        f"{worst[0]:.2f} ({worst[2]}, {worst[3]}, {results.size(worst[4])})",
        not bad,
    )


def _apps(res: dict[str, Any]) -> Measured:
    from isthmus.report.blocks_apps import app_figures

    figs = [(f.ratio, f) for f in app_figures(res) if f.ratio is not None]
    if not figs:
        return Measured("no figure measured both ways", "-", "-", False)
    ratio, worst = max(figs, key=lambda x: x[0])
    return Measured(
        f"{statistics.median(r for r, _ in figs):.2f} (layer / the MPI's own, {len(figs)} figures)",
        f"{sum(not f.ok for _, f in figs)} of {len(figs)} figures more than 5% above",
        f"{ratio:.2f} ({worst.app} {worst.figure}, {worst.where})",
        all(f.ok for _, f in figs),
    )


def _model_chosen(res: dict[str, Any]) -> Measured:
    errors = blocks_grid.model_errors(res, blocks_grid.entry_pairs(res))
    flat = [(abs(x), x, mpi, coll) for (mpi, coll), xs in errors.items() for x in xs]
    if not flat:
        return Measured("no point at 64 KiB or more", "-", "-", False)
    worst = max(flat)
    return Measured(
        f"{statistics.median(f[0] for f in flat):.0%} ({len(flat)} points)",
        "-",
        f"{worst[1]:+.0%} ({worst[2]}, {worst[3]})",
        worst[0] <= 0.20,
    )


def _wins(res: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Each row's speed-up of the layer over the MPI's own, with the larger spread of the
    two entries, by a name for the row: the latency table's two speed-ups (over the MPI's
    own sleeping and spinning) or the bandwidth table's."""
    out = {}
    if res["header"]["experiment"] == "collectives/latency":
        for r in blocks_collectives.latency_rows(res):
            spread = max(r["mpi"]["spread"], r["native"]["spread"])
            for key, versus in (("speedup", "same waits"), ("speedup_plain", "spinning")):
                if key in r:
                    out[f"{r['case']}, {r['collective']}, vs {versus}"] = (r[key], spread)
    else:
        for r in blocks_collectives.bandwidth_rows(res, None):
            spread = max(r["isthmus"]["spread"], r["native"]["spread"])
            where = f"{r['mpi']}, {r['collective']} {results.size(r['bytes'])}"
            out[where] = (r["native_over_isthmus"], spread)
    return out


def _still_wins(res: dict[str, Any], before: dict[str, Any] | None) -> Measured:
    """Row by row against the same table before: where the layer won then (speed-up over
    1), is it at least as high now? Lower beyond the spread: lower even with both runs'
    spreads given to it."""
    if before is None:
        return Measured("no results at the baseline commit", "-", "-", False)
    now, then = _wins(res), _wins(before)
    won = [k for k in then if k in now and then[k][0] > 1]
    rows = [(now[k][0] / then[k][0], k, now[k], then[k]) for k in won]
    if not rows:
        return Measured("no row won before", "-", "-", False)
    lower = [r for r in rows if r[0] < 1]
    beyond = [r for r in lower if r[2][0] * (1 + r[2][1]) < r[3][0] * (1 - r[3][1])]
    worst = min(rows)
    return Measured(
        f"{statistics.median(r[0] for r in rows):.2f} (speed-up now / before, {len(rows)} rows)",
        f"{len(lower)} of {len(rows)} rows lower, {len(beyond)} beyond both runs' spreads",
        f"{worst[2][0]:.2f}x, was {worst[3][0]:.2f}x ({worst[1]})",
        not lower,
    )


def _zipper(res: dict[str, Any], key: str) -> Measured:
    """Issue 20's ratios (render_zipper.py): the worst MPI's median decides."""
    from isthmus.report import render_zipper as z

    check = next(c for c in (*z.P2P_CHECKS, *z.ZIPPER_CHECKS) if c.key == key)
    rs, worst = z.worst(res, check)
    if worst is None:
        return Measured("not in the results file", "-", "-", False)
    return Measured(
        ", ".join(f"{r.mpi} {r.median:.2f}x" for r in rs),
        ", ".join(f"{min(r.values):.2f}-{max(r.values):.2f}" for r in rs),
        f"{worst.median:.2f}x ({worst.mpi})",
        z.met(check, worst.median),
    )


def _zipper_collectives(res: dict[str, Any]) -> Measured:
    from isthmus.report import render_zipper as z

    points = z.coll_points(res)
    if not points:
        return Measured("not in the results file", "-", "-", False)
    worst = max(points, key=lambda p: p.ratio.median)
    return Measured(
        f"{statistics.median(p.ratio.median for p in points):.2f}x ({len(points)} points)",
        f"{max(max(p.ratio.values) - min(p.ratio.values) for p in points):.2f} (widest range)",
        f"{worst.ratio.median:.2f}x ({worst.mpi}, {worst.ranks}, {worst.collective} "
        f"{results.size(worst.nbytes)})",
        worst.ratio.median <= z.COLL_TARGET,
    )


MEASURES: dict[str, Callable[[dict[str, Any]], Measured]] = {
    "never-slower": _never_slower,
    "model-chosen": _model_chosen,
    "apps-never-slower": _apps,
    "zero-cost": _zero,
    "demo-time": _demo,
    "router-delay": _router_delay,
    "router-rate": _router_rate,
    "router-throughput": _router_throughput,
    "layer-overhead": _overhead,
    "model-error": _model,
    "pio-raw": lambda res: _pio(res, "best_over_raw", 0.80),
    "pio-peak": lambda res: _pio(res, "best_over_network_peak", 0.85),
    "pio-mpiio-servers": lambda res: _pio(res, "best_over_mpiio_servers", 1.0),
    "pio-mpiio-local": lambda res: _pio(res, "best_over_mpiio", 1.0),
    "small-one-latency": lambda res: _small(res, "one"),
    "small-2x-sleeping": lambda res: _small(res, "speedup"),
    "small-2x-plain": lambda res: _small(res, "speedup_plain"),
    "large-bound": lambda res: _large(res, "over_bound"),
    "large-tcp": lambda res: _large(res, "over_tcp"),
    "large-native": lambda res: _large(res, "native_over_isthmus"),
    "zipper-latency": lambda res: _zipper(res, "latency_ratio"),
    "zipper-latency-1ms": lambda res: _zipper(res, "latency_ratio_1ms"),
    "zipper-bandwidth": lambda res: _zipper(res, "bandwidth_fraction"),
    "zipper-bibw": lambda res: _zipper(res, "bibw_over_bw"),
    "zipper-aggregate-2": lambda res: _zipper(res, "aggregate_2"),
    "zipper-aggregate-4": lambda res: _zipper(res, "aggregate_4"),
    "zipper-one-pair": lambda res: _zipper(res, "one_pair_2"),
    "zipper-unequal": lambda res: _zipper(res, "unequal_over_fast"),
    "zipper-collectives": lambda res: _zipper_collectives(res),
    "soak": lambda res: Measured(*robustness.soak_named(res)),
    "no-stall": lambda res: Measured(*robustness.stall_within(res)),
    "ssend-race": lambda res: Measured(*robustness.ssend_race(res)),
    "zero-counts": lambda res: Measured(*robustness.all_passed(res, "zero_counts")),
    "stress": lambda res: Measured(*robustness.all_passed(res, "zip_stress")),
    "discovery-growth": lambda res: Measured(*adaptive.growth_far_below(res)),
    "live-follow": lambda res: Measured(*blocks_live.follows_within(res)),
    "live-overhead": lambda res: Measured(*blocks_live.overhead_within(res)),
    "live-no-mismatch": lambda res: Measured(*blocks_live.no_mismatch(res)),
    "discovery-exact": lambda res: Measured(*adaptive.exact_clusters(res)),
    "discovery-budget": lambda res: Measured(*adaptive.init_budget(res)),
    "discovered-params": lambda res: Measured(*adaptive.params_within(res)),
    "weak-scaling": lambda res: Measured(*dilation.weak_scaling_within(res)),
    "converged": lambda res: Measured(*dilation.converged_within(res)),
    "scale-64": lambda res: Measured(*dilation.scale_completed(res)),
    "grid-model-error": lambda res: Measured(*blocks_grid.model_error_within(res)),
    "slurm-output": lambda res: Measured(*blocks_slurm.output_identical(res)),
    "mpiio-own": lambda res: Measured(*mpiio.over(res, ", pio", ", the MPI's own", 1.0)),
    "two-phase-2x": lambda res: Measured(*mpiio.over(res, ", two-phase", ", independent", 2.0)),
    "aggregators-per-cluster": lambda res: Measured(
        *mpiio.over(res, ", aggregators per cluster", ", the MPI's own", 1.5)
    ),
}


def block() -> str:
    targets = tomllib.loads(TARGETS_FILE.read_text())["target"]
    rows = []
    for t in targets:
        res = results.load_result(t["experiment"])
        measure = MEASURES.get(t["id"])
        if "baseline" in t:
            baseline = results.load_result_at(t["experiment"], t["baseline"])
            measure = lambda res, before=baseline: _still_wins(res, before)  # noqa: E731
        if res is None or measure is None:
            m = Measured("not measured with `isthmus experiment` yet", "-", "-", False)
            verdict = "unknown"
        else:
            m = measure(res)
            verdict = "met" if m.met else "**not met**"
        rows.append([t["area"], t["target"], m.median, m.spread, m.worst, t["reference"],
                     verdict, f"`{t['experiment']}`"])  # fmt: skip
    head = ["area", "target", "measured (median)", "spread", "worst point", "against",
            "verdict", "experiment"]  # fmt: skip
    return results.table(head, rows, right_from=len(head))
