"""Runner `coll`: the layer's collectives against the MPI's own, `isthmus bench coll`.

Each step is one `isthmus bench coll` run (one launch of the `coll` program) on the
experiment's platform: one case (an MPI and its settings), one point of the varied
settings, one group of collectives and sizes. With `entries = "mpi,native"` the program
times the layer's collective (`MPI_X` on MPI_COMM_WORLD) and the MPI's own (the same call
on a duplicate the layer leaves alone) call by call (A B, B A, ...) in the same launch, so
each row's two entries share the machine's state. Repetitions are whole passes over the
cases, points and groups, so they are spread over the run's length.

[params]
  platform = "examples/platforms/das-4x2.toml"
  set = ["layer.collectives=isthmus"]        # --set for every step
  iterations = 10                            # timed calls per size (coll --iterations)
  warmup = 1
  entries = "mpi,native"
  timeout = "10min"                          # per step
  [[params.cases]]  name = "...", mpi = "mpich", set = ["layer.wait=auto"],
                    platform = "..." (optional: a case's own platform)
                    entries = "mpi" (optional: the case's own entries; on a zipped
                    platform only "mpi" has a meaning: no MPI's own spans the sites)
                    (default: one case per MPI of the experiment, no settings)
  [params.vary]     "wan.latency" = ["10ms", "0"]   (every combination, in order)
  [[params.groups]] collectives = ["bcast"], min_size = "4MiB", max_size = "4MiB",
                    iterations = 3 (optional: the group's own)
                    (default: one group from params.collectives, min_size, max_size)

A row per (case, point, collective, size, entry): the median over the repetitions of
each launch's median call time, the smallest and largest of them, the spread
((largest - smallest) / median) and every repetition's value.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

from isthmus.config.units import UnitError, parse_duration, parse_size
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import (
    bench_records,
    checked_cases,
    mpi_cases,
    require_platform,
    vary_points,
)

PARAMS = {
    "platform",
    "set",
    "iterations",
    "warmup",
    "entries",
    "timeout",
    "cases",
    "vary",
    "groups",
    "collectives",
    "min_size",
    "max_size",
}


def _where(exp: Experiment, key: str) -> str:
    return f"{exp.path}: params.{key}"


cases = mpi_cases


points = vary_points


def groups(exp: Experiment) -> list[dict[str, Any]]:
    given = exp.params.get("groups")
    if given is None:
        given = [
            {k: exp.params[k] for k in ("collectives", "min_size", "max_size") if k in exp.params}
        ]
    return [
        {
            "collectives": list(g["collectives"]),
            "min_size": parse_size(g.get("min_size", 8)),
            "max_size": parse_size(g.get("max_size", g.get("min_size", 8))),
            "iterations": int(g.get("iterations", exp.params.get("iterations", 10))),
        }
        for g in given
    ]


def check(exp: Experiment) -> None:
    p = exp.params
    require_platform(exp)
    checked_cases(exp)
    try:
        for g in groups(exp):
            if not g["collectives"] or g["min_size"] > g["max_size"]:
                raise UserError(
                    f"{_where(exp, 'groups')}: expected collectives and min_size <= max_size"
                )
        parse_duration(p.get("timeout", "10min"))
    except (KeyError, TypeError) as e:
        raise UserError(f"{_where(exp, 'groups')}: missing or wrong key {e}") from None
    except UnitError as e:
        raise UserError(f"{exp.path}: params: {e}") from None


def steps(exp: Experiment) -> list[Step]:
    out = []
    for rep in range(exp.repetitions):
        for ci, case in enumerate(cases(exp)):
            for pi, point in enumerate(points(exp)):
                for gi, g in enumerate(groups(exp)):
                    label = f"rep {rep + 1}, {case['name']}, " + ", ".join(
                        [f"{k}={v}" for k, v in point.items()] + ["/".join(g["collectives"])]
                    )
                    spec = {"rep": rep, "case": ci, "point": pi, "group": gi}
                    out.append(Step(f"r{rep}-c{ci}-p{pi}-g{gi}", label, spec))
    return out


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    p = exp.params
    case = cases(exp)[step.spec["case"]]
    point = points(exp)[step.spec["point"]]
    g = groups(exp)[step.spec["group"]]
    settings = [*p.get("set", []), *case["set"], *(f"{k}={v}" for k, v in point.items())]
    out = work / f"{step.key}.jsonl"
    program_args = [
        "--collectives", ",".join(g["collectives"]),
        "--min-size", str(g["min_size"]), "--max-size", str(g["max_size"]),
        "--iterations", str(g["iterations"]), "--warmup", str(p.get("warmup", 1)),
        "--entries", case["entries"] or p.get("entries", "mpi,native"),
    ]  # fmt: skip
    log: list[str] = []
    header, recs = bench_records(
        "coll", case["platform"], [*settings, "collectives.log=true"], case["mpi"], out,
        program_args, step.label, str(p.get("timeout", "10min")), log,
    )  # fmt: skip
    out.unlink()
    keep = ("collective", "entry", "bytes", "latency_median_us", "latency_min_us", "latency_max_us")
    ran = algorithms(log)
    kept = []
    for r in recs:
        if r.get("record") == "coll":
            row = {k: r[k] for k in keep}
            a = ran.get((r["collective"], r["bytes"])) or ran.get((r["collective"], 0))
            if r["entry"] == "mpi" and a:
                row["algorithm"] = a
            kept.append(row)
    return {"mpi_library": header["mpi_library"], "settings": settings, "records": kept}


SELECTED = re.compile(r"isthmus: selector: (\w+) of (\d+) B on \d+ ranks in \d+ clusters: ([^,]+),")
V_WAY = re.compile(
    r"isthmus: selector: (\w+) on \d+ ranks: (the MPI's own|ours|linear|agree on the size) \("
)
# a v-form's way as its log names it -> the candidate's name (coll explain); "ours" stays
V_WAY_ALGORITHM = {"the MPI's own": "native", "linear": "linear in eager segments"}


def algorithms(log: list[str]) -> dict[tuple[str, int], str]:
    """(collective, bytes) -> what the layer ran on MPI_COMM_WORLD, from its selector's log
    (collectives.log): a candidate's name as `isthmus coll explain` gives it; for a v-form
    that takes one way for every size, "ours" (the hierarchical algorithm), "native" or
    the linear one's name under the size 0."""
    out: dict[tuple[str, int], str] = {}
    for line in log:
        if m := SELECTED.match(line):
            out.setdefault((m[1], int(m[2])), m[3])
        elif m := V_WAY.match(line):
            out.setdefault((m[1], 0), V_WAY_ALGORITHM.get(m[2], m[2]))
    return out


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    cs, ps = cases(exp), points(exp)
    table: dict[tuple[int, int, str, int, str], list[dict[str, Any]]] = {}
    for s in steps_:
        for r in outcomes[s.key]["records"]:
            key = (s.spec["case"], s.spec["point"], r["collective"], r["bytes"], r["entry"])
            table.setdefault(key, []).append(r)
    out = []
    for (ci, pi, coll, size, entry), recs in table.items():
        reps = [r["latency_median_us"] for r in recs]
        med = statistics.median(reps)
        out.append(
            {
                "case": cs[ci]["name"],
                "mpi": cs[ci]["mpi"],
                "point": ps[pi],
                "collective": coll,
                "bytes": size,
                "entry": entry,
                "median_us": med,
                "min_us": min(reps),
                "max_us": max(reps),
                "spread": (max(reps) - min(reps)) / med if med else 0.0,
                "reps_us": reps,
                "calls_min_us": min(r["latency_min_us"] for r in recs),
                "calls_max_us": max(r["latency_max_us"] for r in recs),
            }
            | ({"algorithm": a} if (a := recs[0].get("algorithm")) else {})
        )
    return out
