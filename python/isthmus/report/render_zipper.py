"""Rendering of the zipper experiments (experiments/zipper/): forwarded against direct,
one zipper against several, and results/zipper/summary.json.

Every figure is a ratio taken repetition by repetition inside one run (the two paths of a
repetition ran back to back), then the median and range of those ratios: the machine's
drift between repetitions cancels, what is left is the forwarding's cost. The targets are
issue 20's words (experiments/targets.toml); `summary` gives one number per target.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isthmus.records import atomic
from isthmus.report import results
from isthmus.report.plotting import pyplot
from isthmus.report.results import made_by, table

MIB4 = 4 << 20


def summary_file() -> Path:
    """results/zipper/summary.json, under the results directory render reads (a test's own
    when it points render elsewhere)."""
    return results.RESULTS / "zipper" / "summary.json"


@dataclass(frozen=True)
class Ratio:
    """Per-repetition ratios of one figure of two cases at one message size, for one MPI."""

    mpi: str
    values: list[float]
    numerator: float  # the numerator case's median
    denominator: float

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def text(self) -> str:
        return f"{self.median:.2f} ({min(self.values):.2f}-{max(self.values):.2f})"


def _row(res: dict[str, Any], mpi: str, case: str, nbytes: int) -> dict[str, Any] | None:
    rows: list[dict[str, Any]] = res["rows"]
    for r in rows:
        if r["mpi"] == mpi and r["case"] == case and r["key"].get("bytes") == nbytes:
            return r
    return None


def ratio(res: dict[str, Any], mpi: str, num: str, den: str, nbytes: int) -> Ratio | None:
    """num's figure over den's, repetition by repetition (None when either is missing)."""
    a, b = _row(res, mpi, num, nbytes), _row(res, mpi, den, nbytes)
    if not a or not b:
        return None
    vals = [x / y for x, y in zip(a["reps"], b["reps"], strict=True) if y]
    return Ratio(mpi, vals, a["median"], b["median"]) if vals else None


def mpis(res: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(r["mpi"] for r in res["rows"]))


@dataclass(frozen=True)
class Check:
    key: str  # its name in summary.json
    what: str
    num: str
    den: str
    nbytes: int
    unit: str
    target: float
    bound: str  # "at most", "at least" or "above" the target (the words)

    @property
    def at_most(self) -> bool:
        return self.bound == "at most"


P2P_CHECKS = (
    Check("latency_ratio", "8 B round trip, forwarded / direct, zipper.toml latencies",
          "forwarded/latency", "direct/latency", 8, "us", 1.3, "at most"),
    Check("latency_ratio_1ms", "8 B round trip, forwarded / direct, 1 ms links",
          "forwarded/latency-1ms", "direct/latency-1ms", 8, "us", 1.05, "at most"),
    Check("bandwidth_fraction", "bandwidth at 4 MiB, forwarded / direct",
          "forwarded/bw", "direct/bw", MIB4, "Mbit/s", 0.90, "at least"),
    Check("bibw_over_bw", "both ways / one way through one forwarder, 4 MiB",
          "forwarded/bibw", "forwarded/bw", MIB4, "Mbit/s", 1.8, "at least"),
)  # fmt: skip
ZIPPER_CHECKS = (
    Check("aggregate_2", "4 pairs, 512 KiB messages: 2 zippers / 1", "pairs/2", "pairs/1",
          512 << 10, "Mbit/s", 1.8, "at least"),
    Check("aggregate_4", "4 pairs, 512 KiB messages: 4 zippers / 1", "pairs/4", "pairs/1",
          512 << 10, "Mbit/s", 3.4, "at least"),
    # "faster with 2 zippers than with 1": strictly more
    Check("one_pair_2", "one pair, one 4 MiB message: 2 zippers / 1", "one/2", "one/1", MIB4,
          "Mbit/s", 1.0, "above"),
    # "finishes no later than over the fast one alone"
    Check("unequal_over_fast", "one 4 MiB message: a 200 and a 50 Mbit/s zipper / the 200 alone",
          "unequal/both", "unequal/fast", MIB4, "Mbit/s", 1.0, "at least"),
)  # fmt: skip


def met(c: Check, value: float) -> bool:
    if c.bound == "above":
        return value > c.target
    return value <= c.target if c.at_most else value >= c.target


def worst(res: dict[str, Any], c: Check) -> tuple[list[Ratio], Ratio | None]:
    """Every MPI's ratio for check c, and the one that decides it (the farthest from the
    target's side)."""
    rs = [r for m in mpis(res) if (r := ratio(res, m, c.num, c.den, c.nbytes))]
    if not rs:
        return rs, None
    return rs, (max if c.at_most else min)(rs, key=lambda r: r.median)


