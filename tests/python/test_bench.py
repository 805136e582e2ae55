"""The benchmark programs through `isthmus bench` on the emulated two-cluster platform
(5 ms, 100 Mbit/s between the clusters): records and header, and figures that the
configured network bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import MPIS, TWO_CLUSTERS, Run
from isthmus.records import read_bench

# The tests that measure latency and bandwidth against the links are `serial`: make test
# runs them with no other test beside it.


def bench(
    isthmus: Run, tmp_path: Path, name: str, mpi: str, *args: str, sets: tuple[str, ...] = ()
) -> tuple[dict, list[dict]]:
    out = tmp_path / f"{name}.jsonl"
    options = [x for kv in sets for x in ("--set", kv)]
    done = isthmus(
        "bench",
        name,
        "-p",
        TWO_CLUSTERS,
        *options,
        "--mpi",
        mpi,
        "-o",
        out,
        "--timeout",
        "300s",
        "--",
        *args,
    )
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}" in done.stdout
    return read_bench(out)


# One host per cluster: 2 ranks, so no idle rank competes for the 2 cores meanwhile.
PAIR = ("clusters.east.hosts=1", "clusters.west.hosts=1")


@pytest.mark.serial
@pytest.mark.parametrize("mpi", MPIS)
def test_pingpong_across_the_wan(isthmus: Run, tmp_path: Path, mpi: str) -> None:
    header, recs = bench(
        isthmus,
        tmp_path,
        "pingpong",
        mpi,
        "--max-size",
        "1024",
        "--seconds-per-size",
        "0.05",
        "--peer",
        "1",
        sets=PAIR,
    )
    assert header["benchmark"] == "pingpong" and header["ranks"] == 2
    assert header["platform"] == "two-clusters" and header["git_revision"]
    assert [p["cluster"] for p in header["placement"]] == ["east", "west"]
    assert header["command"][-1] == "1"
    sizes = [r["bytes"] for r in recs]
    assert sizes == sorted(set(sizes)) and sizes[0] == 1
    assert {509, 512, 515, 1021, 1024, 1027} <= set(sizes)  # NetPIPE's +-3 bytes
    for r in recs:
        assert r["rtt_min_us"] >= 2 * 5000  # two WAN crossings
        assert r["rtt_min_us"] <= r["rtt_median_us"]


# Peer 1 shares rank 0's cluster (1 Gbit/s switch ports); peer 2 is across the 100 Mbit/s
# WAN. 4 ranks on 2 cores: the idle ranks wait by sleeping (layer.wait=auto).
BW_CASES = [(mpi, peer, limit, ()) for mpi in MPIS for peer, limit in (("1", 1000), ("2", 100))]
# One transfer with nobody else on the machine, across the WAN.
BW_CASES += [("openmpi", "1", 100, PAIR)]


@pytest.mark.serial
@pytest.mark.parametrize(("mpi", "peer", "limit", "sets"), BW_CASES)
@pytest.mark.parametrize("name", ["bw", "bibw"])
def test_bandwidth_is_bounded_by_the_links(
    isthmus: Run,
    tmp_path: Path,
    mpi: str,
    peer: str,
    limit: int,
    sets: tuple[str, ...],
    name: str,
) -> None:
    header, recs = bench(
        isthmus,
        tmp_path,
        name,
        mpi,
        "--min-size",
        "65536",
        "--max-size",
        "131072",
        "--iterations",
        "3",
        "--warmup",
        "1",
        "--peer",
        peer,
        sets=sets,
    )
    assert header["benchmark"] == name
    assert [r["bytes"] for r in recs] == [65536, 131072]
    bound = limit * (2 if name == "bibw" else 1)  # Mbit/s, both directions for bibw
    for r in recs:
        assert 0 < r["bandwidth_mbit"] <= bound * 1.05, r


@pytest.mark.serial
@pytest.mark.parametrize("mpi", MPIS)
def test_pairs_at_once_share_the_link(isthmus: Run, tmp_path: Path, mpi: str) -> None:
    """--pairs 2: ranks 0 and 1 (east) with 2 and 3 (west), both pairs across the one
    100 Mbit/s WAN link each way: together they stay under it, as one pair does."""
    header, recs = bench(
        isthmus, tmp_path, "bibw", mpi, "--min-size", "65536", "--max-size", "65536",
        "--iterations", "3", "--warmup", "1", "--pairs", "2",
    )  # fmt: skip
    assert header["options"]["pairs"] == 2 and [r["pairs"] for r in recs] == [2]
    assert 0 < recs[0]["bandwidth_mbit"] <= 2 * 100 * 1.05, recs
    done = isthmus(
        "bench", "bw", "-p", TWO_CLUSTERS, "-o", tmp_path / "p.jsonl", "--", "--pairs", "3"
    )
    assert done.returncode == 2 and "--pairs at most half the ranks" in done.stderr


@pytest.mark.serial
@pytest.mark.parametrize("mpi", MPIS)
def test_collective_latency_window(isthmus: Run, tmp_path: Path, mpi: str) -> None:
    _header, recs = bench(
        isthmus,
        tmp_path,
        "coll",
        mpi,
        "--min-size",
        "8",
        "--max-size",
        "8",
        "--iterations",
        "10",
        "--collectives",
        "barrier,bcast,gatherv,alltoall,alltoallw,exscan",
    )
    assert [(r["collective"], r["bytes"]) for r in recs] == [
        ("barrier", 0),
        ("bcast", 8),
        ("gatherv", 8),
        ("alltoall", 8),
        ("alltoallw", 8),
        ("exscan", 8),
    ]
    for r in recs:
        assert r["counted"] >= 8, r
        assert r["latency_min_us"] <= r["latency_median_us"] <= r["latency_max_us"]
        assert r["latency_min_us"] >= 5000, r  # every one crosses the WAN at least once


def test_bad_benchmark_requests(isthmus: Run, tmp_path: Path) -> None:
    done = isthmus("bench", "nosuch", "-p", TWO_CLUSTERS, "-o", tmp_path / "x.jsonl")
    assert done.returncode == 2 and "unknown benchmark 'nosuch'" in done.stderr
    done = isthmus(
        "bench",
        "pingpong",
        "-p",
        TWO_CLUSTERS,
        "-o",
        tmp_path / "y.jsonl",
        "--",
        "--max-size",
        "lots",
    )
    assert done.returncode == 2 and "bad option 'lots'" in done.stderr
    done = isthmus(
        "bench", "pingpong", "-p", TWO_CLUSTERS, "-o", tmp_path / "z.jsonl", "--", "--peer", "9"
    )
    assert done.returncode == 2 and "--peer must name another rank" in done.stderr
    done = isthmus(
        "bench", "coll", "-p", TWO_CLUSTERS, "-o", tmp_path / "c.jsonl", "--",
        "--collectives", "allgatherv,gatherx",
    )  # fmt: skip
    assert done.returncode == 2 and "unknown collective 'gatherx'" in done.stderr


@pytest.mark.serial
@pytest.mark.parametrize("mpi", MPIS)
def test_logp_measures_the_wan_and_fits_the_model(isthmus: Run, tmp_path: Path, mpi: str) -> None:
    """logp between the two clusters: L near the configured 5 ms plus the LAN port, a gap
    that grows with the size, and parameters that `model fit` turns into a prediction."""
    header, recs = bench(
        isthmus,
        tmp_path,
        "logp",
        mpi,
        "--max-size",
        "16384",
        "--seconds-per-size",
        "0.1",
        sets=PAIR,
    )
    assert header["benchmark"] == "logp" and header["options"]["precision"] == 0.01
    rows = [r for r in recs if r["record"] == "logp"]
    assert {r["class"] for r in rows} == {"wan"}
    assert [r["bytes"] for r in rows] == [0] + [1 << i for i in range(15)]
    for r in rows:
        assert r["rtt_us"] >= 2 * 5025 and r["g_us"] > 0 and r["os_us"] > 0 and r["or_us"] > 0
        assert min(r["repetitions"].values()) >= 1
    (latency,) = [r for r in recs if r["record"] == "logp_latency"]
    # One way, not the round trip: at least the configured 5 ms + the LAN port, under half
    # the 10 ms round trip plus its margin. The margin (2.5 ms) holds on a loaded 2-core
    # machine, where a rank's wake-up adds up to a millisecond or more (6.1 ms seen under
    # MPICH in a clean-clone run; 1 ms above the configured value failed once).
    assert 5025 <= latency["L_us"] < 1.5 * 5025
    assert rows[-1]["g_us"] > 16384 * 0.08 * 0.9  # 16 KiB at 100 Mbit/s: 1.3 ms
    params = tmp_path / "params.txt"
    done = isthmus("model", "fit", tmp_path / "logp.jsonl", "-o", params)
    assert done.returncode == 0, done.stderr
    done = isthmus("model", "predict", "-M", "1MiB", "-p", TWO_CLUSTERS, "--params", params)
    assert "no 'lan' link class" in done.stderr  # two ranks: nothing measured in a cluster


@pytest.mark.parametrize("mpi", MPIS)
def test_bcast_runs_the_models_choice(isthmus: Run, tmp_path: Path, mpi: str) -> None:
    """The pipelined two-layer broadcast with the optimizer's shape, next to MPI_Bcast."""
    params = tmp_path / "params.txt"
    assert isthmus("model", "params", "-p", TWO_CLUSTERS, "-o", params).returncode == 0
    header, recs = bench(
        isthmus,
        tmp_path,
        "bcast",
        mpi,
        "--params",
        str(params),
        "--min-size",
        "1024",
        "--max-size",
        "65536",
        "--iterations",
        "3",
    )
    assert header["benchmark"] == "bcast"
    assert [(r["algorithm"], r["bytes"]) for r in recs] == [
        (a, 1024 << i) for i in range(7) for a in ("pipelined", "native")
    ]
    for r in recs:
        assert r["clusters"] == 2 and r["counted"] >= 1
        assert r["latency_median_us"] >= 5000  # one WAN crossing at least
        if r["algorithm"] == "pipelined":
            assert r["predicted_us"] > 5000 and r["segments"] * r["segment"] >= r["bytes"]
            assert r["wan_degree"] == 1 and r["lan_degree"] == 1


def test_bcast_needs_parameters(isthmus: Run, tmp_path: Path) -> None:
    out = tmp_path / "bcast.jsonl"
    done = isthmus(
        "bench", "bcast", "-p", TWO_CLUSTERS, "--mpi", "mpich", "-o", out, "--timeout", "120s"
    )
    assert done.returncode == 2
    assert "the pipelined broadcast needs --params FILE" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout", "soon"], "--timeout: expected a duration"),
        (["--mpi", "mpich", "nosuch"], "unknown benchmark 'nosuch'"),
    ],
)
def test_bench_bad_input(isthmus: Run, tmp_path: Path, args: list[str], message: str) -> None:
    name = "pingpong" if "nosuch" not in args else "nosuch"
    args = [a for a in args if a != "nosuch"]
    done = isthmus("bench", name, "-p", TWO_CLUSTERS, *args, "-o", tmp_path / "x.jsonl")
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
