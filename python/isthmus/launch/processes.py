"""Starting and stopping a job's processes: the launcher with one namespace per rank,
several launchers at once (zipper sites, each with its forwarders), a deadline, and the
grace a process gets before it is killed."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO

from isthmus.config import paths
from isthmus.config.platform import Platform
from isthmus.emulate import signals
from isthmus.emulate.plan import netns_name
from isthmus.launch import mpi
from isthmus.launch.coallocation import Access
from isthmus.launch.plan import LaunchPlan, Site

EXIT_TIMEOUT = 124  # as timeout(1)


EXIT_NETWORK_FAILED = 125


KILL_GRACE_SECONDS = 5.0


def _die_with_parent() -> None:
    """In the launcher's child: get SIGTERM if isthmus itself dies, so no job is orphaned."""
    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the launcher; after a grace period SIGKILL its whole process group."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def rank_namespaces(platform: Platform, netname: str) -> list[str]:
    """The namespace of every world rank's host, in rank order (Platform.rank_slots)."""
    return [netns_name(netname, s.host) for s in platform.rank_slots()]


def launch(
    cmd: list[str],
    env: dict[str, str],
    timeout: float | None,
    alive: Callable[[], bool] | None = None,
    stdout: IO[bytes] | None = None,
    on_timeout: Callable[[], None] | None = None,
    tick: Callable[[], None] | None = None,
) -> tuple[int, str | None]:
    """Run the launcher in its own process group; return (exit code, why it was stopped:
    None, "timeout", "network", or the name of the signal that stopped isthmus).
    on_timeout runs when the deadline passes, before anything is stopped; tick at every
    look at the launcher (twice a second: the progress line)."""
    proc = subprocess.Popen(
        cmd, env=env, start_new_session=True, preexec_fn=_die_with_parent, stdout=stdout
    )

    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in signals.STOPPING}
    stopped: str | None = None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while proc.poll() is None:
            try:
                proc.wait(0.5)
            except subprocess.TimeoutExpired:
                if tick is not None:
                    tick()
                if deadline is not None and time.monotonic() >= deadline:
                    stopped = "timeout"
                    if on_timeout is not None:
                        on_timeout()
                elif alive is not None and not alive():
                    stopped = "network"
                if stopped:
                    _stop(proc)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        # A launcher told to stop may exit before its ranks do: nothing of the job
        # (its process group) outlives the run, nor the network it takes down next.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    rc = proc.returncode
    if stopped == "timeout":
        return EXIT_TIMEOUT, stopped
    if stopped == "network":
        return EXIT_NETWORK_FAILED, stopped
    if received:
        # As a shell reports a job it stopped: 128 + the signal, whatever the launcher says
        # (Hydra sometimes kills its proxies before they report the ranks' deaths and then
        # returns 0; an interrupted job must not look like a successful one).
        return 128 + received[0], signal.Signals(received[0]).name
    return (128 - rc if rc < 0 else rc), None


@dataclass
class Process:
    """One process of a zipped run: a site's launcher or a forwarder."""

    what: str  # for messages: "the launcher of site left" or "the forwarder on gate0"
    cmd: list[str]
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None


def launch_all(
    launchers: list[Process],
    forwarders: list[Process],
    timeout: float | None,
    alive: Callable[[], bool] | None,
    stdout: IO[bytes] | None,
    on_timeout: Callable[[], None] | None = None,
    tick: Callable[[], None] | None = None,
) -> tuple[int, str | None]:
    """Run the forwarders and the sites' launchers, each in its own process group, until
    every launcher has ended; the first that fails (a launcher or forwarder that exits
    other than 0) stops all the others at once. Returns (exit code, why it was stopped:
    None, "timeout", "network", the name of the signal that stopped isthmus, or the message
    naming the process that failed first). on_timeout and tick as launch's."""
    every = forwarders + launchers
    for p in every:
        p.proc = subprocess.Popen(
            p.cmd, env=p.env, start_new_session=True, preexec_fn=_die_with_parent, stdout=stdout
        )
    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        for p in launchers:
            with contextlib.suppress(ProcessLookupError):
                assert p.proc is not None
                p.proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in signals.STOPPING}
    stopped: str | None = None
    failed: Process | None = None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while any(p.proc is not None and p.proc.poll() is None for p in launchers):
            time.sleep(0.1)
            if tick is not None:
                tick()
            failed = next(
                (p for p in every if p.proc is not None and p.proc.poll() not in (None, 0)), None
            )
            if failed is not None:
                break
            if deadline is not None and time.monotonic() >= deadline:
                stopped = "timeout"
                if on_timeout is not None:
                    on_timeout()
                break
            if alive is not None and not alive():
                stopped = "network"
                break
        if failed is None and stopped is None:
            # Every launcher ended well: the forwarders end once every rank has said bye.
            end = time.monotonic() + KILL_GRACE_SECONDS
            while time.monotonic() < end and any(
                p.proc is not None and p.proc.poll() is None for p in forwarders
            ):
                time.sleep(0.05)
            failed = next(
                (p for p in forwarders if p.proc is not None and p.proc.poll() not in (None, 0)),
                None,
            )
    finally:
        for p in every:
            if p.proc is not None and p.proc.poll() is None:
                _stop(p.proc)
        for s, handler in previous.items():
            signal.signal(s, handler)
        for p in every:
            with contextlib.suppress(ProcessLookupError):
                assert p.proc is not None
                os.killpg(p.proc.pid, signal.SIGKILL)
    if stopped == "timeout":
        return EXIT_TIMEOUT, stopped
    if stopped == "network":
        return EXIT_NETWORK_FAILED, stopped
    if received:
        return 128 + received[0], signal.Signals(received[0]).name
    if failed is not None:
        assert failed.proc is not None
        rc = failed.proc.returncode
        if rc < 0:
            how = f"was killed by signal {-rc} ({signal.Signals(-rc).name})"
            return 128 - rc, f"{failed.what} {how}"
        return rc, f"{failed.what} ended with status {rc}"
    return 0, None


