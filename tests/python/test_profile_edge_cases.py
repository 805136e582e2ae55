"""The profile of tests/apps/edge_cases.c under both MPIs and both waiting modes: paused
regions, derived types, MPI_PROC_NULL, MPI_IN_PLACE, v forms, intercommunicators, probes,
nonblocking collectives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import MPIS, TWO_CLUSTERS, profile_run

# One pytest process runs this file: its module fixture runs once (make test: -n 2).
pytestmark = pytest.mark.xdist_group("profile_edge_cases")

N = 4


@pytest.fixture(
    scope="module",
    params=[(m, w) for m in MPIS for w in ("spin", "sleep")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def profile(
    request: pytest.FixtureRequest,
    apps: dict[tuple[str, str], Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    mpi, wait = request.param
    out = tmp_path_factory.mktemp("edge") / "p.json"
    return profile_run(apps[(mpi, "edge_cases")], out, TWO_CLUSTERS, "--set", f"layer.wait={wait}")


def calls(p: dict[str, Any]) -> Counter[tuple[int, str, int]]:
    c: Counter[tuple[int, str, int]] = Counter()
    for rank, fn, low, ncalls, _nbytes, _s in p["calls"]["rows"]:
        c[(rank, fn, low)] += ncalls
    return c


def bytes_of(p: dict[str, Any], fn: str) -> dict[int, int]:
    out: dict[int, int] = Counter()
    for rank, f, _low, _calls, nbytes, _s in p["calls"]["rows"]:
        if f == fn:
            out[rank] += nbytes
    return dict(out)


def test_paused_calls_are_not_counted(profile: dict[str, Any]) -> None:
    assert not any(row[1] == "MPI_Sendrecv" for row in profile["calls"]["rows"])


def test_derived_type_and_proc_null_sizes(profile: dict[str, Any]) -> None:
    c = calls(profile)
    assert c[(0, "MPI_Send", 16)] == 2  # the 24-byte vector and the 16-byte intercomm send
    assert c[(1, "MPI_Recv", 16)] == 1  # received size from the status
    for r in range(N):
        # 8 bytes to MPI_PROC_NULL are counted; rank 1 also sends 12 bytes to rank 0
        assert c[(r, "MPI_Send", 8)] == (2 if r == 1 else 1)
        assert c[(r, "MPI_Recv", 0)] == 1  # from MPI_PROC_NULL: nothing arrives
    p2p = profile["traffic"]["p2p"]["bytes"]
    assert p2p[0][1] == 24
    assert sum(map(sum, p2p)) == 24 + 2 * 16 + 40 + 12  # no entry for MPI_PROC_NULL


def test_intercommunicator_and_probes_map_to_world_ranks(profile: dict[str, Any]) -> None:
    p2p = profile["traffic"]["p2p"]["bytes"]
    assert p2p[0][2] == 16 and p2p[1][3] == 16  # remote rank k of the intercommunicator
    assert p2p[0][3] == 40 and p2p[1][0] == 12
    c = calls(profile)
    assert c[(3, "MPI_Probe", 0)] == 1 and c[(3, "MPI_Recv", 32)] == 1
    assert c[(0, "MPI_Mprobe", 0)] == 1 and c[(0, "MPI_Mrecv", 8)] == 1


def expected_collective_matrix() -> list[list[int]]:
    m = [[0] * N for _ in range(N)]

    def add(s: int, d: int, nbytes: int) -> None:
        if s != d:
            m[s][d] += nbytes

    for s in range(N):
        for d in range(N):
            add(s, d, 8)  # allreduce in place, 2 ints
            if d == 0:
                add(s, d, 4)  # gather in place to 0
                add(s, d, 4)  # reduce with the user-defined op
            if d == 2:
                add(s, d, (s + 1) * 4)  # gatherv to 2
            if s == 1:
                add(s, d, (d + 1) * 4)  # scatterv from 1
            add(s, d, ((s + d) % 3 + 1) * 4)  # alltoallv
            add(s, d, (s + 1) * 4)  # allgatherv in place
            add(s, d, 8)  # reduce_scatter_block, 2 ints per block
            add(s, d, (d + 1) * 4)  # reduce_scatter, block d
            if d > s:
                add(s, d, 4)  # scan
                add(s, d, 4)  # exscan
            if s == 3:
                add(s, d, 16)  # ibcast from 3
            add(s, d, 8)  # iallreduce
    return m


def test_collective_matrix_with_in_place_and_v_forms(profile: dict[str, Any]) -> None:
    assert profile["traffic"]["coll"]["bytes"] == expected_collective_matrix()


def test_collective_sizes(profile: dict[str, Any]) -> None:
    c = calls(profile)
    for r in range(N):
        assert c[(r, "MPI_Allreduce", 8)] == 1
        assert c[(r, "MPI_Gather", 4)] == 1
        assert c[(r, "MPI_Reduce_scatter_block", 32)] == 1  # 2 ints x 4 ranks
        assert c[(r, "MPI_Reduce_scatter", 32)] == 1  # 10 ints
        assert c[(r, "MPI_Ibcast", 16)] == 1 and c[(r, "MPI_Iallreduce", 8)] == 1
    assert c[(2, "MPI_Gatherv", 8)] == 1  # root: mean block of 10 ints over 4 ranks
    assert c[(3, "MPI_Gatherv", 16)] == 1  # rank 3 sends 4 ints
    assert bytes_of(profile, "MPI_Intercomm_create") == {r: 0 for r in range(N)}
