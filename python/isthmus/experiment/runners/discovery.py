"""Runner `discovery`: the clusters the layer finds by measuring (layer.clusters = "auto",
docs/layer.md "Discovery"), and what MPI_Init pays for them.

Each step is one case (a platform, its --set settings) under one MPI: a short program
(the pingpong benchmark at one size) launched twice under `isthmus run --profile`, the
WAN-aware collectives on: with the platform's clusters and parameters, and with
layer.clusters = "auto" (the clusters and the links' P-LogP parameters measured at
MPI_Init). The order of the two alternates by repetition.

[params]
  cases = [{name = "...", platform = "examples/platforms/...", set = ["KEY=VALUE", ...]}]

A row per (case, MPI): how many repetitions found the platform's clusters exactly (a run
that did not finish in 2 minutes counts as not, and its message is kept); the
time MPI_Init took longer with discovery (the slowest rank's MPI_Init, auto minus
platform, paired by repetition); the time rank 0 spent in discovery and in measuring the
parameters; and the budget the issue sets, 50 ms plus 20 round trips of the platform's
slowest wide-area route (configured latencies, both ways).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config import paths, platform
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import check_cases, isthmus, spread_stats
from isthmus.profile.discovery import matches_platform

PARAMS = {"cases"}
MODES = ("platform", "auto")


def check(exp: Experiment) -> None:
    for c in check_cases(exp):
        if not all(isinstance(s, str) for s in c.get("set", [])):
            raise UserError(f"{exp.path}: params.cases: case {c['name']!r}: set is KEY=VALUE")
    if not exp.mpis:
        raise UserError(f"{exp.path}: mpis: expected at least one MPI")


def steps(exp: Experiment) -> list[Step]:
    return [
        Step(f"r{rep}-c{i}-{mpi}", f"rep {rep + 1}, {c['name']}, {mpi}",
             {"case": i, "mpi": mpi, "rep": rep})
        for rep in range(exp.repetitions)
        for i, c in enumerate(exp.params["cases"])
        for mpi in exp.mpis
    ]  # fmt: skip


def _launch(case: dict[str, Any], mpi: str, mode: str, work: Path, label: str) -> dict[str, Any]:
    prof = work / f"{label}.profile.json"
    sets = [*case.get("set", []), "layer.collectives=isthmus", f"layer.clusters={mode}"]
    args = [
        "run", "-p", str(paths.ROOT / case["platform"]), *(x for s in sets for x in ("--set", s)),
        "--mpi", mpi, "--profile", str(prof), "--timeout", "2min", "--",
        str(paths.program(mpi, "pingpong")), "--min-size", "8", "--max-size", "8",
        "--seconds-per-size", "0.05",
    ]  # fmt: skip
    try:
        isthmus(args, f"{label}, clusters {mode}")
        data = records.read_json(prof)
    finally:
        prof.unlink(missing_ok=True)
    init = [row[5] for row in data["calls"]["rows"] if row[1].startswith("MPI_Init")]
    out: dict[str, Any] = {"init_max_s": max(init), "init_rank0_s": init[0]}
    if mode == "auto":
        d = data["discovery"]
        out |= {
            "found": [r["cluster"] for r in data["ranks"]],
            "expected": data["run"]["platform"]["rank_clusters"],
            "exact": bool(matches_platform(data)),
            "discovery_s": d["seconds"],
            "params_s": data["plogp"]["seconds"],
            "pairs": d["pairs"],
            "rounds": d["rounds"],
            "careful": d["careful"],
            "cut_us": d["cut_us"],
            "wan": data["plogp"]["wan"],
            "lan": data["plogp"]["lan"],
        }
    return out


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    case = exp.params["cases"][step.spec["case"]]
    order = MODES if step.spec["rep"] % 2 == 0 else MODES[::-1]
    out: dict[str, Any] = {}
    for m in order:
        try:
            out[m] = _launch(case, step.spec["mpi"], m, work, step.label)
        except UserError as e:  # a run that did not finish is a result too: it counts
            out[m] = {"failed": str(e)}
    return out


def slowest_round_trip_ms(case: dict[str, Any]) -> float:
    """The configured round trip of the platform's slowest wide-area route (ms)."""
    p = platform.load(paths.ROOT / case["platform"], case.get("set", []))
    trips = []
    for a in p.clusters:
        for b in p.clusters:
            there, back = p.route(a.name, b.name), p.route(b.name, a.name)
            if a.name != b.name and there is not None and back is not None:
                trips.append(sum(lk.latency for lk in there + back))
    return 1e3 * max(trips, default=0.0)


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i, case in enumerate(exp.params["cases"]):
        rtt = slowest_round_trip_ms(case)
        for mpi in exp.mpis:
            runs = [outcomes[s.key] for s in steps_
                    if s.spec["case"] == i and s.spec["mpi"] == mpi]  # fmt: skip
            if not runs:
                continue
            done = [r for r in runs if "failed" not in r["auto"] and "failed" not in r["platform"]]
            auto = [r["auto"] for r in done]
            if not auto:
                continue
            added = [1e3 * (r["auto"]["init_max_s"] - r["platform"]["init_max_s"]) for r in done]
            measured = [1e3 * (a["discovery_s"] + a["params_s"]) for a in auto]
            budget = 50 + 20 * rtt
            out.append({
                "case": case["name"], "mpi": mpi, "ranks": len(auto[0]["found"]),
                "exact": sum(a["exact"] for a in auto), "runs": len(runs),
                "failed": [r[m]["failed"] for r in runs for m in MODES if "failed" in r[m]],
                "wrong": [a["found"] for a in auto if not a["exact"]],
                "slowest_rtt_ms": rtt, "budget_ms": budget,
                "added_init_ms": spread_stats(added),
                "discovery_ms": spread_stats([1e3 * a["discovery_s"] for a in auto]),
                "params_ms": spread_stats([1e3 * a["params_s"] for a in auto]),
                "measured_ms": spread_stats(measured),
                "within_budget": statistics.median(added) <= budget,
                "careful_pairs": max(a["careful"] for a in auto),
                "pairs": max(a["pairs"] for a in auto),
                "wan_L_us": statistics.median(a["wan"]["L_us"] for a in auto),
            })  # fmt: skip
    return out
