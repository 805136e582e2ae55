"""Runner `model_bcast`: the P-LogP model's broadcast against the emulated network and
SimGrid SMPI, and logp's parameters against the configured links.

Broadcast cases, per MPI: `isthmus bench logp` measures the platform's parameters and
`isthmus model fit` turns them into a parameter file; then `isthmus bench bcast` runs the
model's two-layer pipelined broadcast (shape chosen by the optimizer from those
parameters; each record carries the model's prediction) beside MPI_Bcast, once per
repetition; and SMPI simulates the same program on the exported platform.

Fidelity cases, per MPI: logp across the wide-area link as configured and with its
latency set to 0: L(d) - L(0) is the link's own delay (the MPI stack's latency is in
both), and the least-squares slope of g(m) from 64 KiB on its rate.

[params]
  [[params.bcast]]     name, platform, set, logp_max_size, min_size, max_size
  [[params.fidelity]]  name, platform, set, max_size, delay ("1ms"), rate ("1Gbit/s")
  iterations = 5       bcast's timed calls per size
  logp_args = []       more options for logp (e.g. a looser --precision)

Rows: kind "bcast" per (MPI, case, size): predicted, measured (median over repetitions,
every repetition, spread), SMPI, MPI_Bcast, error = (predicted - measured) / measured;
kind "fidelity" per (MPI, case): measured delay and rate against the configured ones.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config import paths
from isthmus.config.units import UnitError, parse_duration, parse_rate, parse_size
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import bench_records, isthmus
from isthmus.model.simgrid import smpirun_command

PARAMS = {"bcast", "fidelity", "iterations", "logp_args"}
SMPI_SOURCES = (
    "bench/bcast.c",
    "bench/bench_common.c",
    "bench/bench_window.c",
    "coll/common/tree.c",
    "model/plogp_params.c",
    "model/plogp_model.c",
)


def check(exp: Experiment) -> None:
    try:
        for c in exp.params.get("bcast", []):
            assert (paths.ROOT / c["platform"]).is_file(), c["platform"]
            parse_size(c["logp_max_size"]), parse_size(c["min_size"]), parse_size(c["max_size"])
        for c in exp.params.get("fidelity", []):
            assert (paths.ROOT / c["platform"]).is_file(), c["platform"]
            parse_size(c["max_size"]), parse_duration(c["delay"]), parse_rate(c["rate"])
    except (KeyError, TypeError) as e:
        raise UserError(f"{exp.path}: params: a case misses or has a wrong key {e}") from None
    except AssertionError as e:
        raise UserError(f"{exp.path}: params: no platform file {e}") from None
    except UnitError as e:
        raise UserError(f"{exp.path}: params: {e}") from None


def steps(exp: Experiment) -> list[Step]:
    """logp and fit per case first, then the broadcast runs repetition by repetition (so
    that repetitions are spread over the run), then SMPI and the fidelity runs."""
    bc, fid = exp.params.get("bcast", []), exp.params.get("fidelity", [])

    def step(key: str, what: str, **spec: Any) -> Step:
        c = (fid if spec["do"] == "fidelity" else bc)[spec["case"]]
        return Step(key, f"{spec['mpi']}, {c['name']}: {what}", spec)

    out = [step(f"{m}-logp-{i}", "logp", mpi=m, case=i, do="logp")
           for m in exp.mpis for i in range(len(bc))]  # fmt: skip
    out += [step(f"{m}-bcast-{i}-r{r}", f"bcast, rep {r + 1}", mpi=m, case=i, do="bcast", rep=r)
            for r in range(exp.repetitions) for m in exp.mpis for i in range(len(bc))]  # fmt: skip
    out += [step(f"{m}-smpi-{i}", "SMPI", mpi=m, case=i, do="smpi")
            for m in exp.mpis for i in range(len(bc))]  # fmt: skip
    delays = ("configured", "zero")
    out += [step(f"{m}-fid-{i}-{at}", f"logp, {at} delay", mpi=m, case=i, do="fidelity", at=at)
            for m in exp.mpis for i in range(len(fid)) for at in delays]  # fmt: skip
    return out


def _params_file(work: Path, mpi: str, case: int) -> Path:
    """The parameter file fitted by the case's logp step (kept in its outcome)."""
    f = work / f"{mpi}-params-{case}.txt"
    if not f.exists():
        f.write_text(records.read_json(work / f"{mpi}-logp-{case}.json")["params"])
    return f


def _bcast_args(c: dict[str, Any], params: Path, iterations: int) -> list[str]:
    return [
        "--params",
        str(params),
        "--min-size",
        str(parse_size(c["min_size"])),
        "--max-size",
        str(parse_size(c["max_size"])),
        "--iterations",
        str(iterations),
    ]


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    mpi, do = step.spec["mpi"], step.spec["do"]
    out = work / f"{step.key}.jsonl"
    if do == "fidelity":
        c = exp.params["fidelity"][step.spec["case"]]
        delay = c["delay"] if step.spec["at"] == "configured" else "0"
        sets = [*c["set"], f"wan.latency={delay}"]
        _, recs = bench_records(
            "logp",
            c["platform"],
            sets,
            mpi,
            out,
            ["--max-size", str(parse_size(c["max_size"])), *exp.params.get("logp_args", [])],
            step.label,
        )
        return {"records": [r for r in recs if r["record"] in ("logp", "logp_latency")]}
    c = exp.params["bcast"][step.spec["case"]]
    if do == "logp":
        bench_records(
            "logp",
            c["platform"],
            c["set"],
            mpi,
            out,
            ["--max-size", str(parse_size(c["logp_max_size"])), *exp.params.get("logp_args", [])],
            step.label,
        )
        params = work / f"{mpi}-params-{step.spec['case']}.txt"
        isthmus(["model", "fit", str(out), "-o", str(params)], step.label)
        return {"params": params.read_text()}
    params = _params_file(work, mpi, step.spec["case"])
    args = _bcast_args(c, params, int(exp.params.get("iterations", 5)))
    if do == "bcast":
        _, recs = bench_records("bcast", c["platform"], c["set"], mpi, out, args, step.label)
        return {"records": [r for r in recs if r["record"] == "bcast"]}
    return {"records": _smpi(c, args, work, step)}


