"""`isthmus experiment render [--check]`: tables and plots made from the results files.

Markdown files (README.md, docs/, results/) hold rendered blocks between markers:

    <!-- render collectives/latency -->
    ... written by render, never by hand ...
    <!-- end render -->

`render` rewrites every block from the JSON and redraws the plots; `render --check`
rewrites nothing and fails (exit 1) when a block differs from what its JSON gives, a
block names no known table, a plot is missing, or a results file lacks its provenance
header, names a revision outside this history, or was made from a dirty tree or with
--quick. The prose around the blocks is hand-written and repeats no numbers.

Each table is one function of BLOCKS; the performance table (targets.py) is one too.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import atomic, bounds, paths, provenance, records
from . import platform as platform_mod
from .errors import UserError
from .experiment import all_names
from .units import parse_duration

if TYPE_CHECKING:
    from .coll_explain import Candidate, Choice

RESULTS = paths.ROOT / "results"
LEGACY_FILE = paths.ROOT / "experiments" / "legacy.toml"
BLOCK = re.compile(
    r"(?P<open><!-- render (?P<name>[\w/.-]+) -->\n)(?P<body>.*?)(?P<close><!-- end render -->)",
    re.S,
)
FENCE = re.compile(r"(^```.*?^```[^\n]*$)", re.M | re.S)
MARKDOWN_GLOBS = ("README.md", "docs/**/*.md", "results/**/*.md")


def load_result(name: str) -> dict[str, Any] | None:
    """The results file of experiment NAME; None when it is not made (or is legacy)."""
    path = RESULTS / f"{name}.json"
    if not path.exists() or is_legacy(path):
        return None
    return records.read_result(path)


def load_result_at(name: str, rev: str) -> dict[str, Any] | None:
    """The results file of experiment NAME as commit `rev` had it (None if it had none)."""
    text = provenance.file_at(rev, f"results/{name}.json")
    if text is None:
        return None
    data: dict[str, Any] = json.loads(text)
    records.check(data, "result", f"results/{name}.json at {rev}")
    return data


def is_legacy(path: Path) -> bool:
    """Listed in experiments/legacy.toml and still without a provenance header."""
    return provenance.relative(path) in legacy() and "header" not in records.read_json(path)


def made_by(res: dict[str, Any]) -> str:
    h = res["header"]
    reps = h["repetitions"]
    return (
        f"Made by `{h['command']}` at {h['revision'][:12]} on {h['date'][:10]} "
        f"({h['machine']['cores']} cores, {h['machine']['cpu']}; "
        f"{', '.join(h['mpi'].values()) or 'no MPI'}), {reps} repetition{'s' * (reps > 1)}, "
        f"{max(1, round(h.get('duration_s', 0) / 60))} min: `results/{h['experiment']}.json`."
    )


def missing(name: str) -> str:
    return f"*Not measured yet: run `bin/isthmus experiment run {name}`.*\n"


def table(head: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    align = ["---" if i < right_from else "---:" for i in range(len(head))]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def ms(us: float) -> str:
    return f"{us / 1e3:.2f} ms"


def sec(s: float) -> str:
    return f"{s:.3f} s"


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def size(b: int) -> str:
    """Exact sizes for tables ("1500 B", "64 KiB"); units.format_size rounds (1.46KiB)."""
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


# ---- collectives/latency -------------------------------------------------------------


def far_latency(res: dict[str, Any]) -> str:
    """The configured wide-area latency of a latency experiment (its other point is 0)."""
    latencies: list[str] = [r["point"]["wan.latency"] for r in res["rows"]]
    return max(latencies, key=parse_duration)


def latency_rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Per case and collective: both entries at 10 ms and 0, the WAN latencies each
    spends, and the speed-up over the MPI's own (same launch) and over the MPI's own
    spinning (the plain blocking algorithm, from the case of the same MPI that spins)."""
    far_at = far_latency(res)
    latency_us = parse_duration(far_at) * 1e6
    by = {
        (r["case"], r["collective"], r["entry"], r["point"]["wan.latency"]): r for r in res["rows"]
    }
    cases = list(dict.fromkeys(r["case"] for r in res["rows"]))
    colls = list(dict.fromkeys(r["collective"] for r in res["rows"]))
    out = []
    for case in cases:
        mpi = next(r["mpi"] for r in res["rows"] if r["case"] == case)
        # the same MPI and placement spinning: its own blocking algorithm, plain
        spin_case = case.replace("sleeping", "spinning")
        spin_case = spin_case if spin_case in cases and spin_case != case else None
        for coll in colls:
            row: dict[str, Any] = {"case": case, "mpi": mpi, "collective": coll}
            for entry in ("mpi", "native"):
                far, near = by[(case, coll, entry, far_at)], by[(case, coll, entry, "0")]
                row[entry] = far
                row[f"{entry}_0"] = near
                row[f"{entry}_wan"] = (far["median_us"] - near["median_us"]) / latency_us
            row["speedup"] = row["native"]["median_us"] / row["mpi"]["median_us"]
            if spin_case:
                plain = by[(spin_case, coll, "native", far_at)]
                row["speedup_plain"] = plain["median_us"] / row["mpi"]["median_us"]
            out.append(row)
    return out


