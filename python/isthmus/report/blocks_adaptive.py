"""The adaptive layer's tables and plots (issue 24): the clusters discovery finds and what
MPI_Init pays for them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isthmus.report.plotting import pyplot
from isthmus.report.results import load_result, made_by, size, table


def _ms(s: dict[str, Any]) -> str:
    return f"{s['median']:.0f} ({s['min']:.0f} to {s['max']:.0f})"


def block_discovery(res: dict[str, Any]) -> str:
    rows = [
        [
            r["case"], r["mpi"], str(r["ranks"]),
            f"{r['exact']} of {r['runs']}" + ("" if r["exact"] == r["runs"] else " **no**"),
            _ms(r["added_init_ms"]), _ms(r["discovery_ms"]), _ms(r["params_ms"]),
            f"{r['budget_ms']:.0f}", "yes" if r["within_budget"] else "**no**",
            f"{r['pairs']} ({r['careful_pairs']})",
        ]
        for r in res["rows"]
    ]  # fmt: skip
    head = ["case", "MPI", "ranks", "platform's clusters found", "MPI_Init longer by, ms",
            "discovery, ms", "parameters, ms", "budget, ms", "within",
            "pairs (one at a time)"]  # fmt: skip
    return table(head, rows, right_from=2) + "\n" + made_by(res) + "\n"


def plot_discovery(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    rows = res["rows"]
    fig, ax = plt.subplots(figsize=(11, 4.8), constrained_layout=True)
    x = range(len(rows))
    bars = (
        ("added_init_ms", "MPI_Init longer by"),
        ("measured_ms", "discovery + parameters (rank 0)"),
    )
    for k, (key, name) in enumerate(bars):
        med = [r[key]["median"] for r in rows]
        err = [[m - r[key]["min"] for m, r in zip(med, rows, strict=True)],
               [r[key]["max"] - m for m, r in zip(med, rows, strict=True)]]  # fmt: skip
        ax.bar([i + (k - 0.5) * 0.38 for i in x], med, 0.38, yerr=err, capsize=3, label=name)
    ax.scatter(list(x), [r["budget_ms"] for r in rows], marker="_", s=600, color="black",
               label="budget: 50 ms + 20 slowest WAN round trips", zorder=3)  # fmt: skip
    for i, r in enumerate(rows):
        if r["exact"] < r["runs"]:
            ax.annotate(f"clusters wrong {r['runs'] - r['exact']}x", (i, 0), color="red",
                        fontsize=7, ha="center", va="bottom")  # fmt: skip
    ax.set_yscale("log")
    ax.set_xticks(list(x), [f"{r['case']}\n{r['mpi']}" for r in rows], fontsize=6, rotation=60,
                  ha="right")  # fmt: skip
    ax.set_ylabel("ms (median; range over repetitions)")
    ax.set_title("Discovery at MPI_Init (isthmus experiment render)", fontsize=10)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)


# Shirai, Saito and Taura's RTT-only topology inference: 15 s for 256 hosts in 4 clusters.
RTT_INFERENCE_256_S = 15.0


def block_growth(res: dict[str, Any]) -> str:
    """Modelled discovery time per case and host count (runner discovery_sim), and the
    measured one of adaptive/discovery and adaptive/discovery-dilated by ranks."""
    rows = [
        [
            r["case"], str(r["hosts"]),
            f"{r['exact']} of {r['runs']}" + ("" if r["exact"] == r["runs"] else " **no**"),
            str(r["pairs"]), str(r["careful"]), str(r["rounds"]), _ms(r["modelled_ms"]),
        ]
        for r in res["rows"]
    ]  # fmt: skip
    head = ["case", "hosts", "platform's clusters found", "pairs", "one at a time", "rounds",
            "modelled time, ms"]  # fmt: skip
    out = table(head, rows, right_from=1) + "\n" + made_by(res) + "\n"
    measured = _measured_growth()
    if measured:
        out += "\nMeasured here (rank 0's discovery time, median over repetitions):\n\n"
        head = ["experiment", "case", "MPI", "ranks", "discovery, ms", "pairs (one at a time)"]
        out += table(head, [[e, r["case"], r["mpi"], str(r["ranks"]), _ms(r["discovery_ms"]),
                             f"{r['pairs']} ({r['careful_pairs']})"] for e, r in measured],
                     right_from=3)  # fmt: skip
    return out


# adaptive/discovery's cases that show the growth with ranks (4, 8, 16)
GROWTH_CASES = (
    "two-clusters, block",
    "two-clusters, 4 hosts a side (8 ranks)",
    "two-clusters, 8 hosts a side (16 ranks)",
    "das-4x2, block",
    "das-4x4 (16 ranks), block",
    "das-4x2, round-robin, WAN 100 us (5x LAN)",
)


def _measured_growth() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name in ("adaptive/discovery", "adaptive/discovery-dilated"):
        res = load_result(name)
        found += [(name, r) for r in (res["rows"] if res else []) if r["case"] in GROWTH_CASES]
    return found


def plot_growth(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.8), constrained_layout=True)
    for case in dict.fromkeys(r["case"] for r in res["rows"]):
        rows = [r for r in res["rows"] if r["case"] == case]
        ax.plot([r["hosts"] for r in rows], [r["modelled_ms"]["median"] for r in rows],
                marker="o", label=f"modelled: {case}")  # fmt: skip
    for name, marker in (("adaptive/discovery", "x"), ("adaptive/discovery-dilated", "+")):
        rows = [r for e, r in _measured_growth() if e == name]
        if rows:
            ax.scatter([r["ranks"] for r in rows], [r["discovery_ms"]["median"] for r in rows],
                       marker=marker, color="black", label=f"measured: {name}")  # fmt: skip
    ax.scatter(
        [256],
        [RTT_INFERENCE_256_S * 1e3],
        marker="*",
        s=150,
        color="red",
        label="RTT-only inference (Shirai, Saito, Taura): 256 hosts, 4 clusters",
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("hosts (one rank each)")
    ax.set_ylabel("discovery time, ms")
    ax.set_title("How discovery's time grows (isthmus experiment render)", fontsize=10)
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def growth_far_below(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    """(measured, spread, worst, met): the modelled time at 256 hosts, every case, at least
    ten times below the RTT-only inference's 15 s."""
    at = [r for r in res["rows"] if r["hosts"] == 256]
    if not at:
        return "no run at 256 hosts", "-", "-", False
    worst = max(at, key=lambda r: r["modelled_ms"]["max"])
    least = min(r["modelled_ms"]["min"] for r in at)
    return (
        ", ".join(f"{r['case']}: {r['modelled_ms']['median']:.0f} ms" for r in at),
        f"{least:.0f}-{worst['modelled_ms']['max']:.0f} ms",
        f"{worst['modelled_ms']['max']:.0f} ms ({worst['case']})",
        all(
            r["modelled_ms"]["max"] * 10 <= RTT_INFERENCE_256_S * 1e3 and r["exact"] == r["runs"]
            for r in at
        ),
    )


