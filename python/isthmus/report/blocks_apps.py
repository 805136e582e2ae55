"""The tables and plots of pio, the model, the demo and the applications under the layer."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isthmus.report.plotting import pyplot
from isthmus.report.results import made_by, pct, size, size_or_dash, table

STRATEGIES = ("first", "random", "hash", "window")


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def block_pio(res: dict[str, Any]) -> str:
    rows = []
    for r in res["rows"]:
        per = r["best_per_strategy"]
        via = r.get("mpiio_servers_mb_s")
        peak = r["network_peak_mb_s"]
        rows.append(
            [r["case"], r["workload"], r["op"], "-" if peak is None else f"{peak:.0f}",
             f"{r['raw_mb_s']['median']:.0f}", f"{r['mpiio_mb_s']['median']:.0f}",
             "-" if not via else f"{via['median']:.0f}",
             *(f"{per[s]['mb_s']:.0f} ({size(per[s]['block'])})" if s in per else "-"
               for s in STRATEGIES),
             _ratio(r["best_over_network_peak"]), _ratio(r["best_over_raw"]),
             _ratio(r["best_over_mpiio"]), _ratio(r.get("best_over_mpiio_servers")),
             f"{100 * r['spread']:.0f}%"]
        )  # fmt: skip
    head = ["case", "workload", "op", "network peak", "raw", "MPI-IO", "MPI-IO via servers",
            *(f"{s}-IOS (b)" for s in STRATEGIES), "best / peak", "best / raw",
            "best / MPI-IO", "best / via servers", "spread"]  # fmt: skip
    return (
        "Throughput in MB/s (medians over the repetitions); each strategy at its best "
        "schedule block b.\n\n" + table(head, rows, right_from=3) + "\n" + made_by(res) + "\n"
    )


def plot_pio(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()

    rows = res["rows"]
    fig, axes = plt.subplots(
        (len(rows) + 3) // 4, 4, figsize=(18, 3.6 * ((len(rows) + 3) // 4)), squeeze=False,
        constrained_layout=True,
    )  # fmt: skip
    for ax, r in zip(axes.flat, rows, strict=False):
        for s in STRATEGIES:
            pts = sorted((p["block"], p) for p in r["points"] if p["strategy"] == s)
            if pts:
                ax.errorbar([b for b, _ in pts], [p["median"] for _, p in pts],
                            yerr=[[p["median"] - p["min"] for _, p in pts],
                                  [p["max"] - p["median"] for _, p in pts]],
                            marker="o", ms=3, capsize=2, label=f"{s}-IOS")  # fmt: skip
        if r["network_peak_mb_s"]:
            ax.axhline(r["network_peak_mb_s"], color="gray", ls="--", label="network peak")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{r['case']}: {r['workload']} {r['op']}", fontsize=9)
        ax.set_xlabel("schedule block b (bytes)")
        ax.set_ylabel("MB/s")
    axes.flat[0].legend(fontsize=7)
    for ax in list(axes.flat)[len(rows) :]:
        ax.set_visible(False)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def block_model(res: dict[str, Any]) -> str:
    bc = [
        [r["mpi"], r["case"], size(r["bytes"]), f"{r['predicted_us'] / 1e3:.2f} ms",
         f"{r['measured_us'] / 1e3:.2f} ms ({pct(r['spread'])})", f"{100 * r['error']:+.1f}%",
         "-" if r["smpi_us"] is None else f"{r['smpi_us'] / 1e3:.2f} ms",
         f"{r['native_us'] / 1e3:.2f} ms"]
        for r in res["rows"] if r["kind"] == "bcast"
    ]  # fmt: skip
    text = table(["MPI", "case", "size", "model", "emulated", "model error", "SMPI",
                  "MPI_Bcast"], bc, right_from=2)  # fmt: skip
    fid = [
        [r["mpi"], r["case"], f"{r['configured_delay_us']:.0f} us",
         f"{r['measured_delay_us']:.0f} us", f"{r['configured_rate_Bps'] / 1e6:g} MB/s",
         f"{r['measured_rate_Bps'] / 1e6:.3g} MB/s", f"{r['rate_ratio']:.3f}"]
        for r in res["rows"] if r["kind"] == "fidelity"
    ]  # fmt: skip
    if fid:  # a slice of the experiment may measure the broadcast only
        text += "\nlogp across the wide-area link against the configured link:\n\n"
        text += table(["MPI", "case", "delay", "measured (L - L at 0)", "rate", "measured (1 / "
                       "slope of g)", "measured / rate"], fid, right_from=2)  # fmt: skip
    return text + "\n" + made_by(res) + "\n"


def plot_model(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()

    rows = [r for r in res["rows"] if r["kind"] == "bcast"]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for key in dict.fromkeys((r["mpi"], r["case"]) for r in rows):
        rs = [r for r in rows if (r["mpi"], r["case"]) == key]
        x = [r["bytes"] for r in rs]
        label = f"{key[0]}, {key[1]}"
        ax1.plot(x, [r["measured_us"] / 1e3 for r in rs], "o-", label=f"{label}: emulated")
        ax1.plot(x, [r["predicted_us"] / 1e3 for r in rs], "x--", label=f"{label}: model")
        ax2.plot(x, [100 * r["error"] for r in rs], "o-", label=label)
    ax1.set_yscale("log")
    ax1.set_ylabel("completion time (ms)")
    ax1.legend(fontsize=6)
    ax2.axhspan(-3, 3, color="green", alpha=0.1)
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("message size (bytes)")
    ax2.set_ylabel("(predicted - measured) / measured (%)")
    ax2.legend(fontsize=6)
    ax1.set_title("P-LogP model vs emulation (isthmus experiment render)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def block_demo(res: dict[str, Any]) -> str:
    r = res["rows"][0]
    runs = [[f"{k + 1}", f"{x['seconds'] / 60:.1f} min", f"{x['ok']} of {x['points']}"]
            for k, x in enumerate(r["runs"])]  # fmt: skip
    where = "a fresh clone" if r["clone"] else "the checkout"
    return (
        f"`{r['command']}` in {where}:\n\n" + table(["run", "time", "points ok"], runs)
        + "\n" + made_by(res) + "\n"
    )  # fmt: skip


DEMO_PLACES = ("one-cluster", "0", "0.5ms", "1ms", "2ms")
# (application, figure, what the table shows, format)
DEMO_FIGURES = (
    ("collectives", "allreduce_8B_us", "8-byte Allreduce, us", "{:.0f}"),
    ("lammps", "loop_s", "LAMMPS loop time, s", "{:.2f}"),
)


def _at(point: dict[str, Any], place: str) -> bool:
    """Whether a sweep point ran at place: the one-cluster baseline or a one-way latency."""
    if place == "one-cluster":
        return bool(point["platform"] == place)
    return point["platform"] != "one-cluster" and str(point.get("wan.latency")) == place


def _demo_cells(points: list[dict[str, Any]], figure: str, fmt: str) -> list[str]:
    """Per place: the median of the points' figure, with its range when it ran more than
    once."""
    cells = []
    for place in DEMO_PLACES:
        vals = sorted(p[figure] for p in points if p.get(figure) is not None and _at(p, place))
        if not vals:
            cells.append("-")
            continue
        med, lo, hi = (fmt.format(v) for v in (vals[len(vals) // 2], vals[0], vals[-1]))
        cells.append(med if len(vals) == 1 else f"{med} ({lo}-{hi})")
    return cells


def block_demo_shows(res: dict[str, Any]) -> str:
    """The demo sweep's headline figures (the last run's), per MPI and collectives mode."""
    ran = res["rows"][0]["runs"][-1].get("figures", [])
    points = [p for p in ran if p["status"] == "ok"]
    ran_n = Counter((p["app"], p["mpi"], p["coll"]) for p in ran)
    ok_n = Counter((p["app"], p["mpi"], p["coll"]) for p in points)
    count = [[*g, str(n), str(ok_n[g])] for g, n in ran_n.items()]
    text = "Points of the sweep:\n\n"
    text += table(["application", "MPI", "collectives", "points", "ok"], count, 3) + "\n"
    places = [f"{x.removesuffix('ms')} ms one way" for x in DEMO_PLACES[1:]]
    head = ["MPI", "collectives", "one cluster", *places]
    for app, figure, unit, fmt in DEMO_FIGURES:
        mine = [p for p in points if p["app"] == app]
        body = []
        for mpi, coll in dict.fromkeys((p["mpi"], p["coll"]) for p in mine):
            same = [p for p in mine if (p["mpi"], p["coll"]) == (mpi, coll)]
            body.append([mpi, coll, *_demo_cells(same, figure, fmt)])
        if body:
            text += f"{unit} (median of the repeats, their range in brackets):\n\n"
            text += table(head, body, 2) + "\n"
    text += _demo_zipper(points)
    return text + made_by(res) + "\n"


ZIPPER_KEY = "zippers.gate.link.latency"  # what examples/demo/zipper.toml varies


def _demo_zipper(points: list[dict[str, Any]]) -> str:
    """The zipper part: LAMMPS forwarded against direct per zipper link latency (medians
    of app_s and their ratio), and the bytes the forwarder relayed between networks."""
    fwd = [p for p in points if p["app"] == "lammps-forwarded"]
    direct = [p for p in points if p["app"] == "lammps-direct"]
    rows = []
    for lat in dict.fromkeys(str(p.get(ZIPPER_KEY)) for p in fwd):
        f = sorted(p["app_s"] for p in fwd if str(p.get(ZIPPER_KEY)) == lat and p.get("app_s"))
        d = sorted(p["app_s"] for p in direct if str(p.get(ZIPPER_KEY)) == lat and p.get("app_s"))
        b = [p["forwarded_bytes"] for p in fwd
             if str(p.get(ZIPPER_KEY)) == lat and p.get("forwarded_bytes") is not None]  # fmt: skip
        if f and d:
            mf, md = statistics.median(f), statistics.median(d)
            rows.append([lat, f"{mf:.2f}", f"{md:.2f}", f"{mf / md:.2f}",
                         size_or_dash(statistics.median(b) if b else None)])  # fmt: skip
    if not rows:
        return ""
    head = ["zipper link, one way", "forwarded (s)", "direct (s)", "forwarded / direct",
            "forwarded between networks"]  # fmt: skip
    return (
        "LAMMPS across the zipper host against a direct link of the same latency and rate "
        "(MPI_Init to MPI_Finalize, median of the runs):\n\n" + table(head, rows, 1) + "\n"
    )


def _as_time(s: dict[str, Any], way: str) -> tuple[float, float, float]:
    """(median, best, worst) of a figure as a time: a rate's reciprocal."""
    if way == "rate":
        return 1 / s["median"], 1 / s["max"], 1 / s["min"]
    return s["median"], s["min"], s["max"]