def block_latency(res: dict[str, Any]) -> str:
    rows = []
    for r in latency_rows(res):
        rows.append(
            [
                r["case"],
                r["collective"],
                f"{ms(r['mpi']['median_us'])} ({pct(r['mpi']['spread'])})",
                ms(r["mpi_0"]["median_us"]),
                f"{r['mpi_wan']:.2f}",
                f"{ms(r['native']['median_us'])} ({pct(r['native']['spread'])})",
                ms(r["native_0"]["median_us"]),
                f"{r['native_wan']:.2f}",
                f"{r['speedup']:.2f}x",
                f"{r['speedup_plain']:.2f}x" if "speedup_plain" in r else "-",
            ]
        )
    head = [
        "case",
        "collective",
        "isthmus at 10 ms",
        "at 0 ms",
        "WAN latencies",
        "MPI's own at 10 ms",
        "at 0 ms",
        "WAN latencies",
        "MPI's own / isthmus",
        "MPI's own spinning / isthmus",
    ]
    return table(head, rows, right_from=2) + "\n" + made_by(res) + "\n"


def plot_latency(res: dict[str, Any], path: Path) -> None:
    rows = latency_rows(res)
    labels = [f"{r['collective']}\n{r['case']}".replace(", ", "\n") for r in rows]
    series = [
        ("MPI's own", [r["native"]["median_us"] / 1e3 for r in rows]),
        ("isthmus", [r["mpi"]["median_us"] / 1e3 for r in rows]),
    ]
    bars(labels, series, "median time (ms)", "das-4x2, 10 ms WAN: 8-byte collectives", path, 10.0)


# ---- collectives/bandwidth and tcp-floor ---------------------------------------------


def bandwidth_rows(res: dict[str, Any], floor: dict[str, Any] | None) -> list[dict[str, Any]]:
    plat = platform_mod.load(paths.ROOT / res["params"]["platform"], res["params"].get("set", []))
    floors = {(r["collective"], r["bytes"]): r for r in (floor or {}).get("rows", [])}
    by = {(r["mpi"], r["collective"], r["bytes"], r["entry"]): r for r in res["rows"]}
    out = []
    for mpi, coll, nbytes, entry in by:
        if entry != "mpi":
            continue
        mine, theirs = by[(mpi, coll, nbytes, "mpi")], by[(mpi, coll, nbytes, "native")]
        bound = bounds.lower_bound_s(coll, plat, nbytes)
        tcp = floors.get((coll, nbytes))
        out.append(
            {
                "mpi": mpi,
                "collective": coll,
                "bytes": nbytes,
                "bound_s": bound,
                "tcp_s": tcp["median_s"] if tcp else None,
                "isthmus": mine,
                "native": theirs,
                "over_bound": mine["median_us"] / 1e6 / bound,
                "over_tcp": mine["median_us"] / 1e6 / tcp["median_s"] if tcp else None,
                "native_over_isthmus": theirs["median_us"] / mine["median_us"],
            }
        )
    return out


