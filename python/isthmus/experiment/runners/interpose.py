"""Runner `interpose`: the scale model's time in the ranks, libisthmus against libfaketime.

Each step runs two programs, without MPI launcher or network, under one way of dilating
time at K (the layer: LD_PRELOAD of libisthmus with ISTHMUS_DILATION; libfaketime:
LD_PRELOAD of Debian's libfaketime with FAKETIME="+0 x1/K"; none; or the layer preloaded
without dilation, which must change nothing but what a call through it costs):
tests/apps/clock_rate.c (what a CLOCK_MONOTONIC read costs, and how fast the clock runs) and
tests/apps/dilated_clocks.c (how far each clock advances and how long each sleep or
timeout lasts, against real time from the system call); and tests/apps/wake_cost.c (what a
block and a wake-up cost a thread on this machine, with the system calls themselves: the
same under every way). Repetitions interleave the ways.

[params]
  dilate = 4                                     K
  ways = ["none", "isthmus-undilated", "isthmus", "libfaketime"]

A row per way: ns per clock read (median, range), and for each clock and each sleep the
real-time ratio it showed (K when scaled, 1 when not; CPU time must stay 1), and the
wake-up costs (median, range).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import spread_stats

PARAMS = {"dilate", "ways"}
WAYS = ("none", "isthmus-undilated", "isthmus", "libfaketime")
FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def check(exp: Experiment) -> None:
    k = exp.params.get("dilate")
    if not isinstance(k, int | float) or not 1 < k <= 1000:
        raise UserError(f"{exp.path}: params.dilate: expected a number > 1")
    ways = exp.params.get("ways")
    if not isinstance(ways, list) or not ways or any(w not in WAYS for w in ways):
        raise UserError(f"{exp.path}: params.ways: expected a list of {', '.join(WAYS)}")


def steps(exp: Experiment) -> list[Step]:
    return [Step(f"r{rep}-{w}", f"rep {rep + 1}, {w}", {"way": w})
            for rep in range(exp.repetitions) for w in exp.params["ways"]]  # fmt: skip


def _environment(way: str, k: float) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ISTHMUS_DILATION", None)
    if way.startswith("isthmus"):
        env["LD_PRELOAD"] = str(paths.build_dir() / "lib" / "openmpi" / "libisthmus.so")
    if way == "isthmus":
        env["ISTHMUS_DILATION"] = f"{k:g}:{time.monotonic_ns()}"
    elif way == "libfaketime":
        if not FAKETIME.exists():
            raise UserError(f"{FAKETIME} is missing: run scripts/install-deps.sh")
        env["LD_PRELOAD"] = str(FAKETIME)
        env["FAKETIME"] = f"+0 x{1 / k:g}"
    return env


def _json(program: str, env: dict[str, str], label: str) -> dict[str, Any]:
    exe = paths.build_dir() / "tests" / "openmpi" / program
    if not exe.exists():
        raise UserError(f"{exe} is missing: run 'make build'")
    done = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=120)
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        why = done.stderr.strip()[-200:]
        raise UserError(f"{label}: {program} printed no JSON ({why})") from None
    return result


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    k = float(exp.params["dilate"])
    env = _environment(step.spec["way"], k)
    rate = _json("clock_rate", env, step.label)
    clocks = _json("dilated_clocks", env, step.label)
    ratios = {n: c["real_ms"] / c["advanced_ms"] if c["advanced_ms"] > 0 else float("inf")
              for n, c in clocks["clocks"].items()}  # fmt: skip
    sleeps = {n: ms / clocks["sleep_ms"] for n, ms in clocks["sleeps_real_ms"].items()}
    wake = _json("wake_cost", env, step.label)
    return {"ns_per_read": rate["ns_per_read"], "clock_rate": rate["clock_rate"],
            "clock_ratio": ratios, "sleep_ratio": sleeps, "wake_ns": wake}  # fmt: skip


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for way in exp.params["ways"]:
        got = [outcomes[s.key] for s in steps_ if s.spec["way"] == way]
        first = got[0]
        out.append({
            "way": way,
            "ns_per_read": spread_stats([g["ns_per_read"] for g in got]),
            "clock_ratio": {n: statistics.median(g["clock_ratio"][n] for g in got)
                            for n in first["clock_ratio"]},
            "sleep_ratio": {n: statistics.median(g["sleep_ratio"][n] for g in got)
                            for n in first["sleep_ratio"]},
            "wake_ns": {n: spread_stats([g["wake_ns"][n] for g in got]) for n in first["wake_ns"]},
        })  # fmt: skip
    return out