@dataclass(frozen=True)
class AppFigure:
    """One figure of one application at one point, the layer against the reference mode."""

    app: str
    mpi: str
    where: str
    figure: str
    way: str  # "time" or "rate"
    reference: dict[str, Any] | None  # spread_stats of the reference's runs, None: missing
    layer: dict[str, Any] | None
    note: str  # how many runs ended ok, when a side is missing

    def times(self) -> tuple[tuple[float, float, float], tuple[float, float, float]] | None:
        """(median, best, worst) as times of the layer and of the reference; None when a
        side did not run ok (or a rate is 0: the application failed its own check)."""
        if not (self.layer and self.reference):
            return None
        if self.way == "rate" and min(self.layer["min"], self.reference["min"]) <= 0:
            return None
        return _as_time(self.layer, self.way), _as_time(self.reference, self.way)

    @property
    def measured(self) -> bool:
        return self.times() is not None

    @property
    def ratio(self) -> float | None:
        """The layer's median as a time over the reference's."""
        both = self.times()
        return both[0][0] / both[1][0] if both else None

    @property
    def ok(self) -> bool:
        """The layer's median time at most 5% above the reference's, as issue 26 words it
        for applications (median of 3): a spread is shown beside it, never a pass."""
        return self.ratio is not None and self.ratio <= 1.05