def block_bandwidth(res: dict[str, Any]) -> str:
    floor = load_result("collectives/tcp-floor")
    rows = []
    for r in bandwidth_rows(res, floor):
        i, n = r["isthmus"], r["native"]
        rows.append(
            [
                r["mpi"],
                r["collective"],
                size(r["bytes"]),
                sec(r["bound_s"]),
                sec(r["tcp_s"]) if r["tcp_s"] else "-",
                f"{sec(i['median_us'] / 1e6)} ({pct(i['spread'])})",
                f"{n['median_us'] / 1e6:.3f} s ({pct(n['spread'])})",
                f"{r['over_bound']:.2f}",
                f"{r['over_tcp']:.2f}" if r["over_tcp"] else "-",
                f"{r['native_over_isthmus']:.2f}x",
            ]
        )
    head = [
        "MPI",
        "collective",
        "size",
        "lower bound",
        "TCP floor",
        "isthmus",
        "MPI's own",
        "isthmus / bound",
        "isthmus / TCP floor",
        "MPI's own / isthmus",
    ]
    text = table(head, rows, right_from=2) + "\n" + made_by(res) + "\n"
    if floor:
        text += "The TCP floor: " + made_by(floor).replace("Made by", "made by", 1) + "\n"
    return text


def block_selector(res: dict[str, Any]) -> str:
    """The selector's model (src/model/coll_cost.h, run as `isthmus coll explain` runs it)
    against a coll experiment that measured the layer and the MPI's own side by side: per
    point both predictions and medians, and whether the model's choice is the faster one."""
    from . import coll_explain, plogp

    params = res["params"]
    cores = res["header"]["machine"]["cores"]  # the waiting mode as it was measured
    cases = {c["name"]: c for c in params.get("cases", [])}
    rows, agree = [], 0
    for (case, coll, point, nbytes), entries in entry_pairs(res, by="case").items():
        layer, mine = entries["mpi"], entries["native"]
        sets = [*params.get("set", []), *cases.get(case, {}).get("set", [])]
        plat = platform_mod.load(
            paths.ROOT / params["platform"], [*sets, *(f"{k}={v}" for k, v in point)]
        )
        choice = coll_explain.explain(
            plat, plogp.from_platform(plat), layer["mpi"], coll, [nbytes], cores=cores
        )[0]
        native = choice.candidates[0]
        ours = min(choice.candidates[1:], key=lambda c: c.predicted_us)
        m_ours, m_native = layer["median_us"], mine["median_us"]
        picks_ours = choice.chosen != native.name
        right = picks_ours == (m_ours < m_native) or abs(m_ours / m_native - 1) < 0.05
        agree += right
        where = ", ".join(f"{k} {v}" for k, v in point)
        errors = (native.predicted_us / m_native - 1, ours.predicted_us / m_ours - 1)
        rows.append(
            [
                case + (f", {where}" if where else ""),
                coll,
                size(nbytes),
                native.name.removeprefix("native (").removesuffix(")"),
                f"{native.predicted_us / 1e3:.1f} / {m_native / 1e3:.1f}",
                f"{ours.predicted_us / 1e3:.1f} / {m_ours / 1e3:.1f}",
                f"{errors[0]:+.0%} / {errors[1]:+.0%}",
                "ours" if picks_ours else "the MPI's",
                "yes" if right else "**no**",
            ]
        )
    head = [
        "case", "collective", "size", "the MPI's algorithm (model)",
        "the MPI's own: predicted / measured, ms", "ours: predicted / measured, ms",
        "model error: the MPI's / ours", "the model chooses", "the faster one (or within 5%)",
    ]  # fmt: skip
    return (
        table(head, rows, right_from=4)
        + f"\nThe model chooses the faster one measured (or one within 5%) at {agree} of "
        + f"{len(rows)} points. Measured: "
        + made_by(res).replace("Made by", "made by", 1)
        + "\n"
    )


Pairs = dict[tuple[Any, ...], dict[str, dict[str, Any]]]


def entry_pairs(res: dict[str, Any], by: str = "mpi") -> Pairs:
    """(MPI, collective, point, bytes) -> {"mpi": row, "native": row}, both measured; by
    "case" for the case's name instead of the MPI's."""
    pairs: Pairs = {}
    for r in res["rows"]:
        key = (r[by], r["collective"], tuple(sorted(r["point"].items())), r["bytes"])
        pairs.setdefault(key, {})[r["entry"]] = r
    return {k: v for k, v in pairs.items() if set(v) == {"mpi", "native"}}


