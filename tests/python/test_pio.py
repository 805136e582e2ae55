"""pio (src/pio, docs/pio.md) on the emulated network: tests/apps/pio_check writes random
views and regions with every strategy and reads them back, and a second job with another
number of clients verifies every byte; the faults (a client killed mid-write, a server
that stops answering, a server that dies); bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PLATFORMS, ROOT, Run
from isthmus.config import platform
from isthmus.launch import environment

PIO = PLATFORMS / "pio.toml"


def pio_check(mpi: str) -> Path:
    return ROOT / "build" / "tests" / mpi / "pio_check"


def run_check(
    isthmus: Run,
    mpi: str,
    directory: Path,
    *args: str,
    sets: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: str = "240s",
) -> tuple[int, str, str]:
    done = isthmus(
        "run", "-p", PIO, "--set", f"io.directory={directory}", *sets, "--mpi", mpi,
        "--timeout", timeout, "--", pio_check(mpi), *args,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_random_views_read_back_and_reopen_with_other_clients(
    isthmus: Run, tmp_path: Path, mpi: str
) -> None:
    # 4 clients and 2 servers write three files at once (odd stripe: unaligned everywhere)
    rc, out, err = run_check(
        isthmus, mpi, tmp_path, "write", "21", "3", sets=("--set", "io.stripe=3000")
    )
    assert rc == 0, out + err[-3000:]
    assert "write, seed 21, 4 clients: 0 mismatches" in out
    assert "repetitions would overlap" in out  # the invalid view's one-line error
    assert "no-such-file: no such file" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["server-0", "server-1"]
    # 2 clients now: the layout comes from the file, not from this job's io.stripe
    rc, out, err = run_check(
        isthmus, mpi, tmp_path, "verify", "21", "3", "4", sets=("--set", "clusters.compute.hosts=2")
    )
    assert rc == 0, out + err[-3000:]
    assert "verify, seed 21, 2 clients: 0 mismatches" in out


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_deep_windows_read_back(isthmus: Run, tmp_path: Path, mpi: str) -> None:
    """window-IOS with a window of up to 64 pieces: several pieces in flight to each server
    (writes) and to each client (reads), pieces from 1 byte to 1 MiB; the window given
    with units, as every size setting may be."""
    env = {"PIO_CHECK_STRATEGY": "window", "ISTHMUS_PIO_WINDOW": "4MiB"}  # a size with units
    rc, out, err = run_check(isthmus, mpi, tmp_path, "write", "33", "3", env=env)
    assert rc == 0, out + err[-3000:]
    assert "write, seed 33, 4 clients: 0 mismatches" in out
    rc, out, err = run_check(
        isthmus, mpi, tmp_path, "verify", "33", "3", "4",
        sets=("--set", "clusters.compute.hosts=3"), env=env,
    )  # fmt: skip
    assert rc == 0, out + err[-3000:]
    assert "verify, seed 33, 3 clients: 0 mismatches" in out


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_two_phase_writes_and_reads(isthmus: Run, tmp_path: Path, mpi: str) -> None:
    """Every collective write and read by aggregators (io.two_phase = "on"), the clients
    in two clusters (two aggregators each): random views and regions read back byte for
    byte, in the writing job and in another that reads them by aggregators too."""
    two_sites = ("--set", "io.two_phase=on", "--set", "io.cluster=storage",
                 "--set", "clusters.west.hosts=2",
                 "--set", "clusters.west.lan.latency=25us")  # fmt: skip
    rc, out, err = run_check(isthmus, mpi, tmp_path, "write", "44", "3", sets=two_sites)
    assert rc == 0, out + err[-3000:]
    assert "write, seed 44, 6 clients: 0 mismatches" in out
    rc, out, err = run_check(isthmus, mpi, tmp_path, "verify", "44", "3", "6", sets=two_sites)
    assert rc == 0, out + err[-3000:]
    assert "verify, seed 44, 6 clients: 0 mismatches" in out


def test_another_server_count_is_refused(isthmus: Run, tmp_path: Path) -> None:
    rc, out, err = run_check(isthmus, "openmpi", tmp_path, "write", "3", "1")
    assert rc == 0, out + err[-3000:]
    rc, out, err = run_check(
        isthmus, "openmpi", tmp_path, "verify", "3", "1", "4",
        sets=("--set", "clusters.storage.hosts=3", "--set", "io.servers=3"),
    )  # fmt: skip
    assert rc != 0
    assert "check-3-0 was striped over 2 I/O servers; this job has 3" in err


def test_client_killed_mid_write_leaves_the_others_data(isthmus: Run, tmp_path: Path) -> None:
    # client 1 is killed after 3 pieces of its second write (64 KiB pieces of 300 KB)
    rc, out, err = run_check(isthmus, "openmpi", tmp_path, "crash", "8", "3")
    assert rc == 128 + 9, out + err[-2000:]
    three = ("--set", "clusters.compute.hosts=3")
    rc, out, err = run_check(isthmus, "openmpi", tmp_path, "after-crash", "8", "4", sets=three)
    assert rc == 0, out + err[-3000:]
    assert "after-crash, seed 8, 3 clients: 0 mismatches" in out
    # client 1's region: its first pattern but for the 3 pieces (at most 64 KiB each) that
    # reached the servers before it died
    second = re.search(r"(\d+) bytes of client 1's region hold its second pattern", out)
    assert second and 0 < int(second.group(1)) <= 3 * 65536, out


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_a_server_that_stops_answering_is_an_error_within_the_timeout(
    isthmus: Run, tmp_path: Path, mpi: str
) -> None:
    started = time.monotonic()
    rc, _, err = run_check(
        isthmus, mpi, tmp_path, "write", "4", "2",
        env={"ISTHMUS_PIO_TEST_SERVER_STALL": "1:6", "ISTHMUS_PIO_TIMEOUT": "3"},
    )  # fmt: skip
    took = time.monotonic() - started
    assert rc != 0
    assert "I/O server 1 (rank 5) did not answer within 3 s" in err, (rc, err[-2000:])
    assert took < 60, took


def test_a_server_that_dies_ends_the_job(isthmus: Run, tmp_path: Path) -> None:
    started = time.monotonic()
    rc, out, err = run_check(
        isthmus, "mpich", tmp_path, "write", "4", "2", env={"ISTHMUS_PIO_TEST_SERVER_DIE": "0:6"}
    )
    # The killed server's status (128 + 9), unless a client's MPI saw the dead peer first
    # and failed (MPICH: UCX "Endpoint timeout", exit 15): either way an error, soon.
    assert rc in (128 + 9, 15), out + err[-2000:]
    assert time.monotonic() - started < 60


def test_a_missing_server_directory_is_one_line(isthmus: Run, tmp_path: Path) -> None:
    rc, _, err = run_check(isthmus, "openmpi", tmp_path / "missing", "write", "1", "1")
    assert rc == 2
    lines = [x for x in err.splitlines() if x.startswith("pio:")]
    assert lines == [
        f"pio: I/O server 0: directory {tmp_path / 'missing'} does not exist "
        "(the platform's io.directory)"
    ]
    assert not (tmp_path / "missing").exists()


def test_platform_io_servers() -> None:
    p = platform.load(PIO)
    assert p.io_server_ranks(6) == [4, 5]
    p = platform.load(PIO, ["clusters.storage.hosts=3"])
    assert p.io_server_ranks(7) == [4, 5]
    p = platform.load(PIO, ["io.cluster=compute"])
    assert p.io_server_ranks(6) == [0, 1]


def test_window_is_the_bandwidth_delay_product_to_the_servers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twice the product: 1 Gbit/s ports and a round trip of 2 x (50 us + 25 us), 2 x 18750
    bytes; storage 2 ms away: 2 x (2 ms + 25 us) at 1 Gbit/s, 2 x 506250 bytes. The
    caller's ISTHMUS_PIO_WINDOW wins."""
    monkeypatch.delenv("ISTHMUS_PIO_WINDOW", raising=False)
    assert environment.pio_environment(platform.load(PIO), 6)["ISTHMUS_PIO_WINDOW"] == "37500"
    far = platform.load(PIO, ["wan.latency=2ms"])
    assert environment.pio_environment(far, 6)["ISTHMUS_PIO_WINDOW"] == "1012500"
    unlimited = platform.load(PIO, ["clusters.storage.lan.bandwidth=unlimited", "wan.bandwidth=0"])
    assert "ISTHMUS_PIO_WINDOW" not in environment.pio_environment(unlimited, 6)
    monkeypatch.setenv("ISTHMUS_PIO_WINDOW", "1000")
    assert environment.pio_environment(far, 6)["ISTHMUS_PIO_WINDOW"] == "1000"


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["io.servers=3"], "io.servers: 3 servers, but cluster 'storage' has 2 ranks"),
        (["io.stripe=0"], "io.stripe: 0 bytes: expected 1 byte to 1GiB"),
        (["io.cluster=moon"], "io.cluster: unknown cluster 'moon'"),
    ],
)
def test_bad_io_tables(isthmus: Run, sets: list[str], message: str) -> None:
    done = isthmus("platform", "check", PIO, *[a for s in sets for a in ("--set", s)])
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_pio_bench_runs_every_method_and_summarizes(isthmus: Run, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    done = isthmus(
        "pio", "bench", "-p", PIO, "--mpi", "mpich", "-o", out, "--size", "256KiB",
        "--blocks", "16KiB:32KiB", "--strategies", "first,window", "--repeat", "2",
        "--class", "S", "--steps", "2", "--timeout", "300s",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    by = {w["workload"]: w for w in summary["workloads"]}
    assert set(by) == {"contiguous", "btio"}
    for w in by.values():
        for op in ("write", "read"):
            o = w["ops"][op]
            # 2 strategies x 2 blocks, each the median of 2 repetitions
            assert len(o["points"]) == 4
            assert o["raw_mb_s"]["median"] > 0 and o["mpiio_mb_s"]["median"] > 0
            assert o["mpiio_servers_mb_s"]["median"] > 0
            assert set(o["best_per_strategy"]) == {"first", "window"}
    records = [json.loads(x) for x in (out / "contiguous.jsonl").read_text().splitlines()]
    pio = [r for r in records if r["record"] == "pio"]
    # per repetition: raw, MPI-IO (local and through the servers) and 4 pio points, each a
    # write and a read
    assert len(pio) == 2 * (3 + 4) * 2
    assert {r["bytes"] for r in pio} == {4 * 256 * 1024}  # 4 clients' regions, every method
    assert (out / "contiguous.png").stat().st_size > 10_000
    assert (out / "btio.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--blocks", "8KiB"], "--blocks 8KiB: expected MIN:MAX"),
        (["--blocks", "1MiB:4KiB"], "--blocks 1MiB:4KiB: expected MIN <= MAX"),
        (["--strategies", "hash,lifo"], "--strategies hash,lifo: expected a comma-separated list"),
        (["--size", "lots"], "--size: "),
        (["--repeat", "0"], "--repeat 0: expected a positive whole number"),
    ],
)
def test_pio_bench_bad_input(isthmus: Run, tmp_path: Path, args: list[str], message: str) -> None:
    done = isthmus("pio", "bench", "-p", PIO, "-o", tmp_path / "b", *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "b").exists()


