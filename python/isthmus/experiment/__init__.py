"""`isthmus experiment list|run|render`: the project's measurements as data.

An experiment is a TOML file, `experiments/<area>/<name>.toml`:

    title = "Latency-bound collectives, 4 clusters x 2 ranks"
    kind = "coll"                 # the runner (python/isthmus/runners/<kind>.py)
    mpis = ["mpich", "openmpi"]   # the MPI libraries it measures
    repetitions = 3               # whole passes over the plan, interleaved
    minutes = 12                  # about how long a full run takes here (for `list`)
    [params]                      # the runner's parameters (its module says which)
    ...
    [quick]                       # what --quick changes: repetitions, mpis, any params
    repetitions = 1
    mpis = ["openmpi"]            # (optional) a check that it runs needs one MPI
    [quick.params]
    ...

A file may start from another: `extends = "<area>/<name>"` takes that experiment's file
and lays this one's keys on it (tables merged key by key), so that variants of one
measurement, such as a grid split by MPI to fit a working day, are written once. The
file extended must not itself extend another.

`run NAME` expands the plan into steps (one benchmark or probe run each), runs them with
a progress bar, keeps each step's outcome in `results/.work/` so that an interrupted run
resumes where it stopped, and writes `results/<area>/<name>.json`: the provenance header
(provenance.py), the parameters as run, and the rows the runner makes of the steps.
It refuses a checkout with uncommitted code unless `--allow-dirty` (the header then says
so, and `render --check` refuses the file). `render` is render.py.
"""

from __future__ import annotations

import copy
import importlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from isthmus import records
from isthmus.config import paths
from isthmus.emulate import dilation, signals
from isthmus.errors import UserError
from isthmus.experiment import provenance
from isthmus.launch.mpi import IMPLEMENTATIONS

EXPERIMENTS = paths.ROOT / "experiments"
RESULTS = paths.ROOT / "results"
# A kind is a runner module: python/isthmus/runners/<kind>.py
KINDS = tuple(sorted(f.stem for f in (Path(__file__).parent / "runners").glob("[a-z]*.py")))
TOP_KEYS = {
    "title", "kind", "mpis", "repetitions", "minutes", "params", "quick", "description", "extends",
    "dilate",
}  # fmt: skip
MPIS = tuple(IMPLEMENTATIONS)


@dataclass(frozen=True)
class Step:
    """One run of a benchmark or probe: `key` names it in the work folder."""

    key: str
    label: str
    spec: dict[str, Any]