def app_figures(res: dict[str, Any]) -> list[AppFigure]:
    """Per application, MPI, point and figure (the wall time and the sweep's figures)."""
    ref = res["params"].get("reference", "native")
    ways = {"wall_s": "time", **res["params"].get("figures", {})}
    by = {(r["app"], r["mpi"], repr(sorted(r["point"].items())), r["coll"]): r
          for r in res["rows"]}  # fmt: skip
    out = []
    for (app, mpi, point, coll), r in by.items():
        base = by.get((app, mpi, point, ref))
        if coll == ref or base is None:
            continue
        where = ", ".join(f"{k} {v}" for k, v in r["point"].items())
        note = f"{r['ok']} of {r['runs']} ok, {ref} {base['ok']} of {base['runs']}"
        for fig, way in ways.items():
            if fig in r:
                out.append(AppFigure(app, mpi, where, fig, way, base.get(fig), r.get(fig), note))
    return out


def block_apps(res: dict[str, Any]) -> str:
    """The layer's median as a time over the reference mode's, per figure and point."""
    ref = res["params"].get("reference", "native")
    body = []
    figs = app_figures(res)
    for f in figs:
        name = f.figure + (" (a rate)" if f.way == "rate" else "")
        if not (f.measured and f.layer and f.reference):
            body.append([f.app, f.mpi, f.where, name, "-", "-", "-", f"not measured ({f.note})"])
            continue
        body.append([f.app, f.mpi, f.where, name,
                     f"{f.reference['median']:.4g} ({pct(f.reference['spread'])})",
                     f"{f.layer['median']:.4g} ({pct(f.layer['spread'])})",
                     f"{f.ratio:.2f}", "yes" if f.ok else "**no**"])  # fmt: skip
    head = ["application", "MPI", "point", "figure", f"{ref} (spread)", "the layer (spread)",
            f"the layer's time / {ref}'s", "at most 5% above"]  # fmt: skip
    over = sum(f.measured and not f.ok for f in figs)
    text = table(head, body, right_from=4)
    text += f"\n{over} of {sum(f.measured for f in figs)} figures more than 5% above.\n\n"
    return text + made_by(res) + "\n"


