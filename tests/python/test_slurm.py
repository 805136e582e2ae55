"""One MPI job across two Slurm clusters (docs/slurm.md): real slurmctld, slurmd and munged
per emulated cluster, one allocation per cluster, srun inside each, the parts joined into
one MPI_COMM_WORLD over a routed WAN or through a zipper host that is both clusters'
login node; nothing left afterwards, also after SIGKILL; co-allocation that fails."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ISTHMUS, MPIS, PLATFORMS, Run

ROUTED = PLATFORMS / "slurm-pair.toml"
ZIPPED = PLATFORMS / "slurm-zipper.toml"


def live_daemons(where: str = "/run/isthmus/") -> list[str]:
    """The Slurm and munge daemons (not zombies) whose files are under `where`."""
    ps = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    return [
        line
        for line in ps.splitlines()
        if not line.startswith("Z")
        and any(d in line for d in ("slurmctld", "slurmd", "munged", "slurmstepd"))
        and where in line
    ]


def squeue(net: str, cluster: str, login: str) -> str:
    conf = f"/run/isthmus/{net}/slurm/{cluster}/slurm.conf"
    done = subprocess.run(
        ["nsenter", f"--net=/var/run/netns/ist-{net}-{login}", "env", f"SLURM_CONF={conf}",
         "squeue", "--noheader", "--format=%i %T"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@pytest.mark.parametrize("platform", [ROUTED, ZIPPED], ids=["routed", "zipper-login"])
@pytest.mark.parametrize("mpi", MPIS)
def test_one_job_across_two_slurm_clusters(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str, platform: Path, tmp_path: Path
) -> None:
    """zip_check's semantics checks pass on the 4 ranks of two Slurm clusters' jobs; the
    profile names each site's job; no daemon and no namespace is left."""
    out = tmp_path / "p.json"
    done = isthmus("run", "-p", platform, "--profile", out, "--timeout", "120s", "--",
                   apps[(mpi, "zip_check")])  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(done.stdout.split("\n"))[1:] == [f"zip_check rank {r} of 4: ok" for r in range(4)]
    sites = ("east", "west") if platform == ROUTED else ("left", "right")
    assert f"{sites[0]}: running (job" in done.stderr and f"{sites[1]}: running" in done.stderr
    batch = json.loads(out.read_text())["run"]["batch"]
    assert [b["site"] for b in batch] == list(sites) and all(b["job"] for b in batch)
    assert f"ist-run{done.pid}-" not in namespaces()
    assert live_daemons(f"/run/isthmus/run{done.pid}/") == []


