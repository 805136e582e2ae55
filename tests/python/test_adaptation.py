"""Live adaptation (collectives.adapt, src/coll/hier_adapt.c; docs/layer.md): the
layer's choices follow a wide area changed while the program runs (`isthmus net set`),
every rank switches at the same call, and the profile lists each switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import MPIS, TWO_CLUSTERS, Run
from isthmus.experiment.runners._series import run_series

# serial (make test runs it alone): the layer reacts to the round trips it measures
pytestmark = pytest.mark.serial

FAST = ["wan.latency=1ms", "wan.bandwidth=1Gbit/s"]
LAYER = ["layer.collectives=isthmus", "collectives.adapt=true"]


SLOW = ["latency=20ms", "bandwidth=20Mbit/s"]
BACK = ["latency=1ms", "bandwidth=1Gbit/s"]


def run_with_change(
    mpi: str,
    tmp_path: Path,
    iterations: int,
    changes: dict[int, list[str]],
    hosts: int = 2,
    on: str = "world",
    sizes: str = "8,65536",
) -> dict:
    """The series program (every result checked against the MPI's own) on its own
    network of two clusters of `hosts` ranks, with `isthmus net set` at the iterations
    given; its calls on MPI_COMM_WORLD, a communicator made after each change, or an
    intercommunicator (`on`)."""
    args = ["--sizes", sizes, "--iterations", str(iterations), "--check-native", "--on", on]
    sets = [f"clusters.east.hosts={hosts}", f"clusters.west.hosts={hosts}", *FAST]
    return run_series(str(TWO_CLUSTERS), sets, LAYER, mpi, changes, args, tmp_path, "series", 240)


@pytest.mark.parametrize("mpi", MPIS)
def test_the_choices_follow_the_wan_there_and_back_and_the_profile_lists_the_switches(
    isthmus: Run, mpi: str, tmp_path: Path
) -> None:
    """1 ms / 1 Gbit/s, 20 ms / 20 Mbit/s from iteration 10, back from iteration 30 (4
    calls an iteration): the ranks agree on each drift within a few iterations and measure
    the wide area again; every result matches the MPI's own; `isthmus profile show` lists
    the switches."""
    done = run_with_change(mpi, tmp_path, 48, {10: SLOW, 30: BACK})
    assert done["status"] == 0, done["stderr"]
    switches = done["profile"]["adaptation"]["switches"]
    there = [s for s in switches if s["wan_after"][0] > 10e3]
    back = [s for s in switches if s["wan_after"][0] < 5e3 and s["call"] > 30 * 4]
    assert there and back, switches
    # within the calls of 14 iterations after each change (the detection needs 4 calls of
    # a choice, the agreement two checks of 8 calls: 8 iterations, measured)
    assert 10 * 4 < there[0]["call"] <= 24 * 4 and there[0]["slower_seen_by"] >= 0, switches
    assert 30 * 4 < back[0]["call"] <= 44 * 4 and back[0]["faster_seen_by"] >= 0, switches
    shown = isthmus("profile", "show", str(tmp_path / "series.profile.json"))
    assert shown.returncode == 0 and "Live adaptation" in shown.stdout, shown.stdout


@pytest.mark.parametrize("mpi", MPIS)
def test_sixteen_ranks_switch_together_and_every_result_is_right(mpi: str, tmp_path: Path) -> None:
    """16 ranks (8 a cluster) on 2 cores: the WAN slows at iteration 10 and comes back at
    24; every rank takes each switch at the same call (a mismatch would deadlock the run or
    give a result other than the MPI's own), and the slow-down is followed."""
    done = run_with_change(mpi, tmp_path, 34, {10: SLOW, 24: BACK}, hosts=8, sizes="8")
    assert done["status"] == 0, done["stderr"]
    switches = done["profile"]["adaptation"]["switches"]
    assert any(s["wan_after"][0] > 10e3 and s["ranks"] == 16 for s in switches), switches


@pytest.mark.parametrize("mpi", ["mpich"])  # Open MPI: the intercommunicator test's
def test_a_communicator_made_after_a_change_starts_from_the_measured_network(
    mpi: str, tmp_path: Path
) -> None:
    """The calls go to a new communicator after each change (--on later): the one made
    when the WAN went to 20 ms has the slow network in its first calls, so its own usual
    ratios cannot show the change; against those the first communicator learnt for the
    same choices they do, and it switches; its ranks agree (every result checked)."""
    done = run_with_change(mpi, tmp_path, 36, {10: SLOW, 30: BACK}, on="later", sizes="8")
    assert done["status"] == 0, done["stderr"]
    switches = done["profile"]["adaptation"]["switches"]
    assert any(s["wan_after"][0] > 10e3 for s in switches), switches


@pytest.mark.parametrize("mpi", ["openmpi"])  # MPICH: the later communicator's test
def test_intercommunicator_calls_stay_right_while_the_network_changes(
    mpi: str, tmp_path: Path
) -> None:
    """Bcast and Allreduce on an intercommunicator between the even and the odd ranks
    (each group spanning both clusters) through two changes of the WAN: the layer leaves
    intercommunicators to the MPI, so adaptation must neither switch nor disturb them."""
    done = run_with_change(mpi, tmp_path, 24, {6: SLOW, 16: BACK}, on="inter", sizes="8")
    assert done["status"] == 0, done["stderr"]
    assert done["profile"]["adaptation"]["switches"] == []