def forwarder_stats(status_dir: Path, host: str) -> Path:
    """Where the forwarder on `host` writes what it carried (isthmus-forward --stats)."""
    return status_dir / f"forwarder-{host}.json"


def forwarders_stats(status_dir: Path) -> list[Path]:
    """The stats files the forwarders of a run wrote (those that ended well)."""
    return sorted(status_dir.glob("forwarder-*.json"))


SRUN_MPI = {"openmpi": "pmix", "mpich": "pmi2"}  # the PMI each MPI works with under srun


def srun_command(impl: mpi.MpiImplementation, site: Site, job: str, hostfile: Path) -> list[str]:
    """srun starting a Slurm site's ranks in its job: one task per rank, each on its
    rank's host when the plan knows them (the hostfile, in rank order: -m arbitrary), else
    in blocks over the job's nodes (a real site)."""
    cmd = ["srun", f"--jobid={job}", f"--mpi={SRUN_MPI[impl.name]}", f"--ntasks={len(site.ranks)}",
           "--kill-on-bad-exit=1", "--quit-on-interrupt"]  # fmt: skip
    if not site.hosts:
        return [*cmd, "--distribution=block"]
    hostfile.write_text("".join(f"{h}\n" for h in site.hosts))
    return ["env", f"SLURM_HOSTFILE={hostfile}", *cmd, "--distribution=arbitrary"]


def site_command(
    site: Site,
    impl: mpi.MpiImplementation,
    netname: str,
    exported: list[str],
    argv: list[str],
    status_dir: Path,
    job: tuple[Access, str] | None = None,
) -> list[str]:
    """The command starting a site's ranks: srun in the site's Slurm job (job: the site's
    access and job id), or the MPI's own launcher in its login host's namespace (none on
    real machines), exporting the variables named."""
    if site.launcher == "slurm":
        assert job is not None
        access, jobid = job
        return access(srun_command(impl, site, jobid, status_dir / "hosts") + argv)
    prefix = ["ip", "netns", "exec", netns_name(netname, site.login)] if site.login else []
    return prefix + impl.launch_command(len(site.ranks), exported, argv)


def site_processes(
    lplan: LaunchPlan,
    impl: mpi.MpiImplementation,
    netname: str,
    layer_env: dict[str, str],
    argv: list[str],
    status_dir: Path,
    jobs: dict[str, tuple[Access, str]],
) -> tuple[list[Process], list[Process]]:
    """The sites' launchers and the forwarders of a run of several sites (docs/zipper.md):
    a site of the MPI's own launcher runs it in its first host's namespace, over its
    ranks' namespaces; a Slurm site runs srun on its login host, in its job (jobs: the
    site's access and job id by site name)."""
    zplan = lplan.zip
    assert zplan is not None
    nranks = len(zplan.site_of_rank)
    forwarders = [
        Process(
            f"the forwarder on {f.host}",
            [
                "ip", "netns", "exec", netns_name(netname, f.host),
                str(paths.forwarder()), "--listen", f.address, "--ranks", str(nranks),
                "--name", f.host, "--stats", str(forwarder_stats(status_dir, f.host)),
            ],
            dict(os.environ),
        )
        for f in zplan.forwarders
    ]  # fmt: skip
    launchers = []
    for i, site in enumerate(lplan.sites):
        site_status = status_dir / f"site-{i}"
        site_status.mkdir()
        env = {
            **layer_env,
            **zplan.environment(i),
            "ISTHMUS_NETNS": ",".join(netns_name(netname, h) for h in site.hosts),
            "ISTHMUS_STATUS_DIR": str(site_status),
        }
        cmd = site_command(site, impl, netname, sorted(env), argv, site_status, jobs.get(site.name))
        # Open MPI 4.1's launchers, started at once, raced to make the same session
        # directory (/tmp/ompi.HOST.UID: "mkdir ... File exists", orte_init failed): one
        # directory per site.
        session = {"OMPI_MCA_orte_tmpdir_base": str(site_status)} if impl.name == "openmpi" else {}
        launchers.append(
            Process(f"the job of site {site.name}", cmd, {**os.environ, **env, **session})
        )
    return launchers, forwarders
