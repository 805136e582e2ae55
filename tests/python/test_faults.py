"""Faults during an emulated run, with both MPIs: a rank killed in either cluster, the
router killed, isthmus itself stopped by SIGINT or SIGTERM or killed outright, ranks that
hang past --timeout. Each must end the run within 10 s of the fault with a line naming what
happened, and leave nothing behind: no namespace, TUN device, router or rank process (each
test looks, with `ip netns list`, `ip link` and the process table). After isthmus itself is
killed nothing can clean up at once: `isthmus net down --all` or the next run does, and
says so."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ISTHMUS, MPIS, TWO_CLUSTERS, Run
from isthmus.emulate import net
from isthmus.emulate.plan import netns_name

# serial (make test runs it alone): it looks for its ranks by their program's path and
# for routers and TUN devices in the whole machine, and bounds how fast a run ends
pytestmark = [
    pytest.mark.serial,
    pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root"),
]

# What the issue allows between a fault and the end of the run.
END_WITHIN_SECONDS = 10.0


@dataclass
class Job:
    proc: subprocess.Popen[str]
    app: Path
    name: str  # the network the run made for itself
    router_pid: int


@contextmanager
def running(app: Path, *args: str, timeout: str = "60s") -> Iterator[Job]:
    """An `isthmus run` of app on the two-cluster platform, past MPI_Init ("ready"). Whatever
    the test does, the job's processes and network are gone when the block ends."""
    proc = subprocess.Popen(
        [str(ISTHMUS), "run", "-p", str(TWO_CLUSTERS), "--timeout", timeout, "--",
         str(app), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    name = f"run{proc.pid}"
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        st = net.load_state(name)
        assert st is not None
        yield Job(proc, app, name, st.router_pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        subprocess.run(["pkill", "-KILL", "-f", str(app)], capture_output=True)
        net.down(name)


def wait_end(job: Job) -> tuple[int, str, float]:
    """(exit status, standard error, seconds until isthmus ended) from now."""
    started = time.monotonic()
    _, err = job.proc.communicate(timeout=60)
    return job.proc.returncode, err, time.monotonic() - started


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def leftovers(job: Job, network_stays: bool = False) -> list[str]:
    """What the run left, after giving the kernel a moment to reap it (empty is good); with
    network_stays, only waits for everything but the namespaces and state to go."""
    deadline = time.monotonic() + END_WITHIN_SECONDS
    while True:
        left = [ns for ns in os.listdir("/var/run/netns") if ns.startswith(f"ist-{job.name}-")]
        left += [f"state {job.name}"] if net.state_dir(job.name).exists() else []
        left += [f"router {job.router_pid}"] if _alive(job.router_pid) else []
        ranks = subprocess.run(["pgrep", "-f", str(job.app)], capture_output=True, text=True)
        left += [f"rank process {p}" for p in ranks.stdout.split() if _alive(int(p))]
        links = subprocess.run(["ip", "-o", "link", "show", "type", "tun"], capture_output=True)
        left += [f"TUN device: {ln}" for ln in links.stdout.decode().splitlines() if "ist" in ln]
        gone = not left or (network_stays and all(x.startswith(("ist-", "state")) for x in left))
        if gone or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def rank_on(job: Job, host: str) -> tuple[int, int]:
    """(pid, world rank) of the application process on an emulated host."""
    pids = subprocess.run(
        ["ip", "netns", "pids", netns_name(job.name, host)], capture_output=True, text=True
    ).stdout.split()
    for pid in pids:
        if Path(f"/proc/{pid}/comm").read_text().strip() == job.app.name[:15]:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            rank = next(
                v.split(b"=")[1]
                for v in environ
                if v.startswith((b"OMPI_COMM_WORLD_RANK=", b"PMI_RANK="))
            )
            return int(pid), int(rank)
    raise AssertionError(f"no rank of {job.app.name} on {host}: {pids}")


@pytest.mark.parametrize("host", ["east1", "west0"])
@pytest.mark.parametrize("mpi", MPIS)
def test_a_rank_killed_in_either_cluster(
    apps: dict[tuple[str, str], Path], mpi: str, host: str
) -> None:
    with running(apps[(mpi, "sleeper")], "120") as job:
        pid, rank = rank_on(job, host)
        os.kill(pid, signal.SIGKILL)
        rc, err, seconds = wait_end(job)
        assert rc == 128 + signal.SIGKILL, err
        assert f"rank {rank} on {host} was killed by signal 9 (SIGKILL)" in err, err
        assert seconds < END_WITHIN_SECONDS
        assert leftovers(job) == []


@pytest.mark.parametrize("mpi", MPIS)
def test_the_router_killed(apps: dict[tuple[str, str], Path], mpi: str) -> None:
    with running(apps[(mpi, "sleeper")], "120") as job:
        os.kill(job.router_pid, signal.SIGKILL)
        rc, err, seconds = wait_end(job)
        assert rc == 125, err
        assert f"the router of network {job.name} died during the run" in err, err
        assert seconds < END_WITHIN_SECONDS
        assert leftovers(job) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("mpi", MPIS)
def test_isthmus_stopped_by_a_signal(
    apps: dict[tuple[str, str], Path], mpi: str, sig: signal.Signals
) -> None:
    with running(apps[(mpi, "sleeper")], "120") as job:
        job.proc.send_signal(sig)
        rc, err, seconds = wait_end(job)
        assert rc == 128 + sig, err
        assert f"isthmus: stopped by {sig.name}: the job was stopped" in err, err
        assert "Traceback" not in err
        assert seconds < END_WITHIN_SECONDS
        assert leftovers(job) == []


@pytest.mark.parametrize(("mpi", "cleaner"), [("openmpi", "net down --all"), ("mpich", "run")])
def test_isthmus_killed_outright(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str, cleaner: str
) -> None:
    """SIGKILL leaves isthmus no time: the router and the job die with it (they are told
    to when their parent goes), the namespaces stay until someone removes them."""
    with running(apps[(mpi, "sleeper")], "120") as job:
        job.proc.kill()
        job.proc.wait(10)
        left = leftovers(job, network_stays=True)
        assert left and all(x.startswith(("ist-", "state")) for x in left), left
        if cleaner == "run":
            done = isthmus("run", "-p", TWO_CLUSTERS, "--timeout", "60s", "--",
                           apps[(mpi, "exitcode")], "0", "0")  # fmt: skip
            assert done.returncode == 0, done.stderr
            said = done.stderr
        else:
            done = isthmus("net", "down", "--all")
            assert done.returncode == 0, done.stderr
            said = done.stdout
        assert f"{job.name}, left by a killed isthmus run (pid {job.proc.pid})" in said, said
        assert leftovers(job) == []


@pytest.mark.parametrize("mpi", MPIS)
def test_ranks_that_hang_end_at_the_timeout(apps: dict[tuple[str, str], Path], mpi: str) -> None:
    with running(apps[(mpi, "sleeper")], "120", "hang", timeout="3s") as job:
        rc, err, seconds = wait_end(job)  # from "ready", a moment after the timeout began
        assert rc == 124, err
        assert "isthmus: the run exceeded --timeout 3s and was stopped" in err, err
        assert seconds < 3 + END_WITHIN_SECONDS
        assert leftovers(job) == []
