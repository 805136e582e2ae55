"""Runner `scale`: one large job under the scale model, profiled (issue 44's 64-rank job).

Each step is one `isthmus run --profile` of a program on the experiment's platform (with
the experiment's `dilate`, usually "auto"), one per MPI and repetition. It keeps the run's
real wall time and, from the profile (whose times are virtual), the K the run was made
at, the number of ranks that reached MPI_Finalize, and the slowest rank's application and
MPI seconds.

[params]
  platform = "examples/platforms/scale-8x8.toml"
  set = []
  program = "tests/{mpi}/pattern"          (in the build directory, {mpi} replaced)
  args = []
  timeout = "30min"                        (each run's --timeout, virtual)

A row per MPI: medians over the repetitions, and every value.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import isthmus

PARAMS = {"platform", "set", "program", "args", "timeout"}


def check(exp: Experiment) -> None:
    for key in ("platform", "program"):
        if not isinstance(exp.params.get(key), str):
            raise UserError(f"{exp.path}: params.{key}: expected a string")


def steps(exp: Experiment) -> list[Step]:
    return [Step(f"r{rep}-{mpi}", f"rep {rep + 1}, {mpi}", {"mpi": mpi})
            for rep in range(exp.repetitions) for mpi in exp.mpis]  # fmt: skip


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    p, mpi = exp.params, step.spec["mpi"]
    program = paths.build_dir() / p["program"].replace("{mpi}", mpi)
    if not program.exists():
        raise UserError(f"{program} is missing: run 'make build'")
    profile = work / f"{step.key}-profile.json"
    settings = [x for kv in p.get("set", []) for x in ("--set", kv)]
    started = time.monotonic()
    isthmus(["run", "-p", str(paths.ROOT / p["platform"]), *settings, "--mpi", mpi,
             "--profile", str(profile), "--timeout", p.get("timeout", "30min"), "--",
             str(program), *map(str, p.get("args", []))], step.label)  # fmt: skip
    wall = time.monotonic() - started
    data = records.read_json(profile, "profile", "profile")
    profile.unlink()
    ranks = data.get("ranks", [])
    run = data.get("run", {})
    return {
        "wall_real_s": wall,
        "dilation": run.get("dilation", 1.0),
        "ranks": len(ranks),
        "app_s": max(r["app_seconds"] for r in ranks),
        "mpi_s": max(r["mpi_seconds"] for r in ranks),
    }


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for mpi in exp.mpis:
        got = [outcomes[s.key] for s in steps_ if s.spec["mpi"] == mpi]
        row: dict[str, Any] = {"mpi": mpi, "ranks": got[0]["ranks"], "runs": len(got)}
        for key in ("wall_real_s", "dilation", "app_s", "mpi_s"):
            row[key] = {"median": statistics.median(g[key] for g in got),
                        "reps": [g[key] for g in got]}  # fmt: skip
        out.append(row)
    return out