def repeatability_rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Per MPI and benchmark: how the first two runs' figures differ, point by point."""
    out = []
    for mpi, case in dict.fromkeys((r["mpi"], r["case"]) for r in res["rows"]):
        diffs = []
        for r in (r for r in res["rows"] if (r["mpi"], r["case"]) == (mpi, case)):
            a, b = r["reps"][:2]
            if a + b > 0:
                diffs.append((abs(a - b) / ((a + b) / 2), r["key"]))
        worst = max(diffs, key=lambda d: d[0])
        out.append({
            "mpi": mpi, "case": case, "points": len(diffs),
            "within": sum(d <= 0.05 for d, _ in diffs),
            "median": sorted(d for d, _ in diffs)[len(diffs) // 2], "worst": worst,
        })  # fmt: skip
    return out


def block_repeatability(res: dict[str, Any]) -> str:
    rows = [
        [r["mpi"], r["case"], f"{r['within']} of {r['points']}", pct(r["median"]),
         f"{pct(r['worst'][0])} ({', '.join(str(v) for v in r['worst'][1].values())})"]
        for r in repeatability_rows(res)
    ]  # fmt: skip
    head = ["MPI", "benchmark", "points within 5%", "median difference", "largest (at)"]
    return table(head, rows, right_from=2) + "\n" + made_by(res) + "\n"


def block_heuristic(res: dict[str, Any]) -> str:
    rows = []
    for name in dict.fromkeys(r["parameters"] for r in res["rows"]):
        rs = [r for r in res["rows"] if r["parameters"] == name]
        worst = max(rs, key=lambda r: r["miss"])
        rows.append([name, str(len(rs)), str(sum(r["miss"] <= 1e-9 for r in rs)),
                     str(sum(r["miss"] <= 0.01 for r in rs)), f"{100 * worst['miss']:.1f}%",
                     f"{worst['clusters']}, {size(worst['bytes'])}",
                     f"{100 * max(r['miss_of_segment_search'] for r in rs):.1f}%"])  # fmt: skip
    head = ["parameters", "cases", "optimal", "within 1%", "largest miss", "at",
            "largest miss against the segment search alone"]  # fmt: skip
    return table(head, rows, right_from=1) + "\n" + made_by(res) + "\n"
