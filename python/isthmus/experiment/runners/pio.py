"""Runner `pio`: striped files against the servers' raw throughput and MPI-IO
(`isthmus pio bench`, python/isthmus/pio_bench.py).

Each step is one `isthmus pio bench` on the experiment's platform for one case (an MPI
and its settings): the paper's contiguous and BTIO-like workloads for every scheduling
strategy and schedule block, the servers' raw local throughput, and MPI-IO (ROMIO on a
local file, and with the servers as its aggregators), all in the same launch sequence.
The experiment's repetitions are pio bench's own (--repeat): each point is measured that
many times, interleaved with the others.

[params]
  platform = "examples/platforms/pio.toml"
  blocks = "4KiB:8MiB"              # schedule blocks, powers of 2
  size = "16MiB"                    # contiguous: bytes per client
  workloads = "contiguous,btio"
  [[params.cases]]  name = "openmpi", mpi = "openmpi", set = []

A row per (case, workload, operation): pio bench's summary of it (every strategy's curve
over b with medians and ranges, the best point, raw, MPI-IO, the network's peak).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config import paths
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import checked_cases, isthmus, mpi_cases, require_platform

PARAMS = {"platform", "blocks", "size", "workloads", "cases", "timeout"}


cases = mpi_cases


def check(exp: Experiment) -> None:
    require_platform(exp)
    checked_cases(exp)


def steps(exp: Experiment) -> list[Step]:
    return [Step(f"c{k}", c["name"], {"case": k}) for k, c in enumerate(cases(exp))]


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    p = exp.params
    case = cases(exp)[step.spec["case"]]
    out = work / step.key
    args = [
        "pio", "bench", "-p", str(paths.ROOT / p["platform"]),
        *(x for kv in case["set"] for x in ("--set", kv)), "--mpi", case["mpi"],
        "-o", str(out), "--repeat", str(exp.repetitions), "--blocks", p.get("blocks", "4KiB:8MiB"),
        "--size", p.get("size", "16MiB"), "--workloads", p.get("workloads", "contiguous,btio"),
        "--timeout", p.get("timeout", "30min"),
    ]  # fmt: skip
    isthmus(args, step.label)
    summary = records.read_json(out / "summary.json", what="pio bench summary")
    shutil.rmtree(out, ignore_errors=True)
    return {
        "workloads": [
            {k: w[k] for k in ("workload", "mpi_library", "ops")} for w in summary["workloads"]
        ]
    }


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for s in steps_:
        case = cases(exp)[s.spec["case"]]
        for w in outcomes[s.key]["workloads"]:
            for op, summary in w["ops"].items():
                out.append({"case": case["name"], "mpi": case["mpi"], "workload": w["workload"],
                            "op": op, **summary})  # fmt: skip
    return out
