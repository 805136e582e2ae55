"""`isthmus report DIR`: one self-contained HTML page (PNGs inlined) from a sweep's results.

What it shows, from DIR/results.json, DIR/sweep.json and the points' files (docs/sweep.md):
  - point-to-point bandwidth against message size, a line per round trip, per MPI (the
    first paper's Figures 2-7), from isthmus's pingpong/bw/bibw and from NetPIPE;
  - measured round trips against the configured link's bound 2 (L + m/B);
  - application time, WAN slowdown T(RTT)/T(lowest RTT) and "scalability" (the
    one-cluster baseline's time over the point's) against RTT, per MPI and collective
    mode (Figures 8-12): medians over repetitions, bars from the fastest to the slowest;
  - communication matrices with cluster boundaries, and bytes inside and between clusters;
  - the platform, MPI libraries, machine and command lines.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import itertools
import json
import os
import platform as host_platform
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import atomic, records
from . import platform as platform_mod
from . import profile as profile_mod
from .errors import UserError
from .platform import Platform
from .plogp import Params
from .units import UnitError, format_size, parse_duration

# Columns of a result row that are not an application's own figures.
RESERVED = {
    "id", "app", "mpi", "coll", "platform", "baseline", "repeat", "status", "exit_code",
    "wall_s", "app_s", "mpi_s", "inter_bytes", "intra_bytes", "wan_coll_bytes",
    "missing_figures", "command",
}  # fmt: skip
# Benchmark records that carry a point-to-point bandwidth: (record, size key, Mbit/s key).
BANDWIDTH_RECORDS = {
    "pingpong": "throughput_median_mbit",
    "bw": "bandwidth_mbit",
    "bibw": "bandwidth_mbit",
}


@dataclass
class SweepResults:
    out: Path
    sweep: dict[str, Any]
    rows: list[dict[str, Any]]

    @property
    def varied(self) -> list[str]:
        return [k for k, _ in self.sweep.get("vary", [])]


def load(out: Path) -> SweepResults:
    for name in ("sweep.json", "results.json"):
        if not (out / name).is_file():
            raise UserError(f"{out}: no {name}: not a sweep's directory")
    sweep = records.read_json(out / "sweep.json", what="sweep description")
    rows = records.read_json(out / "results.json", what="sweep table")
    if not rows:
        raise UserError(f"{out}: no finished points yet")
    return SweepResults(out, sweep, rows)


def rtt_ms(row: dict[str, Any]) -> float | None:
    """The round trip the point ran at, 2 x wan.latency, when the sweep varied it."""
    if row.get("baseline") or "wan.latency" not in row:
        return None
    try:
        return 2 * parse_duration(row["wan.latency"]) * 1e3
    except UnitError:
        return None


def x_label(res: SweepResults) -> str:
    return "round trip (ms)" if "wan.latency" in res.varied else "point"


def x_value(res: SweepResults, row: dict[str, Any]) -> float | str:
    r = rtt_ms(row)
    if r is not None:
        return r
    return ", ".join(f"{k}={row.get(k)}" for k in res.varied) or "-"


def point_time(row: dict[str, Any]) -> float | None:
    """The application's time: MPI_Init to MPI_Finalize, or the whole run without one."""
    if row["status"] != "ok":
        return None
    t = row.get("app_s") or row.get("wall_s")
    return float(t) if t else None


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _figure(ncols: int, title: str) -> tuple[Any, list[Any]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(5.2 * ncols, 3.9), squeeze=False)
    fig.suptitle(title)
    return fig, list(axes[0])


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


def _records(path: Path) -> list[dict[str, Any]]:
    """The JSON records an isthmus benchmark printed ({"record": ...} lines); none when
    the file is missing or is another program's output."""
    try:
        return [r for r in records.read_lines(path) if "record" in r]
    except (OSError, UserError):
        return []


