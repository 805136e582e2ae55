"""The scale model (docs/dilation.md): every clock and sleep a rank uses scaled and
monotonic (C, Fortran, Python), the router's delays and rates scaled on its virtual clock,
a capped host held to its share, no cgroup left behind, bad input refused. Small K, short
runs: K = 1 is every other test of the suite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import AS_NOBODY, ISTHMUS, MACHINE_ROOT, MPIS, PLATFORMS, TWO_CLUSTERS, Run
from isthmus.emulate import dilation

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
PROBE = BUILD / "bin" / "isthmus-probe"
TWO_HOSTS = ("--set", "clusters.east.hosts=1", "--set", "clusters.west.hosts=1")
# serial (make test runs it alone): it times dilated runs against their cores
pytestmark = [
    pytest.mark.serial,
    pytest.mark.skipif(os.geteuid() != 0, reason="dilation caps CPUs in cgroups: root"),
]


def layer(mpi: str) -> Path:
    return BUILD / "lib" / mpi / "libisthmus.so"


def preloaded(mpi: str, k: float) -> dict[str, str]:
    """The environment `isthmus run` gives a dilated rank, without the launcher."""
    return {
        **os.environ,
        "LD_PRELOAD": str(layer(mpi)),
        "ISTHMUS_DILATION": f"{k}:{time.monotonic_ns()}",
    }


@pytest.fixture(scope="module")
def clocks_program() -> dict[str, Path]:
    """tests/apps/dilated_clocks.c as make build builds it for each MPI."""
    return {mpi: BUILD / "tests" / mpi / "dilated_clocks" for mpi in MPIS}


@pytest.mark.parametrize("mpi", MPIS)
def test_every_clock_and_sleep_is_scaled_and_monotonic(
    clocks_program: dict[str, Path], mpi: str
) -> None:
    k = 3.0
    done = subprocess.run(
        [str(clocks_program[mpi])],
        env=preloaded(mpi, k),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    for name, c in d["clocks"].items():
        assert c["backwards"] == 0, (name, c)
        want = c["real_ms"] if name == "process_cputime" else c["real_ms"] / k
        slack = 5.0 if "coarse" in name else 0.05 * want  # a coarse clock ticks every 4 ms
        assert abs(c["advanced_ms"] - want) <= slack + c["uncertainty_ms"], (name, c)
    assert abs(d["time_minus_realtime_s"]) <= 1.01
    for name, real_ms in d["sleeps_real_ms"].items():
        assert k * d["sleep_ms"] <= real_ms <= k * d["sleep_ms"] + 15, (name, real_ms)


def test_without_dilation_nothing_changes(clocks_program: dict[str, Path]) -> None:
    env = {**os.environ, "LD_PRELOAD": str(layer("openmpi"))}
    done = subprocess.run(
        [str(clocks_program["openmpi"])], env=env, capture_output=True, text=True, timeout=60
    )
    d = json.loads(done.stdout)
    for name, c in d["clocks"].items():
        slack = (5 if "coarse" in name else 1) + c["uncertainty_ms"]  # preempted between reads
        assert abs(c["advanced_ms"] - c["real_ms"]) <= slack, (name, c)
    for name, real_ms in d["sleeps_real_ms"].items():
        assert d["sleep_ms"] <= real_ms <= d["sleep_ms"] + 10, (name, real_ms)


def test_python_clocks_and_sleep_are_scaled() -> None:
    script = (
        "import json, time\n"
        "m, w, p = time.monotonic(), time.time(), time.perf_counter()\n"
        "time.sleep(0.1)\n"
        "print(json.dumps([time.monotonic() - m, time.time() - w, time.perf_counter() - p]))\n"
    )
    k = 4.0
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=preloaded("mpich", k),
        capture_output=True,
        text=True,
        timeout=60,
    )
    real = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    for virtual in json.loads(done.stdout):
        assert 0.1 <= virtual <= 0.1 + 0.02, done.stdout
    assert real >= k * 0.1


@pytest.mark.parametrize("mpi", MPIS)
def test_fortran_timers_under_a_dilated_run(isthmus: Run, tmp_path: Path, mpi: str) -> None:
    exe = tmp_path / "clocks_f"
    subprocess.run(
        [f"mpif90.{mpi}", "-o", str(exe), str(ROOT / "tests/apps/dilated_clocks.F90")],
        check=True,
    )
    started = time.monotonic()
    done = isthmus("run", "-p", TWO_CLUSTERS, *TWO_HOSTS, "--dilate", "2", "--", exe)
    real = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "time dilation K = 2" in done.stderr
    for line in done.stdout.splitlines():
        system_clock, wtime, cpu = (float(x) for x in line.split()[1::2])
        assert 0.5 <= system_clock <= 0.53 and 0.5 <= wtime <= 0.53, line  # sleeps 0.5 s
        assert cpu < 0.1, line
    assert real >= 2 * 0.5


def test_router_scales_delays_and_rates(isthmus: Run) -> None:
    name = f"dil{os.getpid() % 100000}"
    up = isthmus(
        "net", "up", "-p", TWO_CLUSTERS, "--name", name, *TWO_HOSTS, "--dilate", "4",
        "--set", "wan.latency=2ms", "--set", "wan.bandwidth=20Mbit/s",
    )  # fmt: skip
    assert up.returncode == 0, up.stderr
    server = subprocess.Popen(
        ["ip", "netns", "exec", f"ist-{name}-west0", str(PROBE), "serve", "--seconds", "60"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "serving"

        def probe(*args: str) -> dict[str, float]:
            done = subprocess.run(
                ["ip", "netns", "exec", f"ist-{name}-east0", str(PROBE), *args],
                capture_output=True,
                text=True,
                timeout=60,
            )
            result: dict[str, float] = json.loads(done.stdout)
            return result

        # real RTT = K x 2 x (2 ms + 25 us LAN port): at least that, within 10% above (a
        # delay scaled in the wrong units is 4x off: this checks the scaling; the medians
        # here are 2.0-3.0% above, from the probe's and the router's wake-ups on this
        # 2-core machine under the full suite; the target, max(50 us, 2%), is held in
        # net/selftest-dilated, where nothing else runs)
        r = probe("rtt", "198.18.2.1", "--udp", "--count", "20")
        assert 4 * 4.05e3 <= r["median_us"] <= 4 * 4.05e3 * 1.1, r
        status = json.loads(isthmus("net", "status", "--name", name, "--json").stdout)
        assert status["dilation"] == 4
        # dilated, the devices carry jumbo frames (docs/dilation.md)
        link = ["ip", "-n", f"ist-{name}-east0", "link", "show", "ist0"]
        assert " mtu 9000 " in subprocess.run(link, capture_output=True, text=True).stdout
        # net set speaks virtual units (real ones would be 4x off: this checks the units;
        # under the full suite the median came 5.1% above, the precision is selftest's)
        assert isthmus("net", "set", "--name", name, "wan:*", "latency=1ms").returncode == 0
        r = probe("rtt", "198.18.2.1", "--udp", "--count", "20")
        assert 4 * 2.05e3 <= r["median_us"] <= 4 * 2.05e3 * 1.1, r
        # 20 Mbit/s virtual is 5 Mbit/s real
        s = probe("stream", "198.18.2.1", "--seconds", "1")
        assert 0.9 * 5e6 <= s["goodput_bps"] <= 1.02 * 5e6, s
    finally:
        server.terminate()
        server.wait(10)
        assert isthmus("net", "down", "--name", name).returncode == 0
    assert not Path(dilation.network_cgroup(name)).exists()


@pytest.mark.parametrize("mpi", MPIS)
def test_a_capped_host_gets_its_share_and_virtual_time_is_cpu_time(isthmus: Run, mpi: str) -> None:
    """Two ranks, each alone on its host, at K = 4: each gets a quarter of a CPU, so 0.15 s
    of work takes 0.6 s of real time and 0.15 s of virtual time."""
    program = BUILD / "tests" / mpi / "compute_only"
    started = time.monotonic()
    done = isthmus("run", "-p", TWO_CLUSTERS, *TWO_HOSTS, "--dilate", "4", "--", program, "150")
    real = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    assert d["seconds"] <= 1.15 * d["cpu_seconds"], d  # virtual time is its compute
    assert real >= 3.5 * d["cpu_seconds"], (real, d)  # a quarter of a CPU each
    assert not dilation.leftover_cgroups()


def test_killed_run_leaves_cgroups_that_down_all_removes(
    isthmus: Run, apps: dict[tuple[str, str], Path]
) -> None:
    run = subprocess.Popen(
        [str(ISTHMUS), "run", "-p", str(TWO_CLUSTERS), *TWO_HOSTS, "--dilate", "2", "--",
         str(apps[("openmpi", "sleeper")]), "60"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        base = dilation.network_cgroup(f"run{run.pid}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            (d / "cgroup.procs").read_text().strip() for d in base.glob("ist-*")
        ):
            time.sleep(0.1)
        assert base.is_dir()
    finally:
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    time.sleep(0.5)
    assert base.is_dir()  # SIGKILL: nobody cleaned up
    done = isthmus("net", "down", "--all")
    assert done.returncode == 0, done.stderr
    assert str(base) in done.stdout and f"run{run.pid}" in done.stdout
    assert not base.exists()
    assert not dilation.cgroup_root().exists()  # nothing of isthmus left in the hierarchy


def test_bad_dilation_is_refused(isthmus: Run, tmp_path: Path) -> None:
    for args in (("--dilate", "0.5"), ("--dilate", "fast"), ("--set", "emulation.dilation=-1")):
        done = isthmus("run", "-p", TWO_CLUSTERS, *args, "--", "true")
        assert done.returncode == 2, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text(TWO_CLUSTERS.read_text() + '\n[emulation]\ndilation = "slow"\n')
    done = isthmus("platform", "check", bad)
    assert done.returncode == 2 and "emulation.dilation" in done.stderr
    done = isthmus(
        "run", "-p", PLATFORMS / "site-patterns.toml", "-n", "2", "--dilate", "2", "--", "true"
    )
    assert done.returncode == 2 and "dilation" in done.stderr


@pytest.mark.skipif(not MACHINE_ROOT, reason="changes user: machine's root")
def test_rootless_refuses_dilation() -> None:
    done = subprocess.run(
        [*AS_NOBODY, str(ISTHMUS), "run", "-p", str(TWO_CLUSTERS), "--dilate", "2", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "cgroup" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_auto_factor_gives_every_host_its_cores() -> None:
    from isthmus.config import platform

    p = platform.load(TWO_CLUSTERS, ["clusters.east.cores=2"])
    d = dilation.auto_factor(p, cpus=2)
    # 2 x 2 + 2 x 1 = 6 cores on 2 CPUs less the router's share
    assert d.factor == pytest.approx(6 / (2 - dilation.ROUTER_SHARE), abs=0.25)
    assert "6 emulated cores" in d.why
    assert dilation.auto_factor(platform.load(TWO_CLUSTERS), cpus=64).factor == 1.0
    period, quota = dilation.period_and_quota(1, 16)
    assert quota >= 1000 and quota / period == pytest.approx(1 / 16, rel=0.01)