# ---- the targets' measurements (report/targets.py) --------------------------------------


def exact_clusters(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    """(measured, spread, worst, met): every run found the platform's clusters."""
    rows = res["rows"]
    runs = sum(r["runs"] for r in rows)
    exact = sum(r["exact"] for r in rows)
    worst = min(rows, key=lambda r: r["exact"] / r["runs"])
    return (
        f"{exact} of {runs} runs exact ({len(rows)} cases)",
        "every run counted",
        f"{worst['exact']} of {worst['runs']} ({worst['case']}, {worst['mpi']})",
        exact == runs,
    )


def init_budget(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    """The added MPI_Init time against the budget, at 8 ranks (the target's words)."""
    rows = [r for r in res["rows"] if r["ranks"] == 8]
    over = [(r["added_init_ms"]["median"] / r["budget_ms"], r) for r in rows]
    worst = max(over, key=lambda v: v[0])
    within = sum(v <= 1.0 for v, _ in over)
    return (
        f"{within} of {len(over)} cases within",
        f"{max(r['added_init_ms']['spread'] for r in rows):.0%}",
        f"{worst[1]['added_init_ms']['median']:.0f} ms against {worst[1]['budget_ms']:.0f} "
        f"({worst[1]['case']}, {worst[1]['mpi']})",
        within == len(over),
    )


# ---- collectives with discovered parameters (adaptive/params) -----------------------------


def params_points(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (platform, MPI, collective, size): the layer's time with discovered parameters
    over its time with the file's, the same for the MPI's own (which the parameters do not
    touch: the launches' own difference), and the algorithms chosen."""
    cell: dict[tuple[str, str, str, int, str], dict[str, Any]] = {}
    for r in res["rows"]:
        mpi, how, *where = (s.strip() for s in r["case"].split(","))
        platform = where[0] if where else "two-clusters"
        cell[(platform, mpi, r["collective"], r["bytes"], f"{how} {r['entry']}")] = r
    out = []
    for (platform, mpi, coll, nbytes, key), file_ours in cell.items():
        if key != "file mpi":
            continue
        disc_ours, file_own, disc_own = (
            cell.get((platform, mpi, coll, nbytes, k))
            for k in ("discovered mpi", "file native", "discovered native")
        )
        if not disc_ours:
            continue
        out.append({
            "platform": platform, "mpi": mpi, "collective": coll, "bytes": nbytes,
            "ratio": disc_ours["median_us"] / file_ours["median_us"],
            "own_ratio": disc_own["median_us"] / file_own["median_us"]
            if disc_own and file_own else None,
            "file_us": file_ours["median_us"], "discovered_us": disc_ours["median_us"],
            "same_choice": file_ours.get("algorithm") == disc_ours.get("algorithm"),
            "file_algorithm": file_ours.get("algorithm", ""),
            "discovered_algorithm": disc_ours.get("algorithm", ""),
        })  # fmt: skip
    return out


def block_params(res: dict[str, Any]) -> str:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for p in params_points(res):
        groups.setdefault((p["platform"], p["mpi"], p["collective"]), []).append(p)
    rows = []
    for (platform, mpi, coll), pts in groups.items():
        worst = max(pts, key=lambda p: abs(p["ratio"] - 1))
        within = sum(abs(p["ratio"] - 1) <= 0.10 for p in pts)
        own = [p["own_ratio"] for p in pts if p["own_ratio"]]
        rows.append([
            platform, mpi, coll, f"{within} of {len(pts)}",
            f"{worst['ratio']:.2f} ({size(worst['bytes'])})",
            f"{min(own):.2f} to {max(own):.2f}" if own else "-",
            f"{sum(p['same_choice'] for p in pts)} of {len(pts)}",
        ])  # fmt: skip
    head = ["platform", "MPI", "collective", "points within 10%", "worst ratio (size)",
            "the MPI's own, same two launches", "same algorithm chosen"]  # fmt: skip
    return table(head, rows, right_from=3) + "\n" + made_by(res) + "\n"


def params_within(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    pts = params_points(res)
    within = sum(abs(p["ratio"] - 1) <= 0.10 for p in pts)
    worst = max(pts, key=lambda p: abs(p["ratio"] - 1))
    return (
        f"{within} of {len(pts)} points within 10%",
        f"the MPI's own {min(p['own_ratio'] or 1 for p in pts):.2f} to "
        f"{max(p['own_ratio'] or 1 for p in pts):.2f}",
        f"{worst['ratio']:.2f}x ({worst['platform']}, {worst['mpi']}, {worst['collective']} "
        f"{size(worst['bytes'])})",
        within == len(pts),
    )