@dataclass
class Experiment:
    name: str  # "<area>/<name>"
    path: Path
    base: Path | None  # the file it extends
    title: str
    description: str
    kind: str
    mpis: list[str]
    repetitions: int
    minutes: float
    params: dict[str, Any]
    quick: bool
    # the scale model's K for every run, bench and sweep of the experiment (docs/dilation.md)
    dilate: float | str = 1.0

    @property
    def runner(self) -> ModuleType:
        return importlib.import_module(f"isthmus.experiment.runners.{self.kind}")

    def platform_files(self) -> list[Path]:
        files = self.params.get("platforms") or [self.params.get("platform")]
        files += [c.get("platform") for c in self.params.get("cases", [])]
        return [paths.ROOT / f for f in dict.fromkeys(files) if f]


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` laid on `base`, tables merged key by key, anything else replaced."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def all_names() -> list[str]:
    return sorted(
        str(p.relative_to(EXPERIMENTS).with_suffix("")) for p in EXPERIMENTS.glob("*/*.toml")
    )


def _read(name: str) -> tuple[Path, dict[str, Any]]:
    """The file of experiment NAME and its keys, checked."""
    path = EXPERIMENTS / f"{name}.toml"
    if "/" not in name or not path.is_file():
        raise UserError(
            f"no experiment {name!r}: expected one of {', '.join(all_names())} "
            "('isthmus experiment list')"
        )
    raw = records.read_toml(path, "experiment file")
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise UserError(
            f"{path}: unknown key {unknown[0]!r}: expected {', '.join(sorted(TOP_KEYS))}"
        )
    return path, raw


# The type each top-level key must have (a key of the wrong type is named, not crashed on).
KEY_TYPES: dict[str, tuple[type, ...]] = {
    "title": (str,), "description": (str,), "kind": (str,), "mpis": (list,),
    "repetitions": (int,), "minutes": (int, float), "params": (dict,), "quick": (dict,),
}  # fmt: skip
TYPE_NAMES = {str: "a string", list: "a list", int: "a number", dict: "a table"}


def _check_types(path: Path, raw: dict[str, Any]) -> None:
    for key, types in KEY_TYPES.items():
        value = raw.get(key)
        if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
            raise UserError(f"{path}: {key} = {value!r}: expected {TYPE_NAMES[types[0]]}")
    minutes = raw.get("minutes", 0)
    if minutes < 0 or minutes != minutes or minutes == float("inf"):
        raise UserError(f"{path}: minutes = {minutes!r}: expected a number of minutes >= 0")
    quick = raw.get("quick", {})
    if set(quick) - {"repetitions", "params", "mpis"}:
        extra = sorted(set(quick) - {"repetitions", "params", "mpis"})[0]
        raise UserError(f"{path}: quick.{extra}: unknown key: expected repetitions, params, mpis")
    if not isinstance(quick.get("params", {}), dict):
        raise UserError(f"{path}: quick.params = {quick['params']!r}: expected a table")


def _dilate(path: Path, value: Any) -> float | str:
    if isinstance(value, str) and value.startswith("auto"):  # auto, auto*M: checked at the run
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 1000:
        raise UserError(f"{path}: dilate = {value!r}: expected a number from 1 to 1000 or 'auto'")
    return float(value)


def load(name: str, quick: bool = False) -> Experiment:
    """The experiment NAME ("area/name"), checked; errors name the file and the key."""
    path, raw = _read(name)
    base = None
    if "extends" in raw:
        parent = raw.pop("extends")
        if not isinstance(parent, str) or parent == name:
            raise UserError(f"{path}: extends = {parent!r}: expected another experiment's name")
        base, base_raw = _read(parent)
        if "extends" in base_raw:
            raise UserError(
                f"{path}: extends = {parent!r}, which extends another: expected a file "
                "that extends none"
            )
        raw = _merge(base_raw, raw)
    _check_types(path, raw)
    kind = raw.get("kind")
    if kind not in KINDS:
        raise UserError(f"{path}: kind = {kind!r}: expected one of {', '.join(KINDS)}")
    mpis = raw.get("mpis", list(MPIS))
    if quick and "mpis" in raw.get("quick", {}):
        mpis = raw["quick"]["mpis"]
    if not isinstance(mpis, list) or any(m not in MPIS for m in mpis):
        raise UserError(f"{path}: mpis = {mpis!r}: expected a list of {', '.join(MPIS)}")
    params = raw.get("params", {})
    reps = raw.get("repetitions", 1)
    quick_reps = raw.get("quick", {}).get("repetitions", 1)
    for key, value in (("repetitions", reps), ("quick.repetitions", quick_reps)):
        if not isinstance(value, int) or value < 1:
            raise UserError(f"{path}: {key} = {value!r}: expected a whole number >= 1")
    if quick:
        reps = quick_reps
        params = _merge(params, raw.get("quick", {}).get("params", {}))
    exp = Experiment(
        name=name,
        path=path,
        base=base,
        title=str(raw.get("title", name)),
        description=str(raw.get("description", "")),
        kind=kind,
        mpis=mpis,
        repetitions=reps,
        minutes=float(raw.get("minutes", 0)),
        params=params,
        quick=quick,
        dilate=_dilate(path, raw.get("dilate", 1.0)),
    )
    unknown = sorted(set(params) - exp.runner.PARAMS)
    if unknown:
        raise UserError(
            f"{path}: params.{unknown[0]}: unknown parameter: expected "
            f"{', '.join(sorted(exp.runner.PARAMS))}"
        )
    exp.runner.check(exp)
    return exp


def result_path(name: str, out_dir: Path | None = None) -> Path:
    return (out_dir or RESULTS) / f"{name}.json"


def _work_dir(exp: Experiment, out_dir: Path | None) -> Path:
    base = (out_dir or RESULTS) / ".work"
    return base / (exp.name + ("-quick" if exp.quick else ""))


def run(
    name: str,
    quick: bool = False,
    out_dir: Path | None = None,
    allow_dirty: bool = False,
    fresh: bool = False,
    console: Console | None = None,
) -> Path:
    """Run (or resume) an experiment; the path of the results file written."""
    console = console or Console(stderr=True)
    # SIGTERM ends a run as Ctrl-C does (signals.terminate_as_interrupt): the running step
    # stops its benchmark and takes its network down; the finished steps stay for a resume
    signals.terminate_as_interrupt()
    exp = load(name, quick)
    dirty = provenance.changed_files()
    if dirty and not allow_dirty:
        raise UserError(
            f"the checkout has uncommitted changes ({', '.join(dirty[:3])}"
            f"{', ...' if len(dirty) > 3 else ''}): commit them, or pass --allow-dirty "
            "(the results file then says so and 'render --check' refuses it)"
        )
    steps: list[Step] = exp.runner.steps(exp)
    work = _work_dir(exp, out_dir)
    plan = {
        "experiment_sha256": provenance.sha256(exp.path),
        "revision": provenance.revision(),
        "steps": [s.key for s in steps],
    }
    if exp.base:
        plan["extends_sha256"] = provenance.sha256(exp.base)
    plan_file = work / "plan.json"
    if fresh and work.exists():
        shutil.rmtree(work, ignore_errors=True)
    if plan_file.exists() and records.read_json(plan_file) != plan:
        raise UserError(
            f"{work}: holds steps of another version of {name} (its file or the code changed): "
            "pass --fresh to start again"
        )
    work.mkdir(parents=True, exist_ok=True)
    records.write_json(plan_file, plan)
    started = time.monotonic()
    outcomes: dict[str, Any] = {}
    todo = []
    for s in steps:
        f = work / f"{s.key}.json"
        if f.exists():
            outcomes[s.key] = records.read_json(f)
        else:
            todo.append(s)
    if len(todo) < len(steps):
        console.print(f"{name}: resuming, {len(steps) - len(todo)} of {len(steps)} steps done")
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("[dim]{task.fields[step]}"),
    )
    from isthmus.experiment import runners  # here: the runners import this module

    runners.dilate_runs(exp.dilate)
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(name, total=len(steps), completed=len(steps) - len(todo), step="")
        for s in todo:
            bar.update(task, step=s.label)
            outcome = exp.runner.run_step(exp, s, work)
            records.write_json(work / f"{s.key}.json", outcome)
            outcomes[s.key] = outcome
            bar.advance(task)
            if not console.is_terminal:  # a log file: one line per step, as it ends
                done = len(outcomes)
                console.print(f"{name}: {done}/{len(steps)} {s.label}", highlight=False)
    rows = exp.runner.rows(exp, steps, outcomes)
    command = "bin/isthmus experiment run " + name + (" --quick" if quick else "")
    head = provenance.header(
        experiment=name,
        experiment_file=exp.path,
        extends_file=exp.base,
        platforms=exp.platform_files(),
        mpis=exp.mpis,
        command=command,
        repetitions=exp.repetitions,
        quick=quick,
        dirty=dirty,
    )
    head["duration_s"] = round(time.monotonic() - started, 1)
    head["dilate"] = exp.dilate  # each run's K is in its own records too
    if isinstance(exp.dilate, str):  # what auto meant: K = host cores / (CPUs - this)
        head["dilation_router_share"] = dilation.ROUTER_SHARE
    out = result_path(name, out_dir)
    records.write_result(out, {"header": head, "params": exp.params, "rows": rows})
    shutil.rmtree(work, ignore_errors=True)
    console.print(f"wrote {provenance.relative(out)} ({len(rows)} rows)")
    return out


def listing() -> list[tuple[str, str, str, int, float]]:
    """(name, kind, title, steps, minutes) of every experiment, checked."""
    out = []
    for name in all_names():
        exp = load(name)
        out.append((name, exp.kind, exp.title, len(exp.runner.steps(exp)), exp.minutes))
    return out
