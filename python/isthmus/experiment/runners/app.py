"""Runner `app`: a program under `isthmus run`, one figure from the JSON it prints.

Each step is one `isthmus run` of a program built for the case's MPI
(build/bin/MPI/PROGRAM) with the case's settings; the program prints one JSON document
on stdout (or JSON lines: the first with the figure), of which the runner keeps
`figure`. Repetitions are whole passes over the cases; `directories` are made first.

[params]
  platform = "examples/platforms/one-cluster.toml"
  set = ["clusters.local.hosts=8"]
  program = "allreduce_loop"            (or "tests/{mpi}/NAME": a test program)
  args = ["100"]
  figure = "us_per_allreduce"
  directories = ["/tmp/isthmus-pio"]   (optional: made before each step, e.g. io.directory)
  wide_area = true                     (optional: each row also has the bytes the emulated
                                        wide-area links carried, from the run's profile)
  [[params.cases]]  name = "openmpi, spinning", mpi = "openmpi", set = ["layer.wait=spin"]
                    (args = [...]: the case's own program arguments, after params.args)

A row per case: the figure's median over the repetitions, range, spread, every value.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import isthmus, mpi_cases, spread_stats

PARAMS = {"platform", "set", "program", "args", "figure", "cases", "timeout", "directories",
          "wide_area"}  # fmt: skip


def check(exp: Experiment) -> None:
    for key in ("platform", "program", "figure"):
        if not isinstance(exp.params.get(key), str):
            raise UserError(f"{exp.path}: params.{key}: expected a string")


def steps(exp: Experiment) -> list[Step]:
    cases = list(enumerate(mpi_cases(exp)))
    return [Step(f"r{rep}-c{k}", f"rep {rep + 1}, {c['name']}", {"case": k})
            for rep in range(exp.repetitions) for k, c in cases]  # fmt: skip


def _program(mpi: str, name: str) -> Path:
    """A benchmark program (build/bin/MPI/NAME), or a test program ("tests/{mpi}/NAME")."""
    if name.startswith("tests/"):
        return paths.build_dir() / name.replace("{mpi}", mpi)
    return paths.program(mpi, name)


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    p = exp.params
    case = mpi_cases(exp)[step.spec["case"]]
    settings = [x for kv in [*p.get("set", []), *case["set"]] for x in ("--set", kv)]
    for d in p.get("directories", []):
        Path(d).mkdir(parents=True, exist_ok=True)
    profile = work / f"{step.key}.profile.json"
    wide = ["--profile", str(profile)] if p.get("wide_area") else []
    done = isthmus(
        ["run", "-p", str(paths.ROOT / p["platform"]), *settings, *wide,
         "--mpi", case["mpi"], "--timeout", p.get("timeout", "5min"), "--",
         str(_program(case["mpi"], p["program"])), *p.get("args", []), *case["args"]],
        step.label,
    )  # fmt: skip
    for doc in _documents(done.stdout):
        if isinstance(doc, dict) and p["figure"] in doc:
            out = {"value": float(doc[p["figure"]])}
            if wide:
                links = records.read_json(profile, "profile", "profile")["run"]["wide_area"]
                out["wan_bytes"] = sum(int(lk["bytes"]) for lk in links)
            return out
    raise UserError(f"{step.label}: {p['program']} printed no JSON with {p['figure']}")


def _documents(stdout: str) -> list[Any]:
    """The JSON document from the first '{' on, or else every line that is one."""
    try:
        return [json.loads(stdout[stdout.index("{") :])]
    except ValueError:
        pass
    docs = []
    for line in stdout.splitlines():
        try:
            docs.append(json.loads(line))
        except ValueError:
            continue
    return docs


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for k, c in enumerate(mpi_cases(exp)):
        vals = [outcomes[s.key]["value"] for s in steps_ if s.spec["case"] == k]
        row = {"case": c["name"], "mpi": c["mpi"], "figure": exp.params["figure"],
               **spread_stats(vals)}  # fmt: skip
        wan = [outcomes[s.key]["wan_bytes"] for s in steps_
               if s.spec["case"] == k and "wan_bytes" in outcomes[s.key]]  # fmt: skip
        if wan:
            row["wan_bytes"] = statistics.median(wan)
        out.append(row)
    return out
