"""The P-LogP parameters (file format, fitting, derivation from a platform) and the broadcast
model and optimizer, against the paper's formulas and an exhaustive search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import PLATFORMS, TWO_CLUSTERS, Run
from isthmus.config import platform as platform_mod
from isthmus.errors import UserError
from isthmus.model import bcast as model
from isthmus.model import plogp


def linear(L: float, per_byte: float, fixed: float, o: float) -> plogp.LinkClass:
    sizes = (0, 1 << 10, 1 << 20, 1 << 24)
    return plogp.LinkClass(
        L,
        sizes,
        tuple(o for _ in sizes),
        tuple(o for _ in sizes),
        tuple(fixed + per_byte * m for m in sizes),
    )


def test_interpolation_is_piecewise_linear_and_never_falls_beyond_the_last_point() -> None:
    c = plogp.LinkClass(10, (0, 100, 200), (1, 2, 4), (1, 1, 1), (5, 15, 35))
    assert c.g(0) == 5 and c.g(50) == 10 and c.g(150) == 25
    assert c.g(400) == 75  # along the last segment
    assert c.os(300) == 6 and c.r(100) == 25
    # a last point below the one before (a TCP loss): beyond it, the mean cost per byte
    falling = plogp.LinkClass(10, (0, 100, 200), (1, 1, 1), (1, 1, 1), (5, 300, 200))
    assert falling.g(150) == 250 and falling.g(400) == 400


HEIGHTS = [(1, 3, 0), (2, 1, 1), (8, 1, 7), (7, 2, 2), (8, 2, 3), (8, 7, 1)]


@pytest.mark.parametrize(("p", "d", "h"), HEIGHTS)
def test_tree_height(p: int, d: int, h: int) -> None:
    assert model.tree_height(p, d) == h


def test_flat_tree_matches_the_papers_formula() -> None:
    """Flat tree: gamma = max(g, (P-1) s), lambda = (P-2) s + r."""
    c = linear(5000, 1.0, 20, 3)
    layer = model.lan_layer(c)
    p, m, big = 5, 4096, 4096 * 10
    t, gamma, _ = model.single_time(layer, p, p - 1, m, big)
    s, r, g = c.g(m), c.r(m), c.g(m)
    assert gamma == max(g, (p - 1) * s)
    assert t == pytest.approx(9 * gamma + (p - 2) * s + r)


def test_binomial_latency_is_one_hop_per_level_when_sends_are_cheap() -> None:
    c = plogp.LinkClass(1000, (0, 10), (0, 0), (0, 0), (0, 0))
    assert model.binomial_time(model.lan_layer(c), 8, 10) == 3000


def test_segmenting_pays_off_on_a_bandwidth_bound_wan() -> None:
    """Four clusters behind 1 MB/s links: the pipelined two-layer broadcast sends one
    segment over all three WAN links at once, much faster than a whole-message flat tree."""
    params = plogp.Params(
        "x", "test", {"lan": linear(20, 0.02, 5, 2), "wan": linear(10000, 1.0, 50, 10)}
    )
    preds = {p.name: p.shape for p in model.predict_bcast(params, [8, 8, 8, 8], 4 << 20)}
    best = min(preds.values(), key=lambda s: s.time)
    assert best is preds["two-layer pipelined"]
    assert best.segments > 1 and best.degree == 3 and best.height == 1
    assert preds["flat"].time > 2.5 * best.time


GRID = [
    (lan, wan, clusters, big)
    for lan in ((20, 0.01, 5, 2), (100, 0.1, 30, 20))
    for wan in ((1000, 0.08, 40, 10), (10000, 1.0, 50, 10), (5000, 0.008, 200, 150))
    for clusters in ([2, 2], [4, 4, 4, 4], [16, 1, 3])
    for big in (1024, 65536, 1 << 20, 4 << 20)
]


def test_heuristic_against_exhaustive_search() -> None:
    """Nothing beats the exhaustive search over every segmentation and every tree degree;
    the paper's segment-size search (binary steps, hill climbing) finds the best
    segmentation for its own degree rule within 10%. Where the degree rule itself misses:
    the experiment model/heuristic (results/model/README.md)."""
    worst = 0.0
    for lan, wan, clusters, big in GRID:
        w, ln = model.wan_layer(linear(*wan), linear(*lan)), model.lan_layer(linear(*lan))
        pw, pl = len(clusters), max(clusters)
        h = model.best_pipelined(w, ln, pw, pl, big)
        full = model.best_pipelined(w, ln, pw, pl, big, model.exhaustive, every=True)
        assert h.time >= full.time - 1e-9
        pruned = model.best_pipelined(w, ln, pw, pl, big, model.exhaustive)
        worst = max(worst, h.time / pruned.time - 1)
    assert worst < 0.10


def test_params_file_round_trip(tmp_path: Path) -> None:
    p = plogp.Params("two-clusters", "test", {"lan": linear(25, 0.008, 3, 2)})
    f = tmp_path / "params.txt"
    plogp.write(p, f)
    back = plogp.read(f)
    assert back.platform == "two-clusters"
    c = back.classes["lan"]
    assert c.L == 25 and c.sizes == p.classes["lan"].sizes
    assert c.g(1 << 20) == pytest.approx(p.classes["lan"].g(1 << 20), rel=1e-6)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello\n", "not a P-LogP parameter file"),
        ("isthmus-plogp 1\nclass lan L x\n", ":2: expected"),
        ("isthmus-plogp 1\npoint lan 0 os 1 or 1 g 1\n", "no 'class lan L US' line"),
        (
            "isthmus-plogp 1\nclass lan L 1\n"
            "point lan 0 os 1 or 1 g 1\npoint lan 0 os 1 or 1 g 2\n",
            "distinct sizes",
        ),
    ],
)
def test_bad_params_files(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.txt"
    f.write_text(text)
    with pytest.raises(UserError, match=message):
        plogp.read(f)


def test_parameters_from_the_platform() -> None:
    p = plogp.from_platform(platform_mod.load(TWO_CLUSTERS))
    lan, wan = p.classes["lan"], p.classes["wan"]
    assert abs(lan.L - 25) < 1e-9  # one LAN port
    assert abs(wan.L - 5025) < 1e-9  # the WAN link, then the LAN port into the host
    per_byte = (wan.g(1 << 20) - wan.g(1 << 19)) / (1 << 19)
    # 100 Mbit/s is 0.08 us per byte, plus the memory copy of the overhead
    assert per_byte == pytest.approx(8 / 100 + 1 / plogp.DERIVED_COPY_BYTES_PER_US)


def test_fit_averages_logp_records(tmp_path: Path) -> None:
    f = tmp_path / "logp.jsonl"
    # the header every benchmark program writes (docs/schemas/bench-header.schema.json)
    rows = [{"record": "header", "benchmark": "logp", "platform": "two-clusters",
             "mpi_library": "test", "ranks": 4, "date": "2026-11-25T00:00:00Z",
             "command": ["logp"], "options": {}}]  # fmt: skip
    for run in range(2):
        for m in (0, 1024):
            rows.append(
                {
                    "record": "logp",
                    "class": "wan",
                    "bytes": m,
                    "os_us": 2.0,
                    "or_us": 3.0,
                    "g_us": 10.0 + m * 0.08 + run,
                }
            )
        rows.append({"record": "logp_latency", "class": "wan", "L_us": 5000.0 + 2 * run})
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    p = plogp.fit(f)
    assert p.platform == "two-clusters" and p.classes["wan"].L == 5001
    assert p.classes["wan"].g(1024) == pytest.approx(10.5 + 1024 * 0.08)


def test_cli_predict_and_plot(isthmus: Run, tmp_path: Path) -> None:
    done = isthmus("model", "predict", "--coll", "bcast", "-M", "4MiB", "-p", TWO_CLUSTERS)
    assert done.returncode == 0, done.stderr
    for shape in ("flat", "binomial", "optimized", "two-layer sequential", "two-layer pipelined"):
        assert shape in done.stdout
    assert "choice: " in done.stdout and "why: " in done.stdout
    params = tmp_path / "params.txt"
    assert isthmus("model", "params", "-p", TWO_CLUSTERS, "-o", params).returncode == 0
    png = tmp_path / "bcast.png"
    done = isthmus("model", "plot", "-p", TWO_CLUSTERS, "--params", params, "-o", png)
    assert done.returncode == 0, done.stderr
    assert png.stat().st_size > 10000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--coll", "gather", "-M", "1KiB"], "unknown collective"),
        (["-M", "lots"], "-M: "),
        (["-M", "1KiB", "--params", "OTHER"], "parameters of platform 'das-4x2'"),
    ],
)
def test_cli_bad_input(isthmus: Run, tmp_path: Path, args: list[str], message: str) -> None:
    other = tmp_path / "other.txt"
    plogp.write(plogp.from_platform(platform_mod.load(PLATFORMS / "das-4x2.toml")), other)
    args = [str(other) if a == "OTHER" else a for a in args]
    done = isthmus("model", "predict", "-p", TWO_CLUSTERS, *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_one_rank_per_cluster_needs_no_lan_class() -> None:
    params = plogp.Params("x", "test", {"wan": linear(10000, 1.0, 50, 10)})
    preds = {p.name: p.shape for p in model.predict_bcast(params, [1, 1, 1, 1], 1 << 20)}
    assert preds["two-layer pipelined"].degree == 3
    with pytest.raises(UserError, match="no 'lan' link class"):
        model.predict_bcast(params, [2, 2], 1 << 20)