def _bench_bandwidth(path: Path) -> list[tuple[int, float]]:
    out = []
    for rec in _records(path):
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
    """Axes of a figure against message size: log2 sizes, a grid and a legend."""
    ax.set_xscale("log", base=2)
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
        fig, axes = _figure(len(mpis), f"{app}: point-to-point bandwidth per round trip")
        for ax, mpi in zip(axes, mpis, strict=True):
            for label, pts in curves[(app, mpi)].items():
                pts = sorted(pts)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=label)
            ax.set_title(mpi)
            _against_size(ax, "bandwidth (Mbit/s)", log_y=False)
        figures.append((f"{app}: bandwidth against message size", _png(fig)))
    return figures


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
        fig, (ax,) = _figure(1, f"{app} ({mpi}): measured round trip vs the link's bound")
        for r, recs, bound in sorted(series, key=lambda s: s[0] or 0):
            line = ax.plot(
                [m for m, _ in recs], [t for _, t in recs], marker=".", label=f"RTT {r:g} ms"
            )
            ax.plot([m for m, _ in recs], bound, ls="--", color=line[0].get_color())
        _against_size(ax, "round trip (us); dashed: 2 (L + m/B)", log_y=True)
        figures.append((f"{app} ({mpi}): model vs measured round trip", _png(fig)))
    return figures


def _coll_latencies(path: Path, collective: str) -> dict[int, float]:
    """bytes -> median latency (us) of one collective in the coll benchmark's records."""
    return {
        int(r["bytes"]): float(r["latency_median_us"])
        for r in _records(path)
        if r.get("record") == "coll"
        and r.get("collective") == collective
        and r.get("entry", "mpi") == "mpi"
        and r["bytes"] > 0
    }


def plot_bcast_model(res: SweepResults) -> list[tuple[str, str]]:
    """The coll benchmark's Bcast with WAN-aware collectives (the two-layer pipelined
    broadcast the P-LogP optimizer shapes) against the model's prediction for it, from
    parameters derived from the configured platform (docs/model.md), per round trip; the
    MPI's own Bcast measured alongside. Medians over repetitions."""
    from . import plogp

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
        fig, (ax,) = _figure(1, f"{app} ({mpi}): Bcast, P-LogP model vs measured")
        for r in rtts:
            medians = _median_curve(by_point[(r, "isthmus")])
            sizes = sorted(medians)
            line = ax.plot(
                sizes, [medians[m] for m in sizes], marker="o", label=f"RTT {r:g} ms: isthmus"
            )
            color = line[0].get_color()
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
        _against_size(ax, "latency (us); dashed: model, dotted: native", log_y=True)
        figures.append(
            (
                f"{app} ({mpi}): Bcast with isthmus collectives against the P-LogP prediction "
                "of its two-layer pipelined broadcast (parameters from the configured "
                "platform; the gap is the MPI stack's and the shared cores' time, which the "
                "configured links do not carry)",
                _png(fig),
            )
        )
    return figures


def _pipelined_prediction(params: Params, clusters: list[int], big_m: int) -> float:
    """The model's time (us) for the broadcast WAN-aware collectives run: the two-layer
    pipelined one across clusters, the optimized single-layer tree inside one."""
    from . import model

    times = {x.name: x.shape.time for x in model.predict_bcast(params, clusters, big_m)}
    return times.get("two-layer pipelined", times["optimized"])


def _median_curve(runs: list[dict[int, float]]) -> dict[int, float]:
    sizes = sorted({m for run in runs for m in run})
    return {m: statistics.median([run[m] for run in runs if m in run]) for m in sizes}


def _pingpong_rtts(path: Path) -> list[tuple[int, float]]:
    return [
        (int(r["bytes"]), float(r["rtt_min_us"]))
        for r in _records(path)
        if r.get("record") == "pingpong" and r["bytes"] > 0
    ]


Metric = Callable[[dict[str, Any]], float | None]


