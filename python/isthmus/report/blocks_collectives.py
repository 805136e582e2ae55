"""The collectives' tables and plots: latency and bandwidth against the MPI's own, the
selector's choices, the TCP floor and zero-byte calls (experiments collectives/*)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isthmus.config import paths
from isthmus.config import platform as platform_mod
from isthmus.config.units import parse_duration
from isthmus.model import bounds

if TYPE_CHECKING:
    pass

from isthmus.report.blocks_grid import entry_pairs
from isthmus.report.plotting import bars
from isthmus.report.results import load_result, made_by, ms, pct, sec, size, table


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
    from isthmus.coll import explain as coll_explain
    from isthmus.model import plogp

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