def over_5(layer: dict[str, Any], native: dict[str, Any]) -> bool:
    """The layer's median more than 5% above the MPI's own."""
    return bool(layer["median_us"] > 1.05 * native["median_us"])


def slower_beyond_spread(layer: dict[str, Any], native: dict[str, Any]) -> bool:
    """Issue 26's test of one grid point: over_5, and the layer's fastest call slower than
    the MPI's slowest."""
    return over_5(layer, native) and bool(layer["calls_min_us"] > native["calls_max_us"])


@dataclass
class Control:
    """The grid's points where the layer's entry ran the MPI's own algorithm as well: both
    entries the same code, so whatever separates them is the measurement's noise."""

    points: int
    over_5: int  # medians more than 5% apart
    beyond: int  # slower_beyond_spread all the same

    def __str__(self) -> str:
        return f"{self.beyond} of {self.points} with the MPI's own in both entries"


def control(res: dict[str, Any], pairs: Pairs) -> Control | None:
    """None when the results file does not record what the layer ran. A point with no
    record is one the layer passed through without choosing (no hierarchy: docs/
    collectives.md), also the MPI's own."""
    if not any("algorithm" in r for r in res["rows"]):
        return None
    same = [e for e in pairs.values() if e["mpi"].get("algorithm", "native").startswith("native")]
    return Control(
        len(same),
        sum(over_5(e["mpi"], e["native"]) for e in same),
        sum(slower_beyond_spread(e["mpi"], e["native"]) for e in same),
    )


def ran(choice: Choice, algorithm: str | None) -> Candidate:
    """The candidate the layer ran: as its selector logged it when the results recorded it
    ("ours": a v-form's single way through the hierarchical algorithm, the best of ours but
    the linear one, which a v-form's log names), else the model's choice now."""
    cs = choice.candidates
    if algorithm == "ours":
        hier = [c for c in cs if not c.native and c.name != "linear in eager segments"]
        return min(hier, key=lambda c: c.predicted_us)
    if algorithm == "native":
        return next(c for c in cs if c.native)
    named = algorithm if any(c.name == algorithm for c in cs) else choice.chosen
    return next(c for c in cs if c.name == named)


def model_errors(res: dict[str, Any], pairs: Pairs) -> dict[tuple[str, str], list[float]]:
    """Per (MPI, collective): the model's error for the algorithm the layer ran against its
    measured median, at 64 KiB and more."""
    from . import coll_explain, plogp

    params, cores = res["params"], res["header"]["machine"]["cores"]
    sizes: dict[tuple[str, str, Any], list[int]] = {}
    for mpi, coll, point, nbytes in pairs:
        if nbytes >= 65536:
            sizes.setdefault((mpi, coll, point), []).append(nbytes)
    errors: dict[tuple[str, str], list[float]] = {}
    for (mpi, coll, point), big in sizes.items():
        sets = [*params.get("set", []), *(f"{k}={v}" for k, v in point)]
        plat = platform_mod.load(paths.ROOT / params["platform"], sets)
        params_ = plogp.from_platform(plat)
        for choice in coll_explain.explain(plat, params_, mpi, coll, sorted(big), cores=cores):
            layer = pairs[(mpi, coll, point, choice.bytes)]["mpi"]
            chosen = ran(choice, layer.get("algorithm"))
            measured = layer["median_us"]
            errors.setdefault((mpi, coll), []).append(chosen.predicted_us / measured - 1)
    return errors