def _with_table(intro: str, head: list[str], rows: list[list[str]], res: dict[str, Any],
                right_from: int) -> str:  # fmt: skip
    """A block: its sentence, the table, and where the results file came from."""
    return intro + ":\n\n" + table(head, rows, right_from=right_from) + "\n" + made_by(res) + "\n"


def _checks_block(res: dict[str, Any], checks: tuple[Check, ...], intro: str) -> str:
    rows = []
    for mpi in mpis(res):
        for c in checks:
            r = ratio(res, mpi, c.num, c.den, c.nbytes)
            if r is None:
                continue
            verdict = "met" if met(c, r.median) else "**not met**"
            rows.append([mpi, c.what, f"{r.numerator:.1f}", f"{r.denominator:.1f}", c.unit,
                         r.text(), f"{c.bound} {c.target:g}", verdict])  # fmt: skip
    head = ["MPI", "measure", "first", "second", "unit", "ratio: median (range)", "target",
            "verdict"]  # fmt: skip
    return _with_table(intro, head, rows, res, right_from=2)


def block_p2p(res: dict[str, Any]) -> str:
    return _checks_block(res, P2P_CHECKS, "Forwarded (first) against direct (second), medians "
                         "over the repetitions; the ratio is taken per repetition")  # fmt: skip


def block_zippers(res: dict[str, Any]) -> str:
    return _checks_block(res, ZIPPER_CHECKS, "More zipper hosts (first) against one "
                         "(second), medians over the repetitions; the ratio is taken per "
                         "repetition")  # fmt: skip


def plot_checks(res: dict[str, Any], path: Path, checks: tuple[Check, ...], title: str) -> None:
    plt = pyplot()
    found = [(c, [ratio(res, m, c.num, c.den, c.nbytes) for m in mpis(res)]) for c in checks]
    found = [(c, rs) for c, rs in found if any(rs)]
    fig, axes = plt.subplots(1, len(found), figsize=(3.2 * len(found), 4), squeeze=False,
                             constrained_layout=True)  # fmt: skip
    for ax, (c, rs) in zip(axes[0], found, strict=True):
        names = [r.mpi for r in rs if r]
        meds = [r.median for r in rs if r]
        lo = [r.median - min(r.values) for r in rs if r]
        hi = [max(r.values) - r.median for r in rs if r]
        ax.bar(names, meds, yerr=[lo, hi], capsize=4, color="tab:blue")
        ax.axhline(c.target, color="gray", linestyle="--", label=f"target {c.target:g}")
        ax.set_title(c.key, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"{title} (isthmus experiment render)", fontsize=10)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_p2p(res: dict[str, Any], path: Path) -> None:
    plot_checks(res, path, P2P_CHECKS, "forwarded / direct, and both ways / one way")


def plot_zippers(res: dict[str, Any], path: Path) -> None:
    plot_checks(res, path, ZIPPER_CHECKS, "several zipper hosts / one")


# ---- collectives: forwarded against the faster of the direct link's two entries --------

COLL_TARGET = 1.25


@dataclass(frozen=True)
class CollPoint:
    mpi: str
    ranks: str  # "4 ranks"
    collective: str
    nbytes: int
    ratio: Ratio


