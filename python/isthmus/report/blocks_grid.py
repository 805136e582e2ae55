"""The grid experiments' tables (collectives/grid-*): every collective at every size under
the layer against the MPI's own, the control runs, and the model's error."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from isthmus.config import paths
from isthmus.config import platform as platform_mod

if TYPE_CHECKING:
    from isthmus.coll.explain import Candidate, Choice

from isthmus.report.results import made_by, size, table

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
    from isthmus.coll import explain as coll_explain
    from isthmus.model import plogp

    params, cores = res["params"], res["header"]["machine"]["cores"]
    if res["header"].get("dilate", 1.0) != 1.0:
        cores = 1 << 20  # dilated: every rank has its core (docs/dilation.md)
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


def model_error_within(res: dict[str, Any]) -> tuple[str, str, str, bool]:
    """The model's error for the algorithm the layer ran, at 64 KiB and more, at 1 Gbit/s:
    how many points are within 20%, and the worst."""
    pairs = {k: v for k, v in entry_pairs(res).items()
             if dict(k[2]).get("wan.bandwidth") == "1Gbit/s"}  # fmt: skip
    errors = [(e, f"{mpi} {coll}") for (mpi, coll), es in model_errors(res, pairs).items()
              for e in es]  # fmt: skip
    if not errors:
        return ("no point at 1 Gbit/s and 64 KiB or more", "-", "-", False)
    within = sum(abs(e) <= 0.2 for e, _ in errors)
    worst = max(errors, key=lambda v: abs(v[0]))
    return (
        f"{within} of {len(errors)} points within 20% "
        f"(median size of the error {statistics.median(abs(e) for e, _ in errors):.0%})",
        "-",
        f"{worst[0]:+.0%} ({worst[1]})",
        within == len(errors),
    )