def block_grid(res: dict[str, Any]) -> str:
    """Issue 26's grid for one placement: per MPI and collective, the worst ratio of the
    layer's median to the MPI's own over every size and wide-area setting, whether it is
    within 5% or the calls' spread, how many points are beyond both; and the model's error
    for the algorithm the layer chose, at 64 KiB and more."""
    pairs = entry_pairs(res)
    errors = model_errors(res, pairs)
    by_coll: dict[tuple[str, str], list[tuple[float, str, bool]]] = {}
    for (mpi, coll, point, nbytes), e in pairs.items():
        layer, native = e["mpi"], e["native"]
        ratio = layer["median_us"] / native["median_us"]
        ok = not slower_beyond_spread(layer, native)
        where = ", ".join([size(nbytes), *(f"{k} {v}" for k, v in point)])
        by_coll.setdefault((mpi, coll), []).append((ratio, where, ok))
    rows = []
    for (mpi, coll), points in sorted(by_coll.items()):
        ratio, where, ok = max(points)
        errs = errors.get((mpi, coll), [])
        rows.append(
            [
                mpi,
                coll,
                f"{ratio:.2f}",
                where,
                "yes" if ok else "**no**",
                f"{sum(not p[2] for p in points)} of {len(points)}",
                f"{statistics.median(abs(x) for x in errs):.0%}" if errs else "-",
                f"{max(errs, key=abs):+.0%}" if errs else "-",
                f"{sum(abs(x) <= 0.2 for x in errs)} of {len(errs)}" if errs else "-",
            ]
        )
    head = [
        "MPI", "collective", "worst: the layer / the MPI's own", "at",
        "within 5% or the spread", "points beyond both", "model error, median (>= 64 KiB)",
        "worst", "within 20%",
    ]  # fmt: skip
    ctl = control(res, pairs)
    noise = (
        f"\nThe same code in both entries (points where the layer ran the MPI's own "
        f"algorithm too): {ctl.over_5} of {ctl.points} points more than 5% apart by the "
        f"median, {ctl.beyond} of them beyond the spread.\n"
        if ctl
        else ""
    )
    return table(head, rows, right_from=2) + noise + "\n" + made_by(res) + "\n"


def plot_bandwidth(res: dict[str, Any], path: Path) -> None:
    rows = bandwidth_rows(res, load_result("collectives/tcp-floor"))
    labels = [f"{r['collective']}\n{size(r['bytes'])}\n{r['mpi']}" for r in rows]
    series = [
        ("lower bound", [r["bound_s"] for r in rows]),
        ("TCP floor", [r["tcp_s"] or 0.0 for r in rows]),
        ("isthmus", [r["isthmus"]["median_us"] / 1e6 for r in rows]),
        ("MPI's own", [r["native"]["median_us"] / 1e6 for r in rows]),
    ]
    bars(labels, series, "median time (s)", "das-4x2, 1 MB/s links: bandwidth-bound", path)


def block_tcp_floor(res: dict[str, Any]) -> str:
    rows = [
        [
            r["collective"],
            size(r["bytes"]),
            sec(r["lower_bound_s"]),
            f"{sec(r['median_s'])} ({pct(r['spread'])})",
            sec(r["min_s"]),
            sec(r["max_s"]),
            f"{r['median_s'] / r['lower_bound_s']:.2f}",
        ]
        for r in res["rows"]
    ]
    head = [
        "collective",
        "size",
        "lower bound",
        "TCP, median",
        "fastest",
        "slowest",
        "median / bound",
    ]
    return table(head, rows, right_from=2) + "\n" + made_by(res) + "\n"


# ---- collectives/zero --------------------------------------------------------------------


def zero_rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Per case: the layer over the MPI's own at every (collective, size) point."""
    by = {(r["case"], r["collective"], r["bytes"], r["entry"]): r for r in res["rows"]}
    out = []
    for case in dict.fromkeys(r["case"] for r in res["rows"]):
        pts = []
        for (c, coll, nbytes, entry), r in by.items():
            if c == case and entry == "mpi":
                native = by[(c, coll, nbytes, "native")]
                spread = max(r["spread"], native["spread"])
                pts.append((r["median_us"] / native["median_us"], spread, coll, nbytes))
        worst = max(pts)
        out.append({
            "case": case, "points": len(pts), "median": statistics.median(p[0] for p in pts),
            "over_3": sum(p[0] > 1.03 for p in pts),
            "over_3_outside_spread": sum(p[0] > 1.03 and p[0] - 1 > p[1] for p in pts),
            "worst": worst,
        })  # fmt: skip
    return out


def block_zero(res: dict[str, Any]) -> str:
    rows = [
        [r["case"], str(r["points"]), f"{r['median']:.3f}", str(r["over_3"]),
         str(r["over_3_outside_spread"]),
         f"{r['worst'][0]:.2f} ({r['worst'][2]}, {size(r['worst'][3])})"]
        for r in zero_rows(res)
    ]  # fmt: skip
    head = ["case", "points", "median isthmus / MPI's own", "points over 1.03",
            "of them beyond the repetitions' spread", "worst point"]  # fmt: skip
    return table(head, rows, right_from=1) + "\n" + made_by(res) + "\n"