def coll_points(res: dict[str, Any]) -> list[CollPoint]:
    """Per MPI, rank count, collective and size: the forwarded call's median time over the
    direct link's faster entry (the layer's choice or the MPI's own), repetition by
    repetition."""
    by: dict[tuple[str, str, str, int, str], list[float]] = {}
    for r in res["rows"]:
        mpi, ranks, path = (x.strip() for x in r["case"].split(","))
        key = f"{path}/{r['entry']}"
        by[(mpi, ranks, r["collective"], r["bytes"], key)] = r["reps_us"]
    out = []
    for (mpi, ranks, coll, nbytes, key), fwd in by.items():
        if key != "forwarded/mpi":
            continue
        direct = [by.get((mpi, ranks, coll, nbytes, f"direct/{e}")) for e in ("mpi", "native")]
        found = [d for d in direct if d]
        if not found:
            continue
        best = [min(vals) for vals in zip(*found, strict=True)]
        vals = [f / b for f, b in zip(fwd, best, strict=True) if b]
        if vals:
            ratio = Ratio(mpi, vals, statistics.median(fwd), statistics.median(best))
            out.append(CollPoint(mpi, ranks, coll, nbytes, ratio))
    return out


def block_collectives(res: dict[str, Any]) -> str:
    from isthmus.report.results import size

    points = coll_points(res)
    groups: dict[tuple[str, str, str], list[CollPoint]] = {}
    for pt in points:
        groups.setdefault((pt.mpi, pt.ranks, pt.collective), []).append(pt)
    rows = []
    for (mpi, ranks, coll), pts in groups.items():
        worst = max(pts, key=lambda p: p.ratio.median)
        rows.append([mpi, ranks, coll, f"{statistics.median(p.ratio.median for p in pts):.2f}",
                     f"{worst.ratio.text()} at {size(worst.nbytes)}",
                     f"{worst.ratio.numerator / 1e3:.3f} / {worst.ratio.denominator / 1e3:.3f}",
                     "met" if worst.ratio.median <= COLL_TARGET else "**not met**"])  # fmt: skip
    head = ["MPI", "ranks", "collective", "median ratio over sizes", "worst size: ratio (range)",
            "there: forwarded / direct (ms)", f"within {COLL_TARGET}x"]  # fmt: skip
    return _with_table(
        "Forwarded time over the direct link's faster entry (the layer's choice or the MPI's "
        "own), per size the median of per-repetition ratios; per collective the median over "
        "the sizes and the worst size", head, rows, res, right_from=3)  # fmt: skip


def plot_collectives(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    points = coll_points(res)
    panels = list(dict.fromkeys((p.mpi, p.ranks) for p in points))
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(5 * max(1, len(panels)), 4),
                             squeeze=False, sharey=True, constrained_layout=True)  # fmt: skip
    for ax, (mpi, ranks) in zip(axes[0], panels, strict=False):
        for coll in dict.fromkeys(p.collective for p in points):
            here = (mpi, ranks, coll)
            pts = sorted((p for p in points if (p.mpi, p.ranks, p.collective) == here),
                         key=lambda p: p.nbytes)  # fmt: skip
            if pts:
                ax.plot([max(p.nbytes, 1) for p in pts], [p.ratio.median for p in pts], "o-",
                        ms=3, label=coll)  # fmt: skip
        ax.axhline(COLL_TARGET, color="gray", linestyle="--", label=f"target {COLL_TARGET}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes per rank")
        ax.set_title(f"{mpi}, {ranks}", fontsize=9)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("forwarded / direct")
    fig.suptitle("collectives across the zipper / over a direct link (isthmus experiment render)",
                 fontsize=10)  # fmt: skip
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _provenance(res: dict[str, Any] | None) -> dict[str, Any] | None:
    """The results file's own provenance: what made it, at which commit, when, where."""
    h = res.get("header") if res else None
    if not h:
        return None
    keys = ("experiment", "command", "revision", "clean", "date", "machine", "mpi", "dilate")
    return {"file": f"results/{h.get('experiment')}.json"} | {k: h[k] for k in keys if k in h}


