"""The report's findings from a made-up sweep table: each sentence's numbers, the round
trip where the time doubles, "no significant difference" only where the repetitions'
ranges overlap, failed and noisy points named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from isthmus.report import sweep_findings
from isthmus.report.sweep_data import SweepResults


def _row(coll: str, latency: str | None, repeat: int, app_s: float, **more: Any) -> dict[str, Any]:
    base = latency is None
    point = "one-cluster" if base else f"wan.latency={latency}"
    row = {
        "id": f"app_openmpi_{coll}_{point}_r{repeat}", "app": "app", "mpi": "openmpi",
        "coll": coll, "baseline": base, "repeat": repeat, "status": "ok", "app_s": app_s,
        "mpi_s": app_s / 2, "inter_bytes": 250, "intra_bytes": 750,
    }  # fmt: skip
    if not base:
        row["wan.latency"] = latency
    return row | more


def results(rows: list[dict[str, Any]]) -> SweepResults:
    vary = [["wan.latency", ["0", "1ms", "2ms"]]]
    return SweepResults(Path("/nonexistent"), {"platform": "p.toml", "vary": vary}, rows)


def sweep_table() -> list[dict[str, Any]]:
    """Baseline 1 s; native 1.0, 1.5, 3.0 s at 0, 2, 4 ms RTT; WAN-aware overlapping at
    0 ms, clearly faster at 4 ms; three runs each."""
    rows = []
    for r, spread in enumerate((-0.01, 0.0, 0.01)):
        rows.append(_row("native", None, r, 1.0 + spread))
        for lat, native, aware in (("0", 1.0, 1.005), ("1ms", 1.5, 1.4), ("2ms", 3.0, 2.0)):
            rows.append(_row("native", lat, r, native + spread))
            rows.append(_row("isthmus", lat, r, aware + spread))
    return rows


def test_the_sentence_gives_the_points_numbers() -> None:
    (sentence,) = sweep_findings.app_findings(results(sweep_table()), "app")
    assert "on one cluster it takes 1 s (range 0.99-1.01, 3 runs)" in sentence
    assert "at 4 ms round trip 3 s (range 2.99-3.01, 3 runs), 3.00 times as long" in sentence
    assert "against one cluster: 1.00x at 0 ms, 1.50x at 2 ms, 3.00x at 4 ms" in sentence
    # 1.5 at 2 ms, 3.0 at 4 ms: 2 is reached a third of the way
    assert "its time doubles at about 2.7 ms round trip" in sentence
    assert "MPI takes 50% of its time at 0 ms and 50% at 4 ms" in sentence
    assert "25% of its bytes cross clusters" in sentence
    assert "-33 % at 4 ms" in sentence and "-7 % at 2 ms" in sentence
    assert "no significant difference at 0 ms (the runs' ranges overlap)" in sentence


def test_doubling_is_interpolated_or_said_to_be_out_of_range() -> None:
    assert sweep_findings.doubling_rtt([(0, 1.0), (2, 1.5), (4, 3.0)]) == pytest.approx(8 / 3)
    assert sweep_findings.doubling_rtt([(0, 1.0), (4, 1.9)]) is None
    assert sweep_findings.doubling_rtt([(0, 2.5), (4, 5.0)]) == 0
    slow = [r | {"app_s": r["app_s"] * 3} for r in sweep_table() if not r["baseline"]]
    base = [r for r in sweep_table() if r["baseline"]]
    (sentence,) = sweep_findings.app_findings(results(base + slow), "app")
    assert "it already takes 3.00 times as long at 0 ms round trip: there the cost is" in sentence
    rows = [r for r in sweep_table() if r.get("wan.latency") != "2ms"]
    (sentence,) = sweep_findings.app_findings(results(rows), "app")
    assert "does not double within the round trips measured (up to 2 ms)" in sentence


def test_one_run_each_is_said_to_have_no_range() -> None:
    rows = [r for r in sweep_table() if r["repeat"] == 0]
    (sentence,) = sweep_findings.app_findings(results(rows), "app")
    assert "one run each: no range to judge by" in sentence
    assert "no significant difference" not in sentence


def test_failed_and_noisy_points_are_named() -> None:
    rows = sweep_table()
    rows[1] = rows[1] | {"status": "timeout", "app_s": None}
    rows.append(_row("native", "2ms", 3, 4.5))  # 3.0, 3.0, 3.0, 4.5: a wide range
    found = sweep_findings.problems(results(rows))
    assert found[0].startswith("1 of 22 points did not run to the end: app_openmpi_native_")
    assert "(timeout)" in found[0]
    assert any(f.startswith("Noisy: app, openmpi, native collectives at 4 ms") for f in found)
    page = sweep_findings.render(results(rows))
    assert page.count('href="#app-app"') == 1 and 'class="problem"' in page
