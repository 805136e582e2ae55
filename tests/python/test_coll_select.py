"""The selector chooses per collective, size and communicator between the MPI's own
collective and the WAN-aware one (issue 26): on a fast wide-area link the MPI's pairwise
Alltoall of large blocks stays, over a slow one the hierarchical Barrier and Allreduce
run; `isthmus coll explain` shows the same choice the layer makes, without MPI."""

from __future__ import annotations

import json
import re

import pytest

from conftest import PLATFORMS, ROOT, TWO_CLUSTERS, Run
from isthmus.experiment.runners.coll import algorithms

# serial (make test runs it alone): the selector follows the round trips it measures
pytestmark = pytest.mark.serial

DAS = PLATFORMS / "das-4x2.toml"
FAST = ("--set", "wan.latency=0.5ms", "--set", "wan.bandwidth=1Gbit/s")


def selector_log(isthmus: Run, mpi: str, platform: object, sets: tuple[str, ...], colls: str,
                 size: int) -> str:  # fmt: skip
    """Run the coll benchmark at one size with the selector's log on: its log."""
    done = isthmus(
        "run", "-p", platform, *sets, "--set", "layer.collectives=isthmus",
        "--set", "collectives.log=true", "--mpi", mpi, "--timeout", "120s", "--",
        ROOT / "build" / "bin" / mpi / "coll", "--collectives", colls, "--min-size", str(size),
        "--max-size", str(size), "--iterations", "3", "--warmup", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stderr


def selections(isthmus: Run, mpi: str, platform: object, sets: tuple[str, ...], colls: str,
               size: int) -> dict[str, str]:  # fmt: skip
    """collective -> the algorithm chosen at one size."""
    log = selector_log(isthmus, mpi, platform, sets, colls, size)
    return {coll: name for (coll, _), name in algorithms(log.splitlines()).items()}


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_fast_link_keeps_the_mpis_alltoall(isthmus: Run, mpi: str) -> None:
    chosen = selections(isthmus, mpi, TWO_CLUSTERS, FAST, "alltoall,allgather", 1 << 20)
    # (the benchmark's own 8-byte Bcast and Allreduce for its timing are chosen too)
    assert chosen["alltoall"].startswith("native") and chosen["allgather"].startswith("native")


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_slow_link_runs_the_hierarchy(isthmus: Run, mpi: str) -> None:
    chosen = selections(isthmus, mpi, DAS, (), "barrier,allreduce", 8)
    assert (chosen["barrier"], chosen["allreduce"]) == ("hierarchical", "hierarchical")


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_v_forms_choose_one_way_without_a_wide_area_agreement(isthmus: Run, mpi: str) -> None:
    """Agreeing on the counts first costs a wide-area allreduce per call: it doubled a small
    Scatterv at 2 ms (grid-2x2 at d483c78). At 2 ms the selector takes one way for every
    size."""
    log = selector_log(isthmus, mpi, TWO_CLUSTERS, ("--set", "wan.latency=2ms", "--set",
                       "wan.bandwidth=1Gbit/s"), "scatterv,gatherv,alltoallv", 8)  # fmt: skip
    ways = {
        c: way
        for (c, size), way in algorithms(log.splitlines()).items()
        if size == 0 and c != "barrier"
    }  # a v-form's single way is logged under size 0
    assert set(ways) == {"scatterv", "gatherv", "alltoallv"}, log[-2000:]
    assert "agree on the size" not in ways.values()


def test_a_v_forms_linear_way_is_read_as_the_candidate_it_runs() -> None:
    log = [
        "isthmus: selector: gatherv on 4 ranks: linear (worst predicted ratio to the MPI's "
        "own: ours 1.02, agreeing first 3.10, linear 1.00)",
        "isthmus: selector: scatterv on 4 ranks: ours (worst predicted ratio ...)",
    ]
    assert algorithms(log) == {
        ("gatherv", 0): "linear in eager segments",
        ("scatterv", 0): "ours",
    }


@pytest.mark.parametrize(
    ("platform", "sets", "coll", "size", "expected"),
    [
        (TWO_CLUSTERS, FAST, "alltoall", "1MiB", "native ("),
        (DAS, (), "barrier", "0", "hierarchical"),
        (DAS, (), "bcast", "1MiB", "pipelined two-layer"),
    ],
)
def test_explain_shows_the_layers_choice(
    isthmus: Run, platform: object, sets: tuple[str, ...], coll: str, size: str, expected: str
) -> None:
    done = isthmus("coll", "explain", "-p", platform, *sets, coll, size)
    assert done.returncode == 0, done.stderr
    rows = [ln for ln in done.stdout.splitlines() if "chosen" in ln]
    assert len(rows) == 2 and all(expected in r for r in rows), done.stdout
    assert "openmpi, " in done.stdout and "mpich, " in done.stdout  # the why lines


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("allfoo", "8"), "collective 'allfoo': expected one of barrier"),
        (("alltoall", "8 parsecs"), "SIZE"),
        (("--mpi", "lam", "alltoall", "8"), "invalid choice: 'lam'"),
    ],
)
def test_explain_bad_input(isthmus: Run, args: tuple[str, ...], message: str) -> None:
    done = isthmus("coll", "explain", "-p", TWO_CLUSTERS, *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_model_tool_output_is_json(tmp_path: object) -> None:
    """The MPI-free tool's lines parse, the MPI's own first."""
    import subprocess

    from isthmus.config import platform as platform_mod
    from isthmus.model import plogp

    params = tmp_path / "p.txt"  # type: ignore[operator]
    plogp.write(plogp.from_platform(platform_mod.load(DAS)), params)
    tool = ROOT / "build" / "bin" / "isthmus-coll-model"
    done = subprocess.run(
        [tool, params, "mpich", "0,0,1,1,2,2,3,3", "0,1,2,3,4,5,6,7", "alltoallv", "8", "65536"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = [json.loads(ln) for ln in done.stdout.splitlines()]
    assert [d["bytes"] for d in lines] == [8, 65536]
    assert all(d["candidates"][0]["native"] for d in lines)
    bad = subprocess.run([tool, params, "mpich", "0,0", "0", "alltoall", "8"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert bad.returncode == 2 and "one host number per rank" in bad.stderr


def test_tuning_rules_from_measurements() -> None:
    """Runs of sizes with one choice, handing over halfway (geometrically) between measured
    sizes; a tie within the margin goes to the MPI's own."""
    from isthmus.coll.tune import Rule, rules_from

    def rec(coll: str, b: int, entry: str, us: float) -> dict[str, object]:
        return {"record": "coll", "collective": coll, "entry": entry, "bytes": b,
                "latency_median_us": us}  # fmt: skip

    measured = {8: (100, 200), 64: (100, 200), 512: (300, 200), 4096: (900, 400)}
    recs = [rec("alltoall", b, e, us) for b, pair in measured.items()
            for e, us in zip(("mpi", "native"), pair, strict=True)]  # fmt: skip
    recs += [rec("barrier", 0, "mpi", 97), rec("barrier", 0, "native", 100)]
    assert rules_from(recs) == [
        Rule("alltoall", 0, 181, True, 100, 200),
        Rule("alltoall", 182, 4096, False, 300, 200),
        Rule("barrier", 0, 0, False, 97, 100),
    ]


def test_tune_writes_a_file_the_layer_follows(isthmus: Run, tmp_path: object) -> None:
    """coll tune --quick measures both entries; the layer then takes its choices from the
    file (its log says so), and coll explain shows the file's rule."""
    tuning = tmp_path / "tuning.txt"  # type: ignore[operator]
    done = isthmus("coll", "tune", "-p", TWO_CLUSTERS, *FAST, "--mpi", "openmpi", "--quick",
                   "-o", tuning)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    text = tuning.read_text()
    assert text.splitlines()[3:8] == [
        "isthmus-coll-tuning 1", "platform two-clusters", "mpi openmpi", "wait sleep",
        "ranks 4 clusters 2",
    ]  # fmt: skip
    assert {"barrier", "allreduce", "alltoall"} <= set(re.findall(r"^rule (\w+)", text, re.M))
    chosen = selections(
        isthmus, "openmpi", TWO_CLUSTERS, (*FAST, "--set", f"collectives.tuning={tuning}"),
        "alltoall", 64,
    )  # fmt: skip
    assert chosen["alltoall"] in ("ours", "native")
    shown = isthmus("coll", "explain", "-p", TWO_CLUSTERS, *FAST, "--mpi", "openmpi",
                    "--tuning", tuning, "alltoall", "64")  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "the tuning file measured" in shown.stdout


def test_bad_tuning_file_is_one_line(isthmus: Run, tmp_path: object) -> None:
    bad = tmp_path / "bad.txt"  # type: ignore[operator]
    bad.write_text("isthmus-coll-tuning 1\nmpi openmpi\nwait spin\nranks 4 clusters 2\n"
                   "rule alltoall 8\n")  # fmt: skip
    done = isthmus("coll", "explain", "-p", TWO_CLUSTERS, "--tuning", bad, "alltoall", "8")
    assert done.returncode == 2
    assert f"{bad}:5: expected 'rule COLLECTIVE FROM TO ours|native" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