def series(
    res: SweepResults, metric: Metric
) -> dict[str, dict[tuple[str, str], list[tuple[float | str, list[float]]]]]:
    """app -> (mpi, coll) -> [(x, values over repetitions)]; the baseline under coll
    'baseline'. Points that failed, or lack the value, are left out."""
    groups: dict[tuple[str, str, str, Any], list[float]] = defaultdict(list)
    for row in res.rows:
        v = metric(row) if row["status"] == "ok" else None
        if v is None:
            continue
        coll = "baseline" if row["baseline"] else row["coll"]
        groups[(row["app"], row["mpi"], coll, x_value(res, row))].append(v)
    out: dict[str, dict[tuple[str, str], list[tuple[float | str, list[float]]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for (app, mpi, coll, x), values in groups.items():
        out[app][(mpi, coll)].append((x, values))
    for app in out:
        for key in out[app]:
            out[app][key].sort(key=lambda p: (isinstance(p[0], str), p[0]))
    return out


def _figure_metric(name: str) -> Metric:
    def value(row: dict[str, Any]) -> float | None:
        v = row.get(name)
        return float(v) if isinstance(v, int | float) else None

    return value


# The panels of an application's figure: what is divided by what.
PANELS = (
    ("time (s)", "time"),
    ("slowdown T / T(lowest RTT)", "slowdown"),
    ("scalability T(one cluster) / T", "scalability"),
)


def plot_times(res: SweepResults) -> list[tuple[str, str]]:
    """Per app, a row per MPI: time, slowdown and scalability against the round trip,
    then each figure the app printed (collective mode as lines, baseline dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = series(res, point_time)
    figure_names: dict[str, list[str]] = defaultdict(list)
    for row in res.rows:
        for name in row:
            if name in RESERVED or name in res.varied or name in figure_names[row["app"]]:
                continue
            if isinstance(row[name], int | float) and not isinstance(row[name], bool):
                figure_names[row["app"]].append(name)
    out = []
    for app, by_key in times.items():
        mpis = list(dict.fromkeys(m for m, _ in by_key))
        extra = [(n, series(res, _figure_metric(n)).get(app, {})) for n in figure_names[app]]
        ncols = len(PANELS) + len(extra)
        fig, grid = plt.subplots(
            len(mpis), ncols, figsize=(4.3 * ncols, 3.3 * len(mpis)), squeeze=False
        )
        fig.suptitle(f"{app}: against the round trip")
        for r, mpi in enumerate(mpis):
            panels = [(label, kind, by_key) for label, kind in PANELS]
            panels += [(name, "value", data) for name, data in extra]
            for c, (label, kind, data) in enumerate(panels):
                _panel(grid[r][c], res, data, mpi, kind)
                grid[r][c].set_title(f"{mpi}: {label}", fontsize=10)
                grid[r][c].set_xlabel(x_label(res))
        fig.tight_layout()
        out.append((f"{app}: time, WAN slowdown, scalability and its own figures", _png(fig)))
    return out


def _panel(
    ax: Any,
    res: SweepResults,
    data: dict[tuple[str, str], list[tuple[float | str, list[float]]]],
    mpi: str,
    kind: str,
) -> None:
    base_pts = data.get((mpi, "baseline"), [])
    base = statistics.median(base_pts[0][1]) if base_pts else None
    for (m, coll), pts in data.items():
        if m != mpi or coll == "baseline" or not pts:
            continue
        first = statistics.median(pts[0][1])
        xs, med, lo, hi = [], [], [], []
        for x, values in pts:
            if kind == "slowdown":
                vals = [v / first for v in values]
            elif kind == "scalability":
                vals = [base / v for v in values] if base else []
            else:
                vals = list(values)
            if not vals:
                continue
            xs.append(x)
            med.append(statistics.median(vals))
            lo.append(med[-1] - min(vals))
            hi.append(max(vals) - med[-1])
        if xs:
            ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=coll)
    if kind in ("time", "value") and base is not None:
        ax.axhline(base, ls="--", color="grey", label="one cluster")
    if kind == "scalability":
        ax.axhline(1.0, ls=":", color="grey")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)


def matrices(res: SweepResults) -> list[tuple[str, str]]:
    """Per app: the profile of the point with the largest round trip, native and isthmus."""
    import tempfile

    figures = []
    chosen: dict[tuple[str, str], dict[str, Any]] = {}
    for row in res.rows:
        if row["baseline"] or row["status"] != "ok" or row["repeat"] != 0:
            continue
        best = chosen.get((row["app"], row["coll"]))
        if best is None or (rtt_ms(row) or 0) > (rtt_ms(best) or 0):
            chosen[(row["app"], row["coll"])] = row
    for (app, coll), row in chosen.items():
        path = res.out / "points" / row["id"] / "profile.json"
        if not path.exists():
            continue
        try:
            p = profile_mod.load(path)
        except UserError:
            continue
        with tempfile.TemporaryDirectory() as d:
            png = Path(d) / "m.png"
            profile_mod.plot(p, png)
            data = base64.b64encode(png.read_bytes()).decode()
        figures.append((f"{app}, {coll} collectives: {row['id']}", data))
    return figures


def traffic_table(res: SweepResults) -> str:
    head = "<tr><th>point</th><th>status</th><th>time (s)</th><th>inside clusters</th>"
    head += "<th>between clusters</th><th>WAN bytes of isthmus collectives</th></tr>"
    body = []
    for row in res.rows:
        t = point_time(row)
        cells = [
            html.escape(row["id"]),
            html.escape(row["status"]),
            f"{t:.3f}" if t is not None else "-",
            format_size(row["intra_bytes"]) if row.get("intra_bytes") is not None else "-",
            format_size(row["inter_bytes"]) if row.get("inter_bytes") is not None else "-",
            format_size(row["wan_coll_bytes"]) if row.get("wan_coll_bytes") is not None else "-",
        ]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(body)}</table>"


def context(res: SweepResults) -> str:
    """Platform, MPI libraries, machine, commands."""
    libs = set()
    for row in res.rows:
        path = res.out / "points" / row["id"] / "profile.json"
        if path.exists():
            with contextlib.suppress(KeyError, UserError):
                libs.add(f"{row['mpi']}: {records.read_json(path)['mpi']['library']}")
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commands: dict[tuple[str, str], str] = {}
    for row in res.rows:
        commands.setdefault((row["app"], row["mpi"]), " ".join(row.get("command", [])))
    plat = Path(res.sweep["platform"])
    try:
        plat_text = plat.read_text()
    except OSError:
        plat_text = "(not readable)"
    items = [
        f"<li>Platform <code>{html.escape(str(plat))}</code>, with "
        f"<code>{html.escape(' '.join(res.sweep.get('overrides', [])) or 'no overrides')}</code>"
        f"; varied: <code>{html.escape(json.dumps(res.sweep.get('vary', [])))}</code></li>",
        f"<li>Machine: {html.escape(host_platform.node())}, {os.cpu_count()} cores, "
        f"{html.escape(cpu)}, Linux {html.escape(host_platform.release())}</li>",
    ]
    items += [f"<li>{html.escape(lib)}</li>" for lib in sorted(libs)]
    cmds = "".join(f"<li><code>{html.escape(c)}</code></li>" for c in commands.values())
    return (
        f"<ul>{''.join(items)}</ul><h3>Commands (one per app and MPI)</h3><ul>{cmds}</ul>"
        f"<details><summary>platform file</summary><pre>{html.escape(plat_text)}</pre></details>"
    )


# After loading, the page records how many of its images loaded (the report test reads it).
IMAGE_CHECK = """<script>
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  document.body.setAttribute('data-images', ok + '/' + imgs.length);
});
</script>"""


def write(out_dir: Path, page: Path, command: str) -> None:
    res = load(out_dir)
    sections: list[tuple[str, list[tuple[str, str]]]] = [
        ("Applications against the round trip", plot_times(res)),
        ("Point-to-point bandwidth", plot_bandwidth(res)),
        ("Model against measurement", plot_rtt_bound(res) + plot_bcast_model(res)),
        ("Communication matrices (largest round trip)", matrices(res)),
    ]
    cores = os.cpu_count() or 1
    ok = sum(1 for r in res.rows if r["status"] == "ok")
    parts = [
        f"<p>Made by <code>{html.escape(command)}</code> from {len(res.rows)} points "
        f"({ok} ok) of the sweep in <code>{html.escape(str(out_dir))}</code>. Times are "
        "medians over repetitions, bars from the fastest to the slowest run. "
        f"On this machine's {cores} cores the ranks and the emulated network's router take "
        "turns when they outnumber the cores, which adds to every time.</p>"
    ]
    for title, figs in sections:
        if not figs:
            continue
        parts.append(f"<h2>{html.escape(title)}</h2>")
        for caption, data in figs:
            parts.append(
                f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            )
    parts.append("<h2>Points: time and traffic</h2>" + traffic_table(res))
    parts.append("<h2>How it was made</h2>" + context(res))
    title = f"isthmus sweep report: {', '.join(dict.fromkeys(r['app'] for r in res.rows))}"
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1400px}}img{{max-width:100%}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:2px 6px}}
figure{{margin:1em 0}}figcaption{{color:#555;font-size:13px}}</style></head>
<body><h1>{html.escape(title)}</h1>
{"".join(parts)}
{IMAGE_CHECK}
</body></html>
"""
    atomic.write_text(page, doc)
