"""Runner `overhead`: what libisthmus adds to an MPI call (src/bench/overhead.c).

Each step is one launch of the `overhead` program under `isthmus run` on one cluster
without emulation (the machine's own shared-memory transports), 2 ranks: three modes
interleaved round by round in the same process (PMPI_ called directly; MPI_ through the
wrappers with profiling paused; MPI_ while the profiler records). The program reports,
per benchmark, the median over rounds of the paired difference (mode minus PMPI in the
same round) per call on the critical path, and its 10th and 90th percentiles.

[params]
  platform = "examples/platforms/one-cluster.toml"
  rounds = 400
  iterations = 4000                # per round and mode

A row per (MPI, benchmark): the added ns per call with profiling off and on (median over
the repetitions of each launch's median, the spread, every repetition's value, and the
launches' widest p10-p90), and the PMPI time per iteration.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import isthmus

PARAMS = {"platform", "rounds", "iterations"}
BENCHMARKS = ("pingpong_8B_round_trip", "allreduce_8B", "allreduce_8B_comm_self")
MODES = ("layer_off", "layer_on")


def check(exp: Experiment) -> None:
    for key in ("rounds", "iterations"):
        if not isinstance(exp.params.get(key), int) or exp.params[key] < 1:
            raise UserError(f"{exp.path}: params.{key}: expected a whole number >= 1")
    if not exp.mpis:
        raise UserError(f"{exp.path}: mpis: expected at least one MPI")


def steps(exp: Experiment) -> list[Step]:
    return [
        Step(f"r{rep}-{mpi}", f"rep {rep + 1}, {mpi}", {"mpi": mpi})
        for rep in range(exp.repetitions)
        for mpi in exp.mpis
    ]


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    mpi = step.spec["mpi"]
    profile = work / f"{step.key}.profile.json"
    args = [
        "run", "-p", str(paths.ROOT / exp.params["platform"]), "--no-emulation", "--mpi", mpi,
        "--profile", str(profile), "--timeout", "10min", "--",
        str(paths.program(mpi, "overhead")), "--rounds", str(exp.params["rounds"]),
        "--iters", str(exp.params["iterations"]),
    ]  # fmt: skip
    try:
        done = isthmus(args, step.label)
    finally:
        profile.unlink(missing_ok=True)
    try:  # rank 0 prints one JSON document (indented, over several lines)
        doc = json.loads(done.stdout[done.stdout.index("{") :])
    except (ValueError, json.JSONDecodeError):
        raise UserError(f"{step.label}: the overhead benchmark printed no JSON document") from None
    return {b: doc[b] for b in BENCHMARKS} | {"mpi_library": doc["mpi_library"]}


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for mpi in exp.mpis:
        runs = [outcomes[s.key] for s in steps_ if s.spec["mpi"] == mpi]
        for bench in BENCHMARKS:
            row: dict[str, Any] = {"mpi": mpi, "benchmark": bench}
            native = [r[bench]["per_mode"]["native"]["median_ns"] for r in runs]
            row["pmpi_ns_per_iteration"] = statistics.median(native)
            for mode in MODES:
                added = [r[bench]["added_per_call"][mode] for r in runs]
                meds = [a["median_ns"] for a in added]
                med = statistics.median(meds)
                row[mode] = {
                    "median_ns": med,
                    "min_ns": min(meds),
                    "max_ns": max(meds),
                    "reps_ns": meds,
                    "p10_ns": min(a["p10_ns"] for a in added),
                    "p90_ns": max(a["p90_ns"] for a in added),
                }
            out.append(row)
    return out
