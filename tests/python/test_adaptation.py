"""Live adaptation (collectives.adapt, src/coll/hier_adapt.c; docs/layer.md): the
layer's choices follow a wide area changed while the program runs (`isthmus net set`),
every rank switches at the same call, and the profile lists each switch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import ISTHMUS, MPIS, ROOT, TWO_CLUSTERS, Run

SERIES = ROOT / "build" / "bin"
FAST = ("--set", "wan.latency=1ms", "--set", "wan.bandwidth=1Gbit/s")
LAYER = ("--set", "layer.collectives=isthmus", "--set", "collectives.adapt=true")


def run_with_change(
    isthmus: Run, mpi: str, tmp_path: Path, iterations: int, changes: dict[int, list[str]]
) -> tuple[subprocess.CompletedProcess[str], dict]:
    """The series program on its own network, with `isthmus net set` at the iterations
    given (settings per iteration); its result and its profile."""
    name = f"ad{os.getpid() % 100000}"
    up = isthmus("net", "up", "-p", TWO_CLUSTERS, "--name", name, *FAST)
    assert up.returncode == 0, up.stderr
    profile, go = tmp_path / "profile.json", tmp_path / "go"
    pauses = ",".join(map(str, changes))
    cmd = [str(ISTHMUS), "run", "-p", str(TWO_CLUSTERS), "--net", name, *FAST, *LAYER,
           "--mpi", mpi, "--profile", str(profile), "--timeout", "3min", "--",
           str(SERIES / mpi / "series"), "--sizes", "8,65536", "--iterations", str(iterations),
           "--check-native", "--pause-at", pauses, "--go-file", str(go)]  # fmt: skip
    out_file = tmp_path / "series.out"  # a file: a pipe read after stderr could fill
    with out_file.open("w") as out_w:
        run = subprocess.Popen(cmd, stdout=out_w, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)  # fmt: skip
    err: list[str] = []
    try:
        assert run.stderr is not None
        for line in run.stderr:
            err.append(line)
            if line.startswith("series: paused at "):  # the program waits for go.IT
                it = int(line.split()[-1])
                done = isthmus("net", "set", "--name", name, "wan:*", *changes[it])
                assert done.returncode == 0, done.stderr
                Path(f"{go}.{it}").touch()
        run.wait(60)
        out = out_file.read_text()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGTERM)
            run.wait(30)
        isthmus("net", "down", "--name", name)
    result = subprocess.CompletedProcess(cmd, run.returncode, out, "".join(err))
    data = json.loads(profile.read_text()) if profile.exists() else {}
    return result, data


@pytest.mark.parametrize("mpi", MPIS)
def test_the_choices_follow_the_wan_there_and_back_and_the_profile_lists_the_switches(
    isthmus: Run, mpi: str, tmp_path: Path
) -> None:
    """1 ms / 1 Gbit/s, 20 ms / 20 Mbit/s from iteration 10, back from iteration 30 (4
    calls an iteration): the ranks agree on each drift within a few iterations and measure
    the wide area again; every result matches the MPI's own; `isthmus profile show` lists
    the switches."""
    slow, fast = ["latency=20ms", "bandwidth=20Mbit/s"], ["latency=1ms", "bandwidth=1Gbit/s"]
    done, profile = run_with_change(isthmus, mpi, tmp_path, 48, {10: slow, 30: fast})
    assert done.returncode == 0, done.stderr[-3000:]
    switches = profile["adaptation"]["switches"]
    there = [s for s in switches if s["wan_after"][0] > 10e3]
    back = [s for s in switches if s["wan_after"][0] < 5e3 and s["call"] > 30 * 4]
    assert there and back, switches
    # within the calls of 14 iterations after each change (the detection needs 4 calls of
    # a choice, the agreement two checks of 8 calls: 8 iterations, measured)
    assert 10 * 4 < there[0]["call"] <= 24 * 4 and there[0]["slower_seen_by"] >= 0, switches
    assert 30 * 4 < back[0]["call"] <= 44 * 4 and back[0]["faster_seen_by"] >= 0, switches
    shown = isthmus("profile", "show", str(tmp_path / "profile.json"))
    assert shown.returncode == 0 and "Live adaptation" in shown.stdout, shown.stdout
