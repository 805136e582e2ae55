"""Runner `soak`: many short runs back to back, some with a process killed at a random
moment; every run must end within its timeout with a one-line outcome, and leave nothing
behind (issue 43).

Each step is one `isthmus run`, drawn from the seed: an MPI, a platform (a wide-area one
and a zipper one), a program (point-to-point: tests/apps/zip_stress.c; collectives:
coll_check.c against the MPI's own, or, across the zipper where the site's own MPI spans
no sites, zip_check.c; communicator churn: comm_churn.c). A share of the runs, spread by
the seed, gets one process SIGKILLed at a random moment (0 to 0.8 s after it exists): a
rank, the router (wide-area platform) or a forwarder (zipper platform). Afterwards the
step waits up to 10 s for the machine to be as it was before the run, and records what is
still there: the run's
namespaces (named after its process id), TUN devices of the root namespace, cgroups,
processes that carry the run's mark in their environment, /dev/shm segments and
listening TCP ports of the root namespace. Anything left is then removed (`isthmus net
down --all`, the processes killed), so that one leftover does not count twice.

[params]
  runs = 200            how many runs
  kill_share = 0.1      the share of runs with a process killed
  seed = 43             the plan's seed
  timeout = 60          each run's --timeout, seconds
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step

PARAMS = {"runs", "kill_share", "seed", "timeout"}
PLATFORMS = {
    "wide-area": "examples/platforms/two-clusters.toml",
    "zipper": "examples/platforms/zipper.toml",
}
PROGRAMS = ("point-to-point", "collectives", "churn")
SETTLE_SECONDS = 10.0


def check(exp: Experiment) -> None:
    p = exp.params
    if not isinstance(p.get("runs"), int) or p["runs"] < 1:
        raise UserError(f"{exp.path}: params.runs: expected a whole number >= 1")
    share = p.get("kill_share")
    if not isinstance(share, int | float) or not 0 <= share <= 1:
        raise UserError(f"{exp.path}: params.kill_share: expected a number from 0 to 1")
    if not isinstance(p.get("seed"), int):
        raise UserError(f"{exp.path}: params.seed: expected a whole number")
    if not isinstance(p.get("timeout"), int | float) or p["timeout"] <= 0:
        raise UserError(f"{exp.path}: params.timeout: expected seconds > 0")
    if not exp.mpis:
        raise UserError(f"{exp.path}: mpis: expected at least one MPI")


def steps(exp: Experiment) -> list[Step]:
    p = exp.params
    rng = random.Random(p["seed"])
    runs = p["runs"]
    killed = set(rng.sample(range(runs), round(runs * p["kill_share"])))
    out = []
    for i in range(runs):
        mpi = rng.choice(exp.mpis)
        plat = rng.choice(sorted(PLATFORMS))
        program = rng.choice(PROGRAMS)
        kill = None
        if i in killed:
            what = rng.choice(["rank", "router" if plat == "wide-area" else "forwarder"])
            kill = {"what": what, "after_s": round(rng.uniform(0.0, 0.8), 2)}
        spec = {"run": i, "mpi": mpi, "platform": plat, "program": program, "kill": kill,
                "seed": rng.randrange(1 << 30)}  # fmt: skip
        label = f"{i + 1}: {program} on {plat}, {mpi}" + (f", kill {kill['what']}" if kill else "")
        out.append(Step(f"run{i:04d}", label, spec))
    return out


def _program(spec: dict[str, Any]) -> list[str]:
    mpi, program = spec["mpi"], spec["program"]
    built = paths.build_dir() / "tests" / mpi
    if program == "point-to-point":
        return [str(built / "zip_stress"), "2", str(spec["seed"])]
    if program == "collectives" and spec["platform"] == "zipper":
        return [str(built / "zip_check")]
    if program == "collectives":
        return [str(built / "coll_check"), str(spec["seed"]), "40"]
    churn = [str(built / "comm_churn"), "20"]
    return churn + (["no-inter"] if spec["platform"] == "zipper" else [])


def _lines(cmd: list[str]) -> set[str]:
    done = subprocess.run(cmd, capture_output=True, text=True)
    return {ln.strip() for ln in done.stdout.splitlines() if ln.strip()}


def _marked(mark: str) -> set[str]:
    """The processes whose environment holds MARK ("pid name")."""
    out = set()
    for d in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if mark.encode() in (d / "environ").read_bytes():
                out.add(f"{d.name} {(d / 'comm').read_text().strip()}")
    return out


def machine_state(mark: str, run_pid: int) -> dict[str, set[str]]:
    """What run run_pid (its processes marked with MARK) could leave behind, as names."""
    cgroups = set()
    for root in (Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")):
        if root.is_dir():
            cgroups |= {str(p) for p in root.glob("isthmus*")}
    netns = _lines(["ip", "netns", "list"])
    tun = _lines(["ip", "-o", "link", "show", "type", "tun"])
    listening = [ln.split() for ln in _lines(["ss", "-Hltn"])]
    return {
        "namespaces": {n.split()[0] for n in netns if n.startswith(f"ist-run{run_pid}-")},
        "tun devices": {ln.split(":")[1].strip() for ln in tun},
        "cgroups": cgroups,
        "processes": _marked(mark),
        "/dev/shm": {p.name for p in Path("/dev/shm").iterdir()},
        "listening ports": {f[3] for f in listening if len(f) > 3},
    }


def leftovers(before: dict[str, set[str]], mark: str, run_pid: int) -> dict[str, list[str]]:
    now = machine_state(mark, run_pid)
    return {k: sorted(now[k] - before[k]) for k in now if now[k] - before[k]}


def _clean(left: dict[str, list[str]]) -> None:
    subprocess.run([str(paths.isthmus_command()), "net", "down", "--all"], capture_output=True)
    for p in left.get("processes", []):
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(p.split()[0]), signal.SIGKILL)


def _victim(what: str, mark: str) -> int | None:
    """A process of this run to kill: the router, a forwarder or a rank."""
    name = {"router": "isthmus-router", "forwarder": "isthmus-forward"}.get(what)
    names = [name] if name else ["zip_stress", "coll_check", "zip_check", "comm_churn"]
    pids = sorted(int(p.split()[0]) for p in _marked(mark) if p.split()[1] in names)
    return random.Random(len(pids)).choice(pids) if pids else None


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    spec = step.spec
    timeout = float(exp.params["timeout"])
    mark = f"ISTHMUS_SOAK_RUN={os.getpid()}-{step.key}"
    cmd = [str(paths.isthmus_command()), "run", "-p", str(paths.ROOT / PLATFORMS[spec["platform"]]),
           "--mpi", spec["mpi"], "--timeout", f"{timeout:g}s", "--", *_program(spec)]  # fmt: skip
    started = time.monotonic()
    before = machine_state(mark, -1)
    env = {**os.environ, mark.split("=")[0]: mark.split("=")[1]}
    child = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    killed = None
    try:
        kill = spec["kill"]
        if kill:
            # From the moment the victim exists, a random delay: a moment fixed from the
            # start fell after the end of the shortest runs.
            while child.poll() is None and _victim(kill["what"], mark) is None:
                time.sleep(0.02)
            time.sleep(kill["after_s"])
            while child.poll() is None and killed is None:
                pid = _victim(kill["what"], mark)
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        killed = {"what": kill["what"], "pid": pid,
                                  "at_s": round(time.monotonic() - started, 2)}  # fmt: skip
                else:
                    time.sleep(0.02)
        try:
            out, err = child.communicate(timeout=timeout + 30)
            hung = False
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
            hung = True
    except BaseException:
        child.terminate()
        child.communicate()
        raise
    wall = time.monotonic() - started
    said = [ln for ln in err.splitlines() if ln.startswith("isthmus:") and "take turns" not in ln]
    outcome = "ok" if child.returncode == 0 else (said[-1] if said else "")
    left: dict[str, list[str]] = {}
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        left = leftovers(before, mark, child.pid)
        if not left:
            break
        time.sleep(0.5)
    if left:
        _clean(left)
    return {
        "status": child.returncode,
        "outcome": outcome,
        "wall_s": round(wall, 2),
        "hung": hung,
        "killed": killed,
        "leftovers": left,
        "stderr_tail": err.strip().splitlines()[-12:] if child.returncode else [],
        "ok_lines": out.count(": ok"),
    }


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    timeout = float(exp.params["timeout"])
    out = []
    for s in steps_:
        o = outcomes[s.key]
        out.append({
            "run": s.spec["run"], "mpi": s.spec["mpi"], "platform": s.spec["platform"],
            "program": s.spec["program"],
            "kill": s.spec["kill"]["what"] if s.spec["kill"] else "",
            "killed": o["killed"] is not None,
            "status": o["status"], "outcome": o["outcome"], "wall_s": o["wall_s"],
            # within the run's timeout, plus the network's set-up and tear-down
            "ended_in_time": not o["hung"] and o["wall_s"] <= timeout + 15,
            "named": bool(o["outcome"]) and "\n" not in o["outcome"],
            "ranks_ok": o["ok_lines"],
            "leftovers": o["leftovers"],
            "stderr_tail": o["stderr_tail"],
        })  # fmt: skip
    return out