# ---- plots -----------------------------------------------------------------------------


def pyplot() -> Any:
    """matplotlib's pyplot, drawing to files only (no display on these machines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bars(
    labels: list[str],
    series: list[tuple[str, list[float]]],
    ylabel: str,
    title: str,
    path: Path,
    line_at: float | None = None,
) -> None:
    """Grouped bars, one group per label, one bar per series."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(9.0, 0.75 * len(labels)), 4.5))
    width = 0.8 / len(series)
    for k, (label, values) in enumerate(series):
        offset = (k - (len(series) - 1) / 2) * width
        ax.bar([i + offset for i in range(len(labels))], values, width, label=label)
    if line_at is not None:
        ax.axhline(line_at, color="gray", linestyle="--", label="one WAN latency")
    ax.set_xticks(list(range(len(labels))), labels, fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title} (isthmus experiment render)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---- registry ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    source: str  # the experiment whose results it renders
    text: Callable[[dict[str, Any]], str]
    plot: Callable[[dict[str, Any], Path], None] | None = None
    plot_file: str = ""


BLOCKS: dict[str, Block] = {
    "collectives/latency": Block(
        "collectives/latency", block_latency, plot_latency, "results/collectives/latency.png"
    ),
    "collectives/bandwidth": Block(
        "collectives/bandwidth",
        block_bandwidth,
        plot_bandwidth,
        "results/collectives/bandwidth.png",
    ),
    "collectives/tcp-floor": Block("collectives/tcp-floor", block_tcp_floor),
    "collectives/zero": Block("collectives/zero", block_zero),
    "collectives/latency-selector": Block("collectives/latency", block_selector),
    "collectives/bandwidth-selector": Block("collectives/bandwidth", block_selector),
    # every grid experiment there is (grid-2x2; the 8-rank ones one MPI a file)
    **{n: Block(n, block_grid) for n in all_names() if n.startswith("collectives/grid-")},
}


def _register_areas() -> None:
    from . import render_areas as a
    from . import render_zipper as z

    BLOCKS.update(
        {
            "net/selftest": Block("net/selftest", a.block_selftest, a.plot_selftest,
                                  "results/net/selftest.png"),
            "overhead/overhead": Block("overhead/overhead", a.block_overhead, a.plot_overhead,
                                       "results/overhead/overhead.png"),
            "pio/bench": Block("pio/bench", a.block_pio, a.plot_pio, "results/pio/bench.png"),
            "pio/bench-wan": Block("pio/bench-wan", a.block_pio, a.plot_pio,
                                   "results/pio/bench-wan.png"),
            "model/bcast": Block("model/bcast", a.block_model, a.plot_model,
                                 "results/model/bcast-error.png"),
            "demo/time": Block("demo/time", a.block_demo),
            "demo/shows": Block("demo/time", a.block_demo_shows),
            "apps/layer": Block("apps/layer", a.block_apps),
            "model/repeatability": Block("model/repeatability", a.block_repeatability),
            "model/heuristic": Block("model/heuristic", a.block_heuristic),
            "net/wait-mode": Block("net/wait-mode", a.block_wait_mode),
            "net/mpi-bandwidth": Block("net/mpi-bandwidth", a.block_mpi_bandwidth,
                                       a.plot_mpi_bandwidth, "results/net/mpi-bandwidth.png"),
            # render_zipper imports this module: its functions are looked up when called
            "zipper/p2p": Block("zipper/p2p", lambda r: z.block_p2p(r),
                                lambda r, f: z.plot_p2p(r, f), "results/zipper/p2p.png"),
            "zipper/zippers": Block("zipper/zippers", lambda r: z.block_zippers(r),
                                    lambda r, f: z.plot_zippers(r, f),
                                    "results/zipper/zippers.png"),
            "zipper/collectives": Block("zipper/collectives", lambda r: z.block_collectives(r),
                                        lambda r, f: z.plot_collectives(r, f),
                                        "results/zipper/collectives.png"),
        }
    )  # fmt: skip


_register_areas()


