"""The zipper experiments' figures (python/isthmus/render_zipper.py) on made-up rows: ratios
are taken repetition by repetition, the worst MPI decides a target, the collectives'
reference is the direct link's faster entry, and a missing experiment is null."""

from __future__ import annotations

from typing import Any

from isthmus.report import render_zipper as z


def bench_row(mpi: str, case: str, nbytes: int, reps: list[float]) -> dict[str, Any]:
    return {"mpi": mpi, "case": case, "key": {"bytes": nbytes}, "reps": reps,
            "median": sorted(reps)[len(reps) // 2]}  # fmt: skip


def test_ratios_are_taken_repetition_by_repetition() -> None:
    res = {"rows": [
        bench_row("openmpi", "forwarded/latency", 8, [200.0, 400.0, 300.0]),
        bench_row("openmpi", "direct/latency", 8, [100.0, 400.0, 200.0]),
    ]}  # fmt: skip
    r = z.ratio(res, "openmpi", "forwarded/latency", "direct/latency", 8)
    assert r is not None and r.values == [2.0, 1.0, 1.5] and r.median == 1.5
    # a ratio of medians would say 300 / 200 = 1.5 too; per repetition the range shows
    assert r.text() == "1.50 (1.00-2.00)"
    assert z.ratio(res, "mpich", "forwarded/latency", "direct/latency", 8) is None


def test_the_worst_mpi_decides_and_a_missing_experiment_is_null() -> None:
    mib4 = 4 << 20
    res = {"rows": [
        bench_row("openmpi", "forwarded/bw", mib4, [190.0] * 5),
        bench_row("openmpi", "direct/bw", mib4, [200.0] * 5),
        bench_row("mpich", "forwarded/bw", mib4, [150.0] * 5),
        bench_row("mpich", "direct/bw", mib4, [200.0] * 5),
    ]}  # fmt: skip
    s = z.summary(res, None)
    assert s["bandwidth_fraction"] == {"value": 0.75, "target": 0.9, "at_most": False,
                                       "met": False}  # fmt: skip
    assert s["latency_ratio"]["value"] is None and s["aggregate_2"]["met"] is None
    assert s["collective_worst_ratio"]["value"] is None
    assert s["collective_worst_ratio_dilated_8"]["value"] is None
    assert s["provenance"] == {
        "zipper/p2p": None,
        "zipper/zippers": None,
        "zipper/collectives-openmpi": None,
        "zipper/collectives-mpich": None,
        "zipper/collectives-dilated-8": None,
        "zipper/apps": None,
    }  # fmt: skip  (no header here)


def test_the_summary_names_where_its_figures_came_from() -> None:
    header = {"experiment": "zipper/p2p", "command": "bin/isthmus experiment run zipper/p2p",
              "revision": "a" * 40, "clean": True, "date": "2026-11-29T00:00:00+00:00"}  # fmt: skip
    s = z.summary({"header": header, "rows": []}, None)
    assert s["provenance"]["zipper/p2p"] == {"file": "results/zipper/p2p.json", **header}
    assert s["provenance"]["zipper/zippers"] is None


def test_collectives_are_measured_against_the_direct_links_faster_entry() -> None:
    def row(case: str, entry: str, reps: list[float]) -> dict[str, Any]:
        return {"case": case, "mpi": "openmpi", "collective": "allreduce", "bytes": 262144,
                "entry": entry, "reps_us": reps}  # fmt: skip

    res = {"rows": [
        row("openmpi, 4 ranks, forwarded", "mpi", [120.0, 130.0, 110.0]),
        row("openmpi, 4 ranks, direct", "mpi", [100.0, 200.0, 100.0]),
        row("openmpi, 4 ranks, direct", "native", [150.0, 100.0, 110.0]),
    ]}  # fmt: skip
    (pt,) = z.coll_points(res)
    assert (pt.ranks, pt.collective, pt.nbytes) == ("4 ranks", "allreduce", 262144)
    assert pt.ratio.values == [1.2, 1.3, 1.1]
    s = z.summary(None, None, {"zipper/collectives-openmpi": res})
    assert s["collective_worst_ratio"]["value"] == 1.2 and s["collective_worst_ratio"]["met"]