def test_pio_bench_btio_needs_a_square_of_clients(isthmus: Run, tmp_path: Path) -> None:
    three = ("--set", "clusters.compute.hosts=3")
    done = isthmus("pio", "bench", "-p", PIO, *three, "-o", tmp_path / "b")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "isthmus: error: --class W: btio needs a square number of clients that divides the "
        "array side 24; the platform has 3 (ranks that are not I/O servers)"
    ]
    assert not (tmp_path / "b").exists()


def test_pio_bench_needs_io_servers(isthmus: Run, tmp_path: Path) -> None:
    done = isthmus("pio", "bench", "-p", PLATFORMS / "two-clusters.toml", "-o", tmp_path / "b")
    assert done.returncode == 2
    assert "no [io] table" in done.stderr


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_file_views_of_every_datatype_constructor_match_the_mpis_typemaps(mpi: str) -> None:
    """pio's datatype decoder (src/pio/pio_datatype.c) against the MPI's own MPI_Unpack:
    where every byte of the stream of every constructor lands, alone and nested, darrays
    for every rank of their grid, the next instance of each; the views MPI-IO forbids
    are refused with one line (tests/apps/view_check.c)."""
    launcher = {
        "openmpi": ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"],
        "mpich": ["mpiexec.mpich"],
    }[mpi]
    done = subprocess.run(
        [*launcher, "-np", "1", str(ROOT / "build" / "tests" / mpi / "view_check")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    said = re.search(r"view_check: (\d+) datatypes, \d+ bytes compared, 0 differ", done.stdout)
    assert said and int(said.group(1)) >= 29, done.stdout
    assert "leaked" not in done.stderr, done.stderr  # MPICH counts datatypes never freed
