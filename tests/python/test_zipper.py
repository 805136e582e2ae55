"""Zipper forwarding (docs/zipper.md): one MPI job over two clusters whose networks are
disjoint, joined by a forwarder on the zipper host, with each MPI's own launcher per
cluster; the semantics checks of tests/apps/zip_check.c, a rank that dies, a call not
carried yet, and platforms the run refuses."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from conftest import APPS, ISTHMUS, MPIS, PLATFORMS, ROOT, Run
from isthmus.profile.forwarders import between_networks

ZIPPER = PLATFORMS / "zipper.toml"


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@pytest.mark.parametrize("mpi", MPIS)
def test_semantics_and_a_profile_across_the_forwarder(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str, tmp_path: Path
) -> None:
    """zip_check's semantics checks pass on every rank, no namespace is left; --profile on
    the zipped run: one profile of every rank of both sites, the calls recorded, the
    traffic matrix in world ranks across the sites; what the forwarder carried, per pair
    of ranks, merged in and shown."""
    out = tmp_path / "zip.json"
    done = isthmus("run", "-p", ZIPPER, "--profile", out, "--timeout", "120s", "--",
                   apps[(mpi, "zip_check")])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split("\n"))[1:] == [f"zip_check rank {r} of 4: ok" for r in range(4)]
    assert f"ist-run{done.pid}-" not in namespaces()
    d = json.loads(out.read_text())
    rows = d["ranks"]["rows"] if isinstance(d["ranks"], dict) else d["ranks"]
    assert sorted(r["rank"] for r in rows) == [0, 1, 2, 3]
    assert {r[1] for r in d["calls"]["rows"]} >= {"MPI_Send", "MPI_Recv", "MPI_Allreduce"}
    cross = d["traffic"]["p2p"]["cluster_bytes"]
    assert cross[0][1] > 0 and cross[1][0] > 0, cross  # left -> right and back
    (fwd,) = d["forwarders"]
    cluster = {r["rank"]: r["cluster"] for r in rows}
    assert fwd["name"] == "gate0" and fwd["dilation"] == 1.0
    assert all(cluster[p["src"]] != cluster[p["dst"]] for p in fwd["pairs"])  # only across
    relayed = [[0, 0], [0, 0]]
    for p in fwd["pairs"]:
        relayed[cluster[p["src"]]][cluster[p["dst"]]] += p["bytes"]
        assert p["frames"] > 0 and 0 <= p["wait_max_seconds"] <= p["wait_seconds"]
    # the application's bytes across, plus the layer's headers and credits
    assert relayed[0][1] >= cross[0][1] and relayed[1][0] >= cross[1][0], (relayed, cross)
    assert sum(fwd["wait_histogram_real_us"]) == sum(p["frames"] for p in fwd["pairs"])
    shown = isthmus("profile", "show", out)
    assert shown.returncode == 0, shown.stderr
    assert "Forwarder gate0" in shown.stdout and "rank 3 (right)" in shown.stdout


@pytest.mark.parametrize("mpi", MPIS)
def test_collectives_blocking_and_nonblocking_alike(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str
) -> None:
    """Every collective across the zipper, blocking and nonblocking, in place and not, eager
    and rendezvous sizes, v-forms with uneven counts: the values MPI defines, from
    zip_collectives.c's schedules alone and with src/coll's algorithms in front."""
    app = apps[(mpi, "zip_collectives_check")]
    done = isthmus("run", "-p", ZIPPER, "--timeout", "180s", "--", app)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert re.search(r"zip_collectives_check: \d+ cases, 0 differ", done.stdout), done.stdout


@pytest.mark.parametrize("mpi", MPIS)
def test_two_zipper_hosts_and_a_300_mib_message(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str
) -> None:
    """Every zipper host forwards (pairs of ranks spread over them); a message of 300 MiB
    goes across and back (rendezvous, streamed in frames, never held by a forwarder)."""
    two = ("--set", "zippers.gate.hosts=2")
    app = apps[(mpi, "zip_check")]
    done = isthmus("run", "-p", ZIPPER, *two, "--timeout", "120s", "--", app)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(": ok") == 4
    done = isthmus("run", "-p", ZIPPER, *two, "--timeout", "120s", "--", app, "large", "300")
    assert done.returncode == 0, done.stderr
    assert "zip_check large 300 MiB: ok" in done.stdout


@pytest.mark.parametrize("mpi", MPIS)
def test_a_rank_that_dies_ends_both_clusters(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str
) -> None:
    started = time.monotonic()
    done = isthmus(
        "run", "-p", ZIPPER, "--timeout", "120s", "--", apps[(mpi, "exitcode")], "3", "7"
    )
    assert done.returncode == 7, done.stderr
    assert time.monotonic() - started < 30  # network up and down included; the stop: < 10 s
    assert "rank 3 on 198.18.2.2 closed its connection" in done.stderr
    assert f"ist-run{done.pid}-" not in namespaces()


@pytest.mark.parametrize("mpi", MPIS)
def test_fortran_across_the_forwarder(isthmus: Run, tmp_path: Path, mpi: str) -> None:
    """A `use mpi` program: Open MPI's Fortran calls PMPI_X past the C layer, so under
    zipper forwarding its wrappers convert and call the C functions."""
    app = tmp_path / "zip_fortran"
    subprocess.run(
        [f"mpif90.{mpi}", "-O1", "-DUSE_MPI", "-o", str(app), str(APPS / "zip_fortran.F90")],
        check=True,
    )
    done = isthmus("run", "-p", ZIPPER, "--mpi", mpi, "--timeout", "120s", "--", app)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("zip_fortran: ok") == 4


@pytest.mark.parametrize("mpi", MPIS)
def test_mpi4py_across_the_forwarder(isthmus: Run, mpi: str) -> None:
    """mpi4py asks for MPI_THREAD_MULTIPLE and gets serialized. Debian's python3-mpi4py
    is built for Open MPI; for MPICH, scripts/install-deps.sh builds the same version
    into .cache/mpi4py-mpich."""
    env = dict(os.environ)
    if mpi == "mpich":
        env["PYTHONPATH"] = str(ROOT / ".cache" / "mpi4py-mpich")
    done = isthmus(
        "run", "-p", ZIPPER, "--mpi", mpi, "--timeout", "120s", "--",
        "/usr/bin/python3", APPS / "zip_mpi4py.py", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("zip_mpi4py: ok serialized") == 4


@pytest.mark.serial  # kills the newest forwarder
def test_a_forwarder_that_dies_ends_both_clusters(apps: dict[tuple[str, str], Path]) -> None:
    """The ranks sleep outside MPI: isthmus run itself stops both sites' jobs."""
    run = subprocess.Popen(
        [ISTHMUS, "run", "-p", ZIPPER, "--timeout", "120s", "--", apps[("mpich", "sleeper")], "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert run.stdout is not None and run.stdout.readline().strip() == "ready"
        forwarder = subprocess.run(
            ["pgrep", "-n", "-f", "isthmus-forward --listen"], capture_output=True, text=True
        ).stdout.split()
        assert forwarder, "no forwarder is running"
        killed = time.monotonic()
        os.kill(int(forwarder[0]), signal.SIGKILL)
        _, err = run.communicate(timeout=30)
        assert time.monotonic() - killed < 10
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode != 0
    said = [ln for ln in err.splitlines() if ln.startswith("isthmus: ")]
    assert said[-1].startswith("isthmus: the forwarder on gate0 was killed by signal 9 (SIGKILL)")
    assert f"ist-run{run.pid}-" not in namespaces()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize("mpi", MPIS)
def test_real_sites_with_their_own_launchers(
    apps: dict[tuple[str, str], Path], mpi: str, tmp_path: Path
) -> None:
    """Off the emulator: isthmus forward on this host, and each site's job started by its
    own isthmus run --site (two launchers on one machine, the forwarder on loopback); the
    forwarder's --stats say it carried traffic both ways between the sites."""
    where = f"127.0.0.1:{free_port()}"
    stats = tmp_path / "gw.json"
    forward = subprocess.Popen(
        [ISTHMUS, "forward", "--listen", where, "--ranks", "4", "--name", "gw", "--stats", stats],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def site_job(site: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [
                ISTHMUS, "run", "-p", ZIPPER, "--no-emulation", "--mpi", mpi, "--site", site,
                "--site-ranks", "left=2,right=2", "--forwarders", where, "--timeout", "120s",
                "--", apps[(mpi, "zip_check")],
            ],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    sites = [site_job("left"), site_job("right")]
    try:
        outs = [p.communicate(timeout=150) for p in sites]
        forward.wait(timeout=30)
    finally:
        for p in [forward, *sites]:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (_, err) in zip(sites, outs, strict=True):
        assert p.returncode == 0, err
    lines = sorted("".join(out for out, _ in outs).splitlines())
    assert lines == [f"zip_check rank {r} of 4: ok" for r in range(4)]
    assert forward.returncode == 0
    carried = {(p["src"] < 2, p["dst"] < 2) for p in json.loads(stats.read_text())["pairs"]}
    assert carried == {(True, False), (False, True)}  # left -> right and back, nothing else


def test_real_site_options_are_checked(isthmus: Run) -> None:
    done = isthmus("run", "-p", ZIPPER, "--no-emulation", "--", "true")
    assert done.returncode == 2 and "--site, --site-ranks and --forwarders" in done.stderr
    done = isthmus(
        "run", "-p", ZIPPER, "--no-emulation", "--site", "left", "--site-ranks", "left=2",
        "--forwarders", "127.0.0.1:7300", "--", "true",
    )  # fmt: skip
    assert done.returncode == 2 and "no count for right" in done.stderr
    done = isthmus("forward", "--listen", "nowhere", "--ranks", "4")
    assert done.returncode == 2 and "--listen nowhere: expected ADDRESS:PORT" in done.stderr


def test_a_call_not_carried_yet_is_named(isthmus: Run, apps: dict[tuple[str, str], Path]) -> None:
    done = isthmus(
        "run", "-p", ZIPPER, "--timeout", "120s", "--", apps[("openmpi", "zip_check")], "refused"
    )
    assert done.returncode != 0
    assert "MPI_Comm_idup on a communicator that spans sites: not carried" in done.stderr


RANKED = ("--set", "zippers.gate.ranks_per_host=2")  # ranks 4 and 5 on gate0


@pytest.mark.parametrize("mpi", MPIS)
def test_ranks_on_the_zipper_host_placed_as_advised(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str, tmp_path: Path
) -> None:
    """Two ranks on the zipper host (in the left site's job by default); profile, advise,
    run again with the advice: the semantics checks pass both times, every rank runs where
    the placement file says (a rank on the zipper host reaches the forwarder from the
    zipper's own address), and the bytes the forwarder carries between the two networks
    fall as the advice said (zip_check's large exchange across gets an end on the zipper
    host)."""
    app, first, second = apps[(mpi, "zip_check")], tmp_path / "a.json", tmp_path / "b.json"
    place = tmp_path / "place.toml"
    done = isthmus("run", "-p", ZIPPER, *RANKED, "--profile", first, "--timeout", "120s",
                   "--", app)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(done.stdout.split("\n"))[1:] == [f"zip_check rank {r} of 6: ok" for r in range(6)]
    advice = isthmus("profile", "advise", first, "-p", ZIPPER, *RANKED, "-o", place)
    assert advice.returncode == 0, advice.stderr
    assert "minimum vertex cover (König" in advice.stdout and place.exists()
    done = isthmus("run", "-p", ZIPPER, *RANKED, "--placement", place, "--profile", second,
                   "--timeout", "120s", "--", app)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(done.stdout.split("\n"))[1:] == [f"zip_check rank {r} of 6: ok" for r in range(6)]
    placed = tomllib.loads(place.read_text())
    d = json.loads(second.read_text())
    names = d["clusters"]
    assert [names[r["cluster"]] for r in d["ranks"]] == placed["clusters"]
    (fwd,) = d["forwarders"]
    gate = {c["rank"] for c in fwd["connections"] if c["from"] == "198.18.3.1"}
    assert gate == {c["rank"] for c in fwd["connections"] if c["same_host"]}
    assert gate == {r for r, h in enumerate(placed["hosts"]) if h == "gate0"}
    before = between_networks(json.loads(first.read_text()))
    after = between_networks(d)
    assert before > 10 << 20 and after < before / 50, (before, after, advice.stdout)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('hosts = ["left0"]', "hosts: 1 ranks, the platform has 6"),
        ('hosts = ["left0", "left0", "right0", "right1", "gate0", "gate0"]',
         "host 'left0' holds 2 ranks, the platform gives it 1"),
        ('hosts = ["left0", "left9", "right0", "right1", "gate0", "gate0"]',
         "host 'left9': not a host with ranks"),
        ('hosts = ["left0", "left1", "right0", "right1", "gate0", "gate0"]\n'
         'clusters = ["left", "right", "right", "right", "left", "left"]',
         "rank 1 on left1 counted in 'right': expected left"),
        ('platform = "other"', "made for platform 'other', not 'zipper'"),
        ("ranks = 3", "unknown key 'ranks'"),
    ],
)  # fmt: skip
def test_bad_placement_files(isthmus: Run, tmp_path: Path, text: str, message: str) -> None:
    place = tmp_path / "place.toml"
    place.write_text(text + "\n")
    done = isthmus("run", "-p", ZIPPER, *RANKED, "--placement", place, "--", "true")
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_platforms_the_forwarding_refuses(isthmus: Run, tmp_path: Path) -> None:
    apart = tmp_path / "apart.toml"
    apart.write_text(ZIPPER.read_text().split("[zippers.gate]")[0])
    done = isthmus("run", "-p", apart, "--", "true")
    assert done.returncode == 2 and "'left' and 'right' are not joined" in done.stderr