COLL_EXPERIMENTS = ("zipper/collectives-openmpi", "zipper/collectives-mpich")
# The small sizes again under the scale model (K = 8): beside the undilated rows.
COLL_DILATED = "zipper/collectives-dilated-8"


def summary(
    p2p: dict[str, Any] | None,
    zippers: dict[str, Any] | None,
    colls: dict[str, dict[str, Any] | None] | None = None,
    apps: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One number per target of issue 20 (the worst MPI's median ratio), null where the
    experiment has not been run; each with its target and verdict; and under "provenance"
    where each experiment's results came from (as its results file's header says). colls:
    the collectives' results per experiment (one per MPI, COLL_EXPERIMENTS)."""
    colls = colls or {}
    runs = [("zipper/p2p", p2p), ("zipper/zippers", zippers)]
    runs += [(name, colls.get(name)) for name in (*COLL_EXPERIMENTS, COLL_DILATED)]
    runs += [("zipper/apps", apps)]
    out: dict[str, Any] = {"provenance": {name: _provenance(res) for name, res in runs}}
    for res, checks in ((p2p, P2P_CHECKS), (zippers, ZIPPER_CHECKS)):
        for c in checks:
            decides = worst(res, c)[1] if res else None
            if decides is None:
                out[c.key] = {"value": None, "target": c.target, "met": None}
                continue
            out[c.key] = {"value": round(decides.median, 3), "target": c.target,
                          "at_most": c.at_most, "met": met(c, decides.median)}  # fmt: skip
    for key, names in (("collective_worst_ratio", COLL_EXPERIMENTS),
                       ("collective_worst_ratio_dilated_8", (COLL_DILATED,))):  # fmt: skip
        points = [p for n in names if (res := colls.get(n)) for p in coll_points(res)]
        if points:
            top = max(p.ratio.median for p in points)
            out[key] = {"value": round(top, 3), "target": COLL_TARGET, "at_most": True,
                        "met": top <= COLL_TARGET}  # fmt: skip
        else:
            out[key] = {"value": None, "target": COLL_TARGET, "met": None}
    out.update(_apps_summary(apps))
    return out


def _apps_summary(apps: dict[str, Any] | None) -> dict[str, Any]:
    """Applications forwarded over direct (the worst median time ratio; no target), and the
    advised placement against the default: the bytes forwarded between networks (fewer:
    met) and the time."""
    from isthmus.report import render_zipper_apps as zapps

    pairs = zapps.pairs(apps) if apps else []
    direct = [p for p in pairs if p.against.endswith("-direct")]
    advised = [p for p in pairs if p.against.endswith("-default")]
    out: dict[str, Any] = {
        "apps_worst_ratio": {"value": None, "target": None, "met": None},
        "advised_bytes_fraction": {"value": None, "target": 1.0, "met": None},
        "advised_time_ratio": {"value": None, "target": None, "met": None},
    }
    if direct:
        top = max(statistics.median(p.ratios) for p in direct)
        out["apps_worst_ratio"]["value"] = round(top, 3)
    fractions = [p.forwarded / p.against_forwarded for p in advised
                 if p.forwarded is not None and p.against_forwarded]  # fmt: skip
    if advised and len(fractions) == len(advised):
        frac = max(fractions)
        out["advised_bytes_fraction"] = {"value": round(frac, 4), "target": 1.0,
                                         "at_most": True, "met": frac < 1.0}  # fmt: skip
        t = max(statistics.median(p.ratios) for p in advised)
        out["advised_time_ratio"]["value"] = round(t, 3)
    return out


def write_summary(
    p2p: dict[str, Any] | None,
    zippers: dict[str, Any] | None,
    colls: dict[str, dict[str, Any] | None],
    apps: dict[str, Any] | None,
) -> str:
    text = json.dumps(summary(p2p, zippers, colls, apps), indent=2) + "\n"
    summary_file().parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(summary_file(), text)
    return text
