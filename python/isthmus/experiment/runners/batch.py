"""Runner `batch`: applications as one job across two Slurm clusters (docs/slurm.md)
against the same network without Slurm and against one cluster.

Each step is one `isthmus run --profile` of one application (with one MPI) on one case's
platform, in a directory of its own (the application's inputs copied in). Every case runs
the same ranks; within a repetition the cases of an application run back to back. Kept
per step: the run's wall time, the time from the first submission or launch to the last
rank's MPI_Init return (the profile's run.init_seconds), per Slurm site the time from its
submission to its ranks' MPI_Init and how long its job queued, and the application's
deterministic output lines (those `compare` matches, in its output file or stdout).

[params]
  reference = "one cluster"                 # the case whose output the others must equal
  [[params.apps]]  name = "lammps", mpi = "openmpi",
                   command = ["lmp", "-in", "{root}/examples/apps/lammps/in.lj", ...],
                   output = "log.lammps" (default: stdout), compare = "REGEX",
                   inputs = ["examples/apps/hpcc/hpccinf.txt"]
  [[params.cases]] name = "two Slurm clusters", platform = "...", set = [...],
                   against = "same network, no Slurm"   # the batch path's overhead

A row per (application, case): wall and init medians with their spread, the Slurm sites'
submission-to-MPI_Init and queue times, whether the output equals the reference case's
in every repetition (and the first line that differs), and, for a case with `against`,
its wall and init times over that case's, repetition by repetition.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import check_cases, isthmus, named_tables, spread_stats

PARAMS = {"apps", "cases", "reference", "timeout"}


def check(exp: Experiment) -> None:
    cases = check_cases(exp)
    names = [c["name"] for c in cases]
    if exp.params.get("reference") not in names:
        raise UserError(f"{exp.path}: params.reference: expected one of the cases' names")
    for c in cases:
        if "against" in c and c["against"] not in names:
            raise UserError(f"{exp.path}: case {c['name']!r}: against: no such case")
    for a in named_tables(exp, "apps", "application"):
        if a.get("mpi") not in exp.mpis or not isinstance(a.get("command"), list):
            raise UserError(f"{exp.path}: app {a['name']!r}: expected mpi (of mpis) and command")
        try:
            re.compile(str(a.get("compare", "")))
        except re.error as e:
            raise UserError(f"{exp.path}: app {a['name']!r}: compare: {e}") from None


def steps(exp: Experiment) -> list[Step]:
    apps = exp.params["apps"]
    cases = exp.params["cases"]
    return [
        Step(f"r{rep}-{a['name']}-c{k}", f"rep {rep + 1}, {a['name']}, {c['name']}",
             {"app": i, "case": k})
        for rep in range(exp.repetitions)
        for i, a in enumerate(apps)
        for k, c in enumerate(cases)
    ]  # fmt: skip


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    app = exp.params["apps"][step.spec["app"]]
    case = exp.params["cases"][step.spec["case"]]
    where = work / step.key
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    for i in app.get("inputs", []):
        shutil.copy(paths.ROOT / i, where)
    command = [str(x).replace("{root}", str(paths.ROOT)) for x in app["command"]]
    profile = where / "profile.json"
    settings = [x for kv in case.get("set", []) for x in ("--set", kv)]
    done = isthmus(
        ["run", "-p", str(paths.ROOT / case["platform"]), *settings, "--mpi", app["mpi"],
         "--profile", str(profile), "--timeout", exp.params.get("timeout", "10min"),
         "--", *command],
        step.label,
        cwd=where,
    )  # fmt: skip
    run = json.loads(profile.read_text())["run"]
    text = (where / app["output"]).read_text() if app.get("output") else done.stdout
    pattern = re.compile(str(app.get("compare", ".")))
    lines = [ln.rstrip() for ln in text.splitlines() if pattern.search(ln)]
    shutil.rmtree(where, ignore_errors=True)
    return {
        "wall_seconds": run["wall_seconds"],
        "init_seconds": run.get("init_seconds"),
        "batch": [
            {k: b.get(k) for k in ("site", "queued_seconds", "submit_to_init_seconds")}
            for b in run.get("batch", [])
        ],
        "output": lines,
    }


def _first_difference(a: list[str], b: list[str]) -> str | None:
    for x, y in zip(a, b, strict=False):
        if x != y:
            return f"{x!r} vs {y!r}"
    return None if len(a) == len(b) else f"{len(a)} lines vs {len(b)}"


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    cases = exp.params["cases"]
    names = [c["name"] for c in cases]
    ref = names.index(exp.params["reference"])
    out = []
    for i, app in enumerate(exp.params["apps"]):

        def runs(k: int, i: int = i) -> list[dict[str, Any]]:
            return [outcomes[s.key] for s in steps_
                    if s.spec == {"app": i, "case": k} and s.key in outcomes]  # fmt: skip

        reference = runs(ref)
        for k, case in enumerate(cases):
            mine = runs(k)
            if not mine:
                continue
            diffs = [
                d for r, base in zip(mine, reference, strict=False)
                if (d := _first_difference(base["output"], r["output"])) is not None
            ]  # fmt: skip
            row: dict[str, Any] = {
                "app": app["name"], "mpi": app["mpi"], "case": case["name"],
                "wall_seconds": spread_stats([r["wall_seconds"] for r in mine]),
                "init_seconds": _stats([r["init_seconds"] for r in mine]),
                "output_lines": len(mine[0]["output"]),
                "output_identical": not diffs and bool(reference) and bool(mine[0]["output"]),
                "first_difference": diffs[0] if diffs else None,
                "sites": _sites(mine),
            }  # fmt: skip
            if "against" in case:
                base = runs(names.index(case["against"]))
                row["against"] = case["against"]
                row["wall_ratio"] = _ratios(mine, base, "wall_seconds")
                row["init_ratio"] = _ratios(mine, base, "init_seconds")
            out.append(row)
    return out


def _stats(values: list[float | None]) -> dict[str, Any] | None:
    kept = [v for v in values if v is not None]
    return spread_stats(kept) if kept else None


def _ratios(
    mine: list[dict[str, Any]], base: list[dict[str, Any]], key: str
) -> dict[str, Any] | None:
    """This case over the other, repetition by repetition (they ran back to back)."""
    pairs = [(a[key], b[key]) for a, b in zip(mine, base, strict=False) if a[key] and b[key]]
    return spread_stats([a / b for a, b in pairs]) if pairs else None


def _sites(mine: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per Slurm site: the medians of submission-to-MPI_Init and of the queue time."""
    out = []
    for j, site in enumerate(mine[0]["batch"]):
        init = [r["batch"][j]["submit_to_init_seconds"] for r in mine]
        queued = [r["batch"][j]["queued_seconds"] for r in mine]
        out.append(
            {
                "site": site["site"],
                "submit_to_init_seconds": _stats(init),
                "queued_seconds": statistics.median(q for q in queued if q is not None),
            }
        )
    return out
