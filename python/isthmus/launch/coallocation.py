"""Co-allocation (docs/slurm.md): one Slurm allocation per site, all running before any
rank starts, or none at all.

Each site's allocation is asked for with `salloc --no-shell` on its login host (emulated:
in the login host's namespace; on real sites through the command the site file names,
such as ssh): salloc returns once the job runs and holds no shell, so the job stays
allocated, without a process of ours in it, until `scancel`. Every site's job state is
polled with squeue. When one site's job has not started within the timeout, every
site's job is cancelled and the run ends with one line naming the site and its job state
and reason. Whatever ends the run (its end, a failure, Ctrl-C, SIGTERM) cancels every
job it submitted; a run killed outright has a keeper (emulate/keeper.py) cancel them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isthmus.emulate import keeper, net, slurm
from isthmus.errors import UserError
from isthmus.launch.plan import LaunchPlan

POLL_SECONDS = 0.1  # squeue takes about 20 ms here: a job's start is seen within 0.1 s
GRANTED = re.compile(r"(?:Granted|Pending) job allocation (\d+)")

# argv -> the command that runs argv on a site's login host (with that site's Slurm)
Access = Callable[[list[str]], list[str]]


class CoallocationFailed(UserError):
    """A site's job did not start in time: every site's job was cancelled."""

    exit_code = 1


@dataclass
class Allocation:
    """One site's job: what it asks for, and where it is."""

    site: str
    access: Access
    salloc: list[str]  # salloc's options: partition, nodes, tasks
    job: str = ""  # Slurm's job id, once salloc has said it
    state: str = "submitting"  # squeue's state: PENDING, RUNNING, ...
    reason: str = ""  # squeue's reason for a pending job
    submitted: float = 0.0  # time.monotonic()
    submitted_unix: float = 0.0  # the same instant, time.time()
    started: float | None = None  # when squeue first said RUNNING (time.monotonic)
    process: subprocess.Popen[str] | None = field(default=None, repr=False)
    said: str = field(default="", repr=False)  # what salloc printed so far


class Progress:
    """One line on stderr, per site: queued / running / ranks started. On a terminal it
    is rewritten in place; otherwise it is printed again only when it changes."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = ""

    def show(self, parts: list[str]) -> None:
        text = "isthmus: " + " | ".join(parts)
        if text == self.last:
            return
        self.last = text
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + text)
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def end(self) -> None:
        if self.tty and self.last:
            sys.stderr.write("\n")
            sys.stderr.flush()


def job_name() -> str:
    """The name of every Slurm job this run submits (scancel --name finds them)."""
    return f"isthmus-{os.getpid()}"


def describe(a: Allocation) -> str:
    job = f" (job {a.job})" if a.job else ""
    if a.state == "RUNNING":
        return f"{a.site}: running{job}"
    reason = f", {a.reason}" if a.reason and a.reason != "None" else ""
    state = "queued" if a.state == "PENDING" else a.state.lower()
    return f"{a.site}: {state}{job}{reason}"


def _read_salloc(a: Allocation) -> None:
    """Take what salloc printed so far (its job id) without waiting for more."""
    assert a.process is not None and a.process.stderr is not None
    with contextlib.suppress(BlockingIOError, TypeError):
        chunk = a.process.stderr.read()
        a.said += chunk or ""
    if not a.job and (m := GRANTED.search(a.said)):
        a.job = m.group(1)


def _poll_state(a: Allocation) -> None:
    if not a.job:
        return
    done = subprocess.run(
        a.access(["squeue", "--noheader", f"--jobs={a.job}", "--format=%T %r"]),
        capture_output=True,
        text=True,
    )
    fields = done.stdout.split(maxsplit=1)
    if done.returncode == 0 and fields:
        a.state, a.reason = fields[0], (fields[1].strip() if len(fields) > 1 else "")
    if a.state == "RUNNING" and a.started is None:
        a.started = time.monotonic()


def cancel(allocations: list[Allocation]) -> None:
    """Cancel every job submitted (and any salloc still waiting, which cancels its own)."""
    for a in allocations:
        if a.process is not None and a.process.poll() is None:
            a.process.terminate()
        if a.job:
            subprocess.run(a.access(["scancel", a.job]), capture_output=True)
    for a in allocations:
        if a.process is not None:
            try:
                a.process.wait(5)
            except subprocess.TimeoutExpired:
                a.process.kill()
                a.process.wait()


@contextlib.contextmanager
def coallocated(
    allocations: list[Allocation], timeout: float, progress: Progress
) -> Iterator[list[Allocation]]:
    """Submit every site's job, wait until all run (at most `timeout` seconds), yield;
    cancel them all when the block ends, whatever ends it."""
    if not allocations:
        yield allocations
        return
    # killed outright, this run cannot cancel its jobs: its keeper does
    name = job_name()
    guard = keeper.spawn(
        os.getpid(),
        [a.access(["scancel", f"--name={name}"]) for a in allocations],
        Path(os.devnull),
    )
    try:
        for a in allocations:
            a.submitted, a.submitted_unix = time.monotonic(), time.time()
            a.process = subprocess.Popen(
                a.access(["salloc", "--no-shell", *a.salloc]),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,  # Ctrl-C is ours to handle: we cancel
            )
            assert a.process.stderr is not None
            os.set_blocking(a.process.stderr.fileno(), False)
        deadline = time.monotonic() + timeout
        while True:
            for a in allocations:
                _read_salloc(a)
                failed = a.process is not None and a.process.poll() not in (None, 0)
                if failed and not a.job:
                    said = a.said.strip().splitlines()
                    raise CoallocationFailed(
                        f"site {a.site}: salloc failed: {said[-1] if said else 'no message'}"
                    )
                _poll_state(a)
            progress.show([describe(a) for a in allocations])
            if all(a.state == "RUNNING" for a in allocations):
                break
            if time.monotonic() >= deadline:
                late = next(a for a in allocations if a.state != "RUNNING")
                progress.end()
                raise CoallocationFailed(
                    f"--coallocate-timeout {timeout:g}s passed: site {late.site}'s job "
                    f"{late.job or '(not submitted)'} is {late.state}"
                    f"{f' ({late.reason})' if late.reason else ''}; every site's job was "
                    "cancelled"
                )
            time.sleep(POLL_SECONDS)
        yield allocations
    finally:
        cancel(allocations)
        with contextlib.suppress(ProcessLookupError):
            os.kill(guard, signal.SIGTERM)  # we live: it just ends


def for_plan(lplan: LaunchPlan, netname: str) -> list[Allocation]:
    """One allocation per Slurm site: its nodes, one task per rank, on its login host."""
    out = []
    for site in lplan.slurm_sites:
        nodes = sorted(set(site.hosts))
        access = functools.partial(
            slurm.command, netname, net.state_dir(netname), site.name, site.login
        )
        salloc = [
            f"--job-name={job_name()}", f"--partition={site.partition}",
            f"--nodes={len(nodes)}", f"--nodelist={','.join(nodes)}",
            f"--ntasks={len(site.ranks)}",
        ]  # fmt: skip
        out.append(Allocation(site.name, access, salloc))
    return out


def record(a: Allocation, ranks: list[int]) -> dict[str, Any]:
    """What the profile keeps of a Slurm site's job: its id, its world ranks, when it was
    submitted and how long it queued."""
    queued = (a.started or time.monotonic()) - a.submitted
    return {
        "site": a.site,
        "job": a.job,
        "ranks": ranks,
        "submitted_unix": round(a.submitted_unix, 6),
        "queued_seconds": round(queued, 6),
    }