def _smpi(c: dict[str, Any], args: list[str], work: Path, step: Step) -> list[dict[str, Any]]:
    """The bcast program compiled for SimGrid SMPI and simulated on the exported platform."""
    src = paths.ROOT / "src"
    with tempfile.TemporaryDirectory(prefix="isthmus-smpi-") as tmp:
        program = Path(tmp) / "bcast-smpi"
        xml, hosts = Path(tmp) / "platform.xml", Path(tmp) / "hosts"
        cc = [
            "smpicc",
            "-O2",
            f"-I{src / 'model'}",
            f"-I{src / 'coll' / 'common'}",
            f"-I{src / 'world'}",
            "-o",
            str(program),
            *(str(src / s) for s in SMPI_SOURCES),
            "-lm",
        ]
        built = subprocess.run(cc, capture_output=True, text=True)
        if built.returncode != 0:
            raise UserError(f"{step.label}: smpicc failed: {built.stderr.strip()[-200:]}")
        isthmus(
            [
                "platform",
                "export",
                "--simgrid",
                str(paths.ROOT / c["platform"]),
                *(x for kv in c["set"] for x in ("--set", kv)),
                "-o",
                str(xml),
                "--hostfile",
                str(hosts),
            ],
            step.label,
        )
        names = hosts.read_text().split()
        counts: dict[str, int] = {}
        for h in names:  # hosts are named cluster + index, one line per rank
            counts[h.rstrip("0123456789")] = counts.get(h.rstrip("0123456789"), 0) + 1
        cmd = smpirun_command(xml, hosts, len(names), [str(program), *args])
        env = {**os.environ, "ISTHMUS_CLUSTERS": ",".join(f"{k}:{n}" for k, n in counts.items())}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        if done.returncode != 0:
            raise UserError(f"{step.label}: smpirun failed ({done.returncode})")
        out = work / f"{step.key}.jsonl"
        out.write_text(done.stdout)
    return [r for r in records.read_lines(out) if r.get("record") == "bcast"]


def _slope(points: dict[int, float], smallest: int) -> float:
    """Least-squares slope of g(m) over the sizes from `smallest` on (us per byte)."""
    xs = [m for m in points if m >= smallest]
    mx, my = statistics.fmean(xs), statistics.fmean(points[m] for m in xs)
    return sum((m - mx) * (points[m] - my) for m in xs) / sum((m - mx) ** 2 for m in xs)


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for mpi in exp.mpis:
        for i, c in enumerate(exp.params.get("bcast", [])):
            runs = [
                outcomes[s.key]["records"]
                for s in steps_
                if s.spec == {"mpi": mpi, "case": i, "do": "bcast", "rep": s.spec.get("rep")}
            ]
            smpi = {
                r["bytes"]: r
                for r in outcomes[f"{mpi}-smpi-{i}"]["records"]
                if r["algorithm"] == "pipelined"
            }
            for n, a in enumerate(runs[0]):
                if a["algorithm"] != "pipelined":
                    continue
                times = [run[n]["latency_median_us"] for run in runs]
                native = [run[n + 1]["latency_median_us"] for run in runs]
                med = statistics.median(times)
                out.append(
                    {
                        "kind": "bcast",
                        "mpi": mpi,
                        "case": c["name"],
                        "bytes": a["bytes"],
                        "segment": a["segment"],
                        "wan_degree": a["wan_degree"],
                        "lan_degree": a["lan_degree"],
                        "predicted_us": a["predicted_us"],
                        "measured_us": med,
                        "reps_us": times,
                        "spread": (max(times) - min(times)) / med,
                        "error": (a["predicted_us"] - med) / med,
                        "smpi_us": smpi[a["bytes"]]["latency_median_us"]
                        if a["bytes"] in smpi
                        else None,
                        "native_us": statistics.median(native),
                    }
                )
        for i, c in enumerate(exp.params.get("fidelity", [])):
            recs = {at: outcomes[f"{mpi}-fid-{i}-{at}"]["records"] for at in ("configured", "zero")}
            latency = {
                at: next(r["L_us"] for r in rs if r["record"] == "logp_latency")
                for at, rs in recs.items()
            }
            g = {r["bytes"]: r["g_us"] for r in recs["configured"] if r["record"] == "logp"}
            delay_us = parse_duration(c["delay"]) * 1e6
            rate = parse_rate(c["rate"])
            measured_rate = 1e6 / _slope(g, 65536)  # bytes per second
            out.append(
                {
                    "kind": "fidelity",
                    "mpi": mpi,
                    "case": c["name"],
                    "configured_delay_us": delay_us,
                    "measured_delay_us": latency["configured"] - latency["zero"],
                    "configured_rate_Bps": rate,
                    "measured_rate_Bps": measured_rate,
                    "rate_ratio": measured_rate / rate,
                }
            )
    return out
