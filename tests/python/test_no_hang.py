"""No hang, no stall (issue 43): the patterns that hung or were feared to, each run
under the default waits with both MPIs; and a run that does hang says where every rank
is when its --timeout fires."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import MPIS, PLATFORMS, TWO_CLUSTERS, Run
from isthmus.launch import backtraces

ZIPPER = PLATFORMS / "zipper.toml"
PLACEMENTS = ("block", "round-robin")


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("mpi", MPIS)
def test_probe_then_receive_of_synchronous_sends(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str, placement: str
) -> None:
    """Rank 0 probes with MPI_ANY_SOURCE and receives what it probed while the others
    MPI_Ssend to it, same-site and forwarded messages meeting the same wildcard; 30 rounds,
    then everyone goes straight on to MPI_Finalize."""
    done = isthmus(
        "run", "-p", ZIPPER, "--set", f"layer.placement={placement}", "--timeout", "60s",
        "--", apps[(mpi, "probe_ssend")], "30",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count(": ok") == 4


@pytest.mark.parametrize(("mpi", "placement"), list(zip(MPIS, PLACEMENTS, strict=True)))
def test_random_point_to_point_across_the_forwarder(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str, placement: str
) -> None:
    """tests/apps/zip_stress.c for 5 s: synchronous, buffered and nonblocking sends of
    every size class against probes, matched probes, wildcard and cancelled receives."""
    done = isthmus(
        "run", "-p", ZIPPER, "--set", f"layer.placement={placement}", "--timeout", "90s",
        "--", apps[(mpi, "zip_stress")], "5",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[:200] + done.stderr[-3000:]
    assert done.stdout.count(": ok,") == 4, done.stdout


@pytest.mark.serial  # it measures the waiting ranks' share of the cores
@pytest.mark.parametrize(
    ("mpi", "call"),
    [("openmpi", "create_group"), ("mpich", "split_type"), ("openmpi", "split_type")],
)
def test_ranks_waiting_inside_the_mpi_for_a_late_rank_sleep(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str, call: str
) -> None:
    """The stall's cause: 8 ranks on 2 cores, 7 of them waiting 2 s for rank 0 in a
    communicator constructor. Spinning, each takes its share of the cores (about 0.28);
    under the default waits they sleep: MPI_Comm_split_type after a sleeping barrier,
    and Open MPI's own waits in MPI_Comm_create_group, whose sched_yield the layer makes
    a short sleep (16 yielding ranks froze the machine for up to 100 s)."""
    done = isthmus(
        "run", "-p", PLATFORMS / "das-4x2.toml", "--timeout", "60s",
        "--", apps[(mpi, "late_rank")], "2", call,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    shares = [float(line.split()[-1]) for line in done.stdout.splitlines() if "share" in line]
    assert len(shares) == 7 and max(shares) < 0.15, done.stdout


@pytest.mark.parametrize("platform", ["five-ranks", "zipper"])
@pytest.mark.parametrize("mpi", MPIS)
def test_collectives_of_zero_counts_return(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str, platform: str
) -> None:
    """Every collective, blocking and nonblocking, with all counts zero, then the v and w
    forms with zero counts for odd ranks only, under the default (sleeping) waits."""
    where = (
        ["-p", TWO_CLUSTERS, "--set", "clusters.east.hosts=3"]
        if platform == "five-ranks"
        else ["-p", ZIPPER]
    )
    done = isthmus(
        "run", *where, "--timeout", "60s", "--", apps[(mpi, "zero_counts")], "all", "some"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = 5 if platform == "five-ranks" else 4
    assert done.stdout.count("ok, 41 calls") == ranks, done.stdout


@pytest.mark.parametrize("mpi", MPIS)
def test_a_timeout_shows_where_every_rank_is(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str
) -> None:
    done = isthmus(
        "run", "-p", TWO_CLUSTERS, "--timeout", "3s", "--", apps[(mpi, "sleeper")], "60", "hang"
    )
    assert done.returncode == 124, done.stderr
    assert "where each rank was (every thread's stack: " in done.stderr, done.stderr
    lines = [ln.strip() for ln in done.stderr.splitlines() if ln.startswith("  rank ")]
    assert [ln.split(":")[0] for ln in lines] == [
        "rank 0 on east0", "rank 1 on east1", "rank 2 on west0", "rank 3 on west1"
    ], done.stderr  # fmt: skip
    assert "MPI_Recv" in lines[0] and all("Barrier" in ln for ln in lines[1:]), done.stderr
    stacks = Path(done.stderr.split("every thread's stack: ")[1].split(")")[0])
    assert "==== rank 3 on west1" in stacks.read_text()
    stacks.unlink()


def test_a_backtrace_summary_names_the_mpi_call_and_its_caller() -> None:
    """Inlined twins once; an MPI entry deeper than the innermost frames shown, with its
    caller, after '...'."""
    inner = ["nanosleep", "ist_world_idle", "ist_world_idle", "ist_sleep_until_done"]
    frames = [*inner, "ist_sleepwait_Recv", "ist_own_Recv", "ist_own_Recv", "a", "b", "c"]
    frames += ["d", "MPI_Recv", "main", "__libc_start_call_main"]
    assert backtraces.summary(frames) == (
        "nanosleep < ist_world_idle < ist_sleep_until_done < ist_sleepwait_Recv < ist_own_Recv"
        " < a < b < c < ... < MPI_Recv < main"
    )
    assert backtraces.summary(["x", "MPI_Barrier", "main"]) == "x < MPI_Barrier < main"
