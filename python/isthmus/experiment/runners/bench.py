"""Runner `bench`: any benchmark program (`isthmus bench PROGRAM`) over MPIs and settings.

Each step is one `isthmus bench` run: one MPI of the experiment, one case (a program and
its options), one point of the varied settings. Of its records it keeps one figure
per point, a point being named by the record's `key` fields (bytes; collective and bytes).
Repetitions are whole passes over MPIs, cases and points.

[params]
  platform = "examples/platforms/two-clusters.toml"
  set = []
  [[params.cases]]  name = "pingpong", program = "pingpong", args = [...],
                    figure = "rtt_median_us", key = ["bytes"],
                    platform = "..." and set = [...] (optional: the case's own platform,
                    and settings laid on the experiment's)
  [params.vary]     "wan.latency" = ["0", "1ms"]   (every combination, in order)

A row per (MPI, case, point of vary, key): the figure's median over the repetitions,
smallest, largest, spread and every repetition's value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import bench_records, require_platform, spread_stats, vary_points

PARAMS = {"platform", "set", "cases", "vary"}
CASE_KEYS = {"name", "program", "args", "figure", "key"}
OPTIONAL_CASE_KEYS = {"platform", "set"}


points = vary_points


def check(exp: Experiment) -> None:
    p = exp.params
    require_platform(exp)
    cases = p.get("cases")
    if not isinstance(cases, list) or not cases:
        raise UserError(f"{exp.path}: params.cases: expected a list of cases")
    for c in cases:
        if not isinstance(c, dict) or not CASE_KEYS <= set(c) <= CASE_KEYS | OPTIONAL_CASE_KEYS:
            raise UserError(f"{exp.path}: params.cases: each case has the keys "
                            f"{', '.join(sorted(CASE_KEYS))} and perhaps "
                            f"{', '.join(sorted(OPTIONAL_CASE_KEYS))}")  # fmt: skip
        if "platform" in c and not (paths.ROOT / str(c["platform"])).is_file():
            raise UserError(f"{exp.path}: params.cases: case {c['name']!r}: no platform file "
                            f"{c['platform']}")  # fmt: skip
    if not exp.mpis:
        raise UserError(f"{exp.path}: mpis: expected at least one MPI")


def steps(exp: Experiment) -> list[Step]:
    out = []
    for rep in range(exp.repetitions):
        for mpi in exp.mpis:
            for ci, c in enumerate(exp.params["cases"]):
                for pi, point in enumerate(points(exp)):
                    where = "".join(f", {k}={v}" for k, v in point.items())
                    spec = {"mpi": mpi, "case": ci, "point": pi, "rep": rep}
                    label = f"rep {rep + 1}, {mpi}, {c['name']}{where}"
                    out.append(Step(f"r{rep}-{mpi}-c{ci}-p{pi}", label, spec))
    return out


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    p = exp.params
    c = p["cases"][step.spec["case"]]
    point = points(exp)[step.spec["point"]]
    settings = [*p.get("set", []), *c.get("set", []), *(f"{k}={v}" for k, v in point.items())]
    out = work / f"{step.key}.jsonl"
    platform = c.get("platform", p["platform"])
    _, recs = bench_records(c["program"], platform, settings, step.spec["mpi"], out, c["args"],
                            step.label)  # fmt: skip
    out.unlink()
    return {
        "points": [
            {"key": [r[k] for k in c["key"]], "value": float(r[c["figure"]])}
            for r in recs
            if c["figure"] in r
        ]
    }


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    table: dict[tuple[str, int, int, str], list[float]] = {}
    keys: dict[str, list[Any]] = {}
    for s in steps_:
        for pt in outcomes[s.key]["points"]:
            k = repr(pt["key"])
            keys[k] = pt["key"]
            table.setdefault((s.spec["mpi"], s.spec["case"], s.spec["point"], k), []).append(
                pt["value"]
            )
    out = []
    for (mpi, ci, pi, k), values in table.items():
        c = exp.params["cases"][ci]
        out.append({
            "mpi": mpi, "case": c["name"], "point": points(exp)[pi],
            "key": dict(zip(c["key"], keys[k], strict=True)), "figure": c["figure"],
            **spread_stats(values),
        })  # fmt: skip
    return out