@pytest.mark.serial  # the bound: both queues empty within 10 s of a SIGKILL
def test_jobs_leave_the_queue_and_net_down_stops_slurm(
    isthmus: Run, apps: dict[tuple[str, str], Path]
) -> None:
    """On a network that stays up: after the run both queues are empty (the jobs were
    cancelled, not left holding their nodes), also after a run killed by SIGKILL; `net
    down` stops every daemon."""
    up = isthmus("net", "up", "-p", ROUTED, "--name", "slq")
    try:
        assert up.returncode == 0, up.stderr
        assert len(live_daemons("/run/isthmus/slq/")) == 8  # 2 x (munged, slurmctld, 2 slurmd)
        done = isthmus("run", "-p", ROUTED, "--net", "slq", "--timeout", "120s", "--",
                       apps[("openmpi", "zip_check")])  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        end = time.monotonic() + 15  # MinJobAge=2: a cancelled job leaves within seconds
        while time.monotonic() < end and (squeue("slq", "east", "east0")
                                          or squeue("slq", "west", "west0")):  # fmt: skip
            time.sleep(0.5)
        assert squeue("slq", "east", "east0") == "" and squeue("slq", "west", "west0") == ""

        # killed outright while its ranks run: its keeper cancels both jobs
        run = subprocess.Popen(
            [ISTHMUS, "run", "-p", ROUTED, "--net", "slq", "--timeout", "120s", "--",
             apps[("openmpi", "sleeper")], "60"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert run.stdout is not None and run.stdout.readline().strip() == "ready"
        assert squeue("slq", "east", "east0") and squeue("slq", "west", "west0")
        run.kill()
        run.wait()
        end = time.monotonic() + 10
        while time.monotonic() < end and (squeue("slq", "east", "east0")
                                          or squeue("slq", "west", "west0")):  # fmt: skip
            time.sleep(0.5)
        assert squeue("slq", "east", "east0") == "" and squeue("slq", "west", "west0") == ""
    finally:
        down = isthmus("net", "down", "--name", "slq")
    assert "Slurm daemons" in down.stdout, down.stdout
    assert live_daemons("/run/isthmus/slq/") == []


@pytest.mark.serial  # net down --all
def test_sigkill_of_the_run_leaves_no_daemon(apps: dict[tuple[str, str], Path]) -> None:
    """isthmus run killed outright while its ranks run: the keeper stops its Slurm (and
    the jobs' processes) at once; the next run's sweep removes the namespaces."""
    run = subprocess.Popen(
        [ISTHMUS, "run", "-p", ROUTED, "--timeout", "120s", "--", apps[("openmpi", "sleeper")],
         "60"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert run.stdout is not None and run.stdout.readline().strip() == "ready"
        where = f"/run/isthmus/run{run.pid}/"
        assert live_daemons(where)
        run.kill()
        run.wait()
        end = time.monotonic() + 10
        while time.monotonic() < end and live_daemons(where):
            time.sleep(0.2)
        assert live_daemons(where) == []
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        subprocess.run([ISTHMUS, "net", "down", "--all"], capture_output=True)
    assert f"ist-run{run.pid}" not in namespaces()


@pytest.mark.serial  # net down --all
def test_net_down_all_stops_the_daemons_of_a_network_whose_state_is_gone(isthmus: Run) -> None:
    """The state directory removed under running daemons (a crash, a hand): `net down
    --all` still finds them and the router, by the namespaces and by their files' paths,
    and stops them."""
    up = isthmus("net", "up", "-p", ROUTED, "--name", "slx")
    try:
        assert up.returncode == 0, up.stderr
        assert "Slurm of east: slurmctld on east0:6817" in up.stdout, up.stdout
        shutil.rmtree("/run/isthmus/slx")
    finally:
        down = isthmus("net", "down", "--all")
    assert down.returncode == 0, down.stderr
    assert "routers and Slurm daemons of removed networks" in down.stdout, down.stdout
    end = time.monotonic() + 5
    while time.monotonic() < end and live_daemons("/run/isthmus/slx/"):
        time.sleep(0.1)
    assert live_daemons("/run/isthmus/slx/") == [] and "ist-slx" not in namespaces()
    router = subprocess.run(["pgrep", "-f", "isthmus-router /run/isthmus/slx/"])
    assert router.returncode == 1, "the network's router was left running"


@pytest.mark.serial  # the bound: cancelled within 10 s of the timeout
def test_a_site_that_never_starts_cancels_the_other(
    isthmus: Run, apps: dict[tuple[str, str], Path]
) -> None:
    """West's partition is down: past --coallocate-timeout the run ends with one line
    naming west and its job state, east's job is cancelled within 10 s, nothing is left;
    Ctrl-C while a job is pending cancels both."""
    up = isthmus("net", "up", "-p", ROUTED, "--name", "slc")
    try:
        assert up.returncode == 0, up.stderr
        conf = "/run/isthmus/slc/slurm/west/slurm.conf"
        scontrol = subprocess.run(
            ["nsenter", "--net=/var/run/netns/ist-slc-west0", "env", f"SLURM_CONF={conf}",
             "scontrol", "update", "PartitionName=batch", "State=DOWN"],
            capture_output=True, text=True,
        )  # fmt: skip
        assert scontrol.returncode == 0, scontrol.stderr
        started = time.monotonic()
        done = isthmus("run", "-p", ROUTED, "--net", "slc", "--coallocate-timeout", "4s",
                       "--", apps[("openmpi", "zip_check")])  # fmt: skip
        assert done.returncode == 1, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert "--coallocate-timeout 4s passed: site west's job" in last, last
        assert "PENDING" in last and "every site's job was cancelled" in last
        assert time.monotonic() - started < 4 + 10
        assert squeue("slc", "east", "east0") == "" or "CANCELLED" in squeue("slc", "east", "east0")
        assert squeue("slc", "west", "west0") == "" or "CANCELLED" in squeue("slc", "west", "west0")

        run = subprocess.Popen(
            [ISTHMUS, "run", "-p", ROUTED, "--net", "slc", "--", apps[("openmpi", "zip_check")]],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert run.stderr is not None
        for line in run.stderr:
            if "west: queued" in line:
                break
        run.send_signal(signal.SIGINT)
        assert run.wait(30) == 130
        for cluster in ("east", "west"):
            queue = squeue("slc", cluster, f"{cluster}0")
            assert queue == "" or set(queue.split()[1::2]) == {"CANCELLED"}, queue
    finally:
        isthmus("net", "down", "--name", "slc")
    assert live_daemons("/run/isthmus/slc/") == []
    assert os.path.exists("/run/isthmus/slc") is False


REAL_PLATFORM = """
name = "two-slurm-sites"
[clusters.east]
host_patterns = ["east*"]
[clusters.west]
host_patterns = ["west*"]
[zippers.fw]
clusters = ["east", "west"]
"""


def site_file(net: str) -> str:
    """A site file whose login commands enter the emulated clusters' login hosts (what
    ssh to a real login node does), with the MPI settings a real site would give."""
    env = (
        '{ OMPI_MCA_pml = "ob1", OMPI_MCA_btl = "tcp,self", OMPI_MCA_btl_tcp_if_include = '
        '"ist0", UCX_TLS = "tcp,self", UCX_NET_DEVICES = "ist0", MPIR_CVAR_NOLOCAL = "1" }'
    )
    text = ""
    for c in ("east", "west"):
        login = [f"--net=/var/run/netns/ist-{net}-{c}0", "env",
                 f"SLURM_CONF=/run/isthmus/{net}/slurm/{c}/slurm.conf", "sh", "-c"]  # fmt: skip
        text += f"[sites.{c}]\nlogin = {json.dumps(['nsenter', *login])}\nnodes = 2\nranks = 2\n"
        text += f"environment = {env}\n"
    text += (
        f'[forwarders.fw]\nlogin = ["nsenter", "--net=/var/run/netns/ist-{net}-east0", "sh", '
        '"-c"]\nlisten = ["198.18.1.1:7300"]\n'
        'reach = { east = "198.18.1.1:7300", west = "198.18.1.1:7300" }\n'
    )
    return text


def test_real_sites_through_their_login_commands(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    """isthmus run --sites: the real-site path (login commands, salloc there, each site's
    part as `isthmus run --site --slurm-job`, a forwarder started through its login
    command) against two running Slurm clusters, both MPIs; a site file that misses a
    forwarder's address for a site is refused in one line."""
    (tmp_path / "real.toml").write_text(REAL_PLATFORM)
    (tmp_path / "sites.toml").write_text(site_file("slr"))
    up = isthmus("net", "up", "-p", ROUTED, "--name", "slr")
    try:
        assert up.returncode == 0, up.stderr
        for mpi in MPIS:
            done = isthmus("run", "-p", tmp_path / "real.toml", "--sites", tmp_path / "sites.toml",
                           "--timeout", "120s", "--", apps[(mpi, "zip_check")])  # fmt: skip
            assert done.returncode == 0, done.stderr[-3000:]
            lines = sorted(done.stdout.split("\n"))[1:]
            assert lines == [f"zip_check rank {r} of 4: ok" for r in range(4)], done.stdout
            assert "east: running (job" in done.stderr
        assert squeue("slr", "east", "east0") in ("",) or "CANCELLED" in squeue(
            "slr", "east", "east0"
        )
    finally:
        isthmus("net", "down", "--name", "slr")
    bad = tmp_path / "bad.toml"
    bad.write_text(site_file("slr").replace(', west = "198.18.1.1:7300"', ""))
    done = isthmus("run", "-p", tmp_path / "real.toml", "--sites", bad, "--", "true")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "forwarders.fw.reach: no address for site west" in done.stderr
