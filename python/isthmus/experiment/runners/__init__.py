"""The experiment runners, one module per `kind` of experiment file (experiment.py).

Each module has `PARAMS` (the names of its parameters: experiment.load refuses others),
`check(exp)` (their values, one-line errors), `steps(exp)` (the plan:
one benchmark or probe run each), `run_step(exp, step, work)` (runs one; returns what to
keep, as JSON) and `rows(exp, steps, outcomes)` (the results file's rows)."""

from __future__ import annotations

import itertools
import statistics
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isthmus import records
from isthmus.config import paths
from isthmus.errors import UserError

if TYPE_CHECKING:
    from isthmus.experiment import Experiment


def require_platform(exp: Experiment) -> None:
    """params.platform names a platform file of the checkout."""
    platform = exp.params.get("platform")
    if not isinstance(platform, str) or not (paths.ROOT / platform).is_file():
        raise UserError(
            f"{exp.path}: params.platform: expected the path of a platform file in the checkout"
        )


def named_tables(exp: Experiment, key: str, one: str) -> list[dict[str, Any]]:
    """params.KEY: a non-empty list of tables, each with a name (one-line errors)."""
    items = exp.params.get(key)
    if not isinstance(items, list) or not items:
        raise UserError(f"{exp.path}: params.{key}: expected a list of {one}s")
    for c in items:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise UserError(f"{exp.path}: params.{key}: each {one} needs a name")
    return items


def check_cases(exp: Experiment, platform: bool = True) -> list[dict[str, Any]]:
    """params.cases: a non-empty list of tables, each with a name and (unless platform is
    False) a platform file of the checkout (one-line errors naming the case); the list."""
    cases = named_tables(exp, "cases", "case")
    for c in cases:
        if platform and not (paths.ROOT / str(c.get("platform"))).is_file():
            raise UserError(f"{exp.path}: params.cases: case {c['name']!r}: no platform file")
    return cases


def spread_stats(values: list[float]) -> dict[str, Any]:
    """Median, range, spread ((largest - smallest) / median) and every value."""
    med = statistics.median(values)
    spread = (max(values) - min(values)) / med if med else 0.0
    return {"median": med, "min": min(values), "max": max(values), "spread": spread,
            "reps": values}  # fmt: skip


def vary_points(exp: Experiment) -> list[dict[str, str]]:
    """params.vary ({"wan.latency": ["10ms", "0"], ...}): every combination, in order."""
    vary: dict[str, list[Any]] = exp.params.get("vary", {})
    combos = itertools.product(*vary.values())
    return [dict(zip(vary, map(str, c), strict=True)) for c in combos]


def mpi_cases(exp: Experiment) -> list[dict[str, Any]]:
    """params.cases: each an MPI, its --set settings and (optionally) a platform, coll
    entries and program arguments (after params.args) of its own (default: one case per
    MPI, no settings, params.platform)."""
    given = exp.params.get("cases")
    platform = exp.params.get("platform")
    if given is None:
        return [{"name": m, "mpi": m, "set": [], "platform": platform, "entries": None,
                 "args": []} for m in exp.mpis]  # fmt: skip
    return [
        {"name": c.get("name", c["mpi"]), "mpi": c["mpi"], "set": c.get("set", []),
         "platform": c.get("platform", platform), "entries": c.get("entries"),
         "args": c.get("args", [])}
        for c in given
    ]  # fmt: skip


def checked_cases(exp: Experiment) -> list[dict[str, Any]]:
    """mpi_cases, each case's MPI one of the experiment's and its platform file there."""
    where = f"{exp.path}: params.cases"
    try:
        cases = mpi_cases(exp)
        for c in cases:
            if c["mpi"] not in exp.mpis:
                raise UserError(f"{where}: case {c['name']!r} uses {c['mpi']!r}, not in mpis")
            if c["platform"] is not None and not (paths.ROOT / str(c["platform"])).is_file():
                raise UserError(f"{where}: case {c['name']!r}: no platform file")
    except (KeyError, TypeError) as e:
        raise UserError(f"{where}: missing or wrong key {e}") from None
    return cases


# The experiment's `dilate`: given to every run, bench and sweep (experiment.run sets it).
_DILATE: list[str] = []


def dilate_runs(k: float | str) -> None:
    _DILATE[:] = [] if k == 1.0 else ["--dilate", k if isinstance(k, str) else f"{k:g}"]


def dilate_args() -> list[str]:
    """--dilate K for a runner that starts `isthmus run` itself (empty at K = 1)."""
    return list(_DILATE)


def isthmus(
    args: list[str], label: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run this checkout's isthmus command (in cwd: the application's working directory);
    a failure is one line naming the step."""
    if args and args[0] in ("run", "bench", "sweep") and _DILATE:
        args = [args[0], *_DILATE, *args[1:]]
    child = subprocess.Popen(
        [str(paths.isthmus_command()), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    try:
        out, err = child.communicate()
    except BaseException:  # interrupted: let the child take its network down, then go
        child.terminate()
        try:  # reading on: a child blocked on a full pipe would never end
            child.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
        raise
    done = subprocess.CompletedProcess(child.args, child.returncode, out, err)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise UserError(f"{label}: isthmus {args[0]} failed ({done.returncode}): {tail}")
    return done


def bench_records(
    program: str,
    platform: str,
    settings: list[str],
    mpi: str,
    out: Path,
    program_args: list[str],
    label: str,
    timeout: str = "10min",
    log: list[str] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`isthmus bench PROGRAM` on a platform of the checkout: its header and records (and
    its standard error's lines appended to `log`, when given)."""
    done = isthmus(
        ["bench", program, "-p", str(paths.ROOT / platform),
         *(x for kv in settings for x in ("--set", kv)), "--mpi", mpi, "-o", str(out),
         "--timeout", timeout, "--", *program_args],
        label,
    )  # fmt: skip
    if log is not None:
        log += done.stderr.splitlines()
    return records.read_bench(out)