def render_block(name: str, where: Path | None = None) -> str:
    """The block's Markdown; its plot, if it has one, linked relative to `where`."""
    if name == "performance":
        from . import targets

        return targets.block()
    if name == "coll/registry":  # from src/coll/registry.toml, not from results
        from .config import collectives

        return collectives.markdown_table()
    if name not in BLOCKS:
        raise UserError(
            f"unknown render block {name!r}: expected performance, coll/registry or "
            f"{', '.join(BLOCKS)}"
        )
    b = BLOCKS[name]
    res = load_result(b.source)
    if not res:
        return missing(b.source)
    text = b.text(res)
    if b.plot_file:
        link = os.path.relpath(paths.ROOT / b.plot_file, (where or paths.ROOT / "x").parent)
        text = f"![{name}]({link})\n\n" + text
    return text


def markdown_files() -> list[Path]:
    found: list[Path] = []
    for pattern in MARKDOWN_GLOBS:
        found += sorted(paths.ROOT.glob(pattern))
    return [p for p in found if ".work" not in p.parts]


def legacy() -> dict[str, str]:
    """Results files made before `isthmus experiment`: path -> the experiment to replace it."""
    data = tomllib.loads(LEGACY_FILE.read_text()) if LEGACY_FILE.exists() else {}
    return {f["path"]: f["replaced_by"] for f in data.get("file", [])}


def header_problems() -> list[str]:
    """What is wrong with the provenance of the committed results files."""
    problems = []
    old = legacy()
    for path in sorted(RESULTS.rglob("*.json")):
        rel = provenance.relative(path)
        if ".work" in path.parts or is_legacy(path) or path.name == "summary.json":
            continue  # summary.json: rendered from results files (render_zipper.py)
        if rel in old:
            problems.append(f"{rel}: re-made by an experiment: remove it from {LEGACY_FILE.name}")
        try:
            head = records.read_result(path)["header"]
        except UserError as e:
            problems.append(f"{e} (no provenance header: re-make it with 'isthmus experiment run')")
            continue
        if not head["clean"]:
            problems.append(f"{rel}: made from a dirty tree ({', '.join(head['dirty_files'][:3])})")
        if head["quick"]:
            problems.append(f"{rel}: made with --quick")
        if not provenance.is_ancestor(head["revision"]):
            problems.append(f"{rel}: revision {head['revision'][:12]} is not in this history")
    for rel in old:
        if not (paths.ROOT / rel).exists():
            problems.append(f"{LEGACY_FILE.name}: {rel} is listed but does not exist: remove it")
    return problems


def render(check: bool = False) -> list[str]:
    """Rewrite (or, with check, compare) every block and plot; the problems found."""
    problems = header_problems() if check else []
    for md in markdown_files():
        text = md.read_text()
        where = provenance.relative(md)

        def fill(m: re.Match[str], where: str = where, md: Path = md) -> str:
            try:
                body = render_block(m["name"], md)
            except UserError as e:
                problems.append(f"{where}: {e}")
                return m.group(0)
            if body != m["body"] and check:
                problems.append(
                    f"{where}: block {m['name']} differs from its JSON "
                    "(run 'bin/isthmus experiment render')"
                )
            return m["open"] + body + m["close"]

        # fenced code (an example of a block in the docs) is left alone
        parts = FENCE.split(text)
        new = "".join(p if k % 2 else BLOCK.sub(fill, p) for k, p in enumerate(parts))
        if new != text and not check:
            atomic.write_text(md, new)
    for b in BLOCKS.values():
        res = load_result(b.source)
        if not (b.plot and res):
            continue
        out = paths.ROOT / b.plot_file
        if check:
            if not out.exists():
                problems.append(f"{b.plot_file}: missing (run 'bin/isthmus experiment render')")
        else:
            b.plot(res, out)
    from . import render_zipper

    p2p, zippers = load_result("zipper/p2p"), load_result("zipper/zippers")
    colls = load_result("zipper/collectives")
    if check:
        want = json.dumps(render_zipper.summary(p2p, zippers, colls), indent=2) + "\n"
        have = render_zipper.SUMMARY_FILE
        if not have.exists() or have.read_text() != want:
            problems.append(f"{provenance.relative(have)}: differs from its experiments' JSON "
                            "(run 'bin/isthmus experiment render')")  # fmt: skip
    else:
        render_zipper.write_summary(p2p, zippers, colls)
    return problems
