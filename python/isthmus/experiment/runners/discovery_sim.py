"""Runner `discovery_sim`: how discovery's cost grows with the hosts, past the ranks this
machine can run: the layer's own method (src/world/discover.c) driven by a modelled
platform in build/bin/isthmus-discover-sim (src/sim/discover_sim.c says the model).

[params]
  hosts = [8, 16, 32, 64, 128, 256]
  runs = 20                          # seeded runs per case and host count
  cases = [{name = "...", clusters = 4, placement = "block", lan_rtt_us = 50,
            wan_rtt_us = 10000, noise_us = 0, careful_noise_us = 0, bandwidth_mbit = 1000}]

A row per (case, hosts): how many runs found the platform's clusters exactly, the pairs
measured, the rounds and the pairs measured one at a time, and the modelled time (median,
least, largest over the runs).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import check_cases, spread_stats

PARAMS = {"hosts", "runs", "cases"}
CASE_OPTIONS = {
    "clusters": "--clusters",
    "placement": "--placement",
    "lan_rtt_us": "--lan-rtt",
    "wan_rtt_us": "--wan-rtt",
    "noise_us": "--noise",
    "careful_noise_us": "--careful-noise",
    "bandwidth_mbit": "--bandwidth",
}


def _simulator() -> Path:
    sim = paths.build_dir() / "bin" / "isthmus-discover-sim"
    if not sim.exists():
        raise UserError(f"{sim} is missing: run 'make build'")
    return sim


def check(exp: Experiment) -> None:
    for c in check_cases(exp, platform=False):
        unknown = set(c) - {"name", *CASE_OPTIONS}
        if unknown:
            raise UserError(
                f"{exp.path}: params.cases: case {c['name']!r}: unknown {sorted(unknown)[0]!r} "
                f"(expected some of {', '.join(CASE_OPTIONS)})"
            )
    hosts = exp.params.get("hosts")
    if not isinstance(hosts, list) or not all(isinstance(h, int) and h >= 2 for h in hosts):
        raise UserError(f"{exp.path}: params.hosts: expected a list of host counts, 2 or more")


def steps(exp: Experiment) -> list[Step]:
    return [Step(f"c{i}", c["name"], {"case": i}) for i, c in enumerate(exp.params["cases"])]


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    case = exp.params["cases"][step.spec["case"]]
    options = [x for k, flag in CASE_OPTIONS.items() if k in case for x in (flag, str(case[k]))]
    out: dict[str, Any] = {}
    for hosts in exp.params["hosts"]:
        runs = str(exp.params.get("runs", 20))
        cmd = [str(_simulator()), "--hosts", str(hosts), *options, "--runs", runs,
               "--seed", str(step.spec["case"])]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise UserError(f"{step.label}: {done.stderr.strip()}")
        out[str(hosts)] = [json.loads(line) for line in done.stdout.splitlines()]
    return out


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for s in steps_:
        case = exp.params["cases"][s.spec["case"]]
        for hosts, runs in outcomes[s.key].items():
            out.append({
                "case": case["name"], "hosts": int(hosts), "clusters": case.get("clusters", 1),
                "runs": len(runs), "exact": sum(r["exact"] for r in runs),
                "pairs": max(r["pairs"] for r in runs), "rounds": max(r["rounds"] for r in runs),
                "careful": max(r["careful"] for r in runs),
                "modelled_ms": spread_stats([r["modelled_ms"] for r in runs]),
            })  # fmt: skip
    return out
