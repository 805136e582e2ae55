"""Runner `repeat`: the same command many times, its wall time each time; a stall is a
run far slower than the median of its own case (issue 43: Open MPI 8-rank runs that
took 50-240 s where the same command takes 5 s).

Each step is one `isthmus run` of one case; repetitions interleave the cases. A run that
fails or passes its timeout is kept as a result (its last line), not an error.

[params]
  cases = [{name = "...", mpi = "openmpi", platform = "examples/platforms/...",
            set = ["KEY=VALUE", ...], program = "tests/{mpi}/coll_check",
            args = ["12", "150"], env = {NAME = "VALUE"}}]
                                        program: in the build directory, {mpi} replaced;
                                        env: added to the run's environment (optional)
  timeout = 400                         each run's --timeout, seconds
  bound = 3                             a run within bound x its case's median is no stall
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import check_cases, dilate_args

PARAMS = {"cases", "timeout", "bound"}
CASE_KEYS = {"name", "mpi", "platform", "set", "program", "args", "env"}


def check(exp: Experiment) -> None:
    for c in check_cases(exp):
        if set(c) - CASE_KEYS:
            raise UserError(
                f"{exp.path}: params.cases: case {c['name']!r}: unknown key "
                f"{sorted(set(c) - CASE_KEYS)[0]!r} (expected {', '.join(sorted(CASE_KEYS))})"
            )
        if c.get("mpi") not in exp.mpis:
            raise UserError(f"{exp.path}: params.cases: case {c['name']!r}: mpi not in mpis")
        if not isinstance(c.get("program"), str):
            raise UserError(f"{exp.path}: params.cases: case {c['name']!r}: program missing")
        env = c.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise UserError(
                f"{exp.path}: params.cases: case {c['name']!r}: env: expected a table of strings"
            )
    for key in ("timeout", "bound"):
        v = exp.params.get(key)
        if not isinstance(v, int | float) or v <= 0:
            raise UserError(f"{exp.path}: params.{key}: expected a number > 0")


def steps(exp: Experiment) -> list[Step]:
    return [
        Step(f"r{rep}-c{i}", f"rep {rep + 1}, {c['name']}", {"case": i, "rep": rep})
        for rep in range(exp.repetitions)
        for i, c in enumerate(exp.params["cases"])
    ]


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    case = exp.params["cases"][step.spec["case"]]
    program = paths.build_dir() / case["program"].replace("{mpi}", case["mpi"])
    if not program.exists():
        raise UserError(f"{program} is missing: run 'make build'")
    sets = [x for s in case.get("set", []) for x in ("--set", s)]
    cmd = [str(paths.isthmus_command()), "run", *dilate_args(),
           "-p", str(paths.ROOT / case["platform"]),
           *sets, "--mpi", case["mpi"], "--timeout", f"{exp.params['timeout']:g}s", "--",
           str(program), *map(str, case.get("args", []))]  # fmt: skip
    started = time.monotonic()
    env = {**os.environ, **case.get("env", {})}
    child = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        _, err = child.communicate()
    except BaseException:  # interrupted: the run stops its job and takes its network down
        child.terminate()  # (subprocess.run would SIGKILL it, leaving the network behind)
        child.communicate()
        raise
    wall = time.monotonic() - started
    last = (err.strip().splitlines() or [""])[-1]
    return {"status": child.returncode, "wall_s": round(wall, 3),
            "last": last if child.returncode else ""}  # fmt: skip


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    bound = float(exp.params["bound"])
    out = []
    for i, case in enumerate(exp.params["cases"]):
        runs = [outcomes[s.key] for s in steps_ if s.spec["case"] == i]
        walls = [r["wall_s"] for r in runs]
        med = statistics.median(walls)
        out.append({
            "case": case["name"], "mpi": case["mpi"], "runs": len(runs),
            "failed": [r["last"] for r in runs if r["status"] != 0],
            "median_s": med, "min_s": min(walls), "max_s": max(walls),
            "worst_ratio": max(walls) / med, "bound": bound,
            "stalls": sum(w > bound * med for w in walls), "walls_s": walls,
        })  # fmt: skip
    return out
