"""`isthmus experiment`: every experiment runs in quick mode on the real emulated network
and MPIs, its results file carries the provenance header and renders; bad experiment
files and a dirty checkout are one-line errors; the committed results pass the check."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ISTHMUS, ROOT, Run
from isthmus import experiment, records
from isthmus.config import platform as platform_mod
from isthmus.experiment import provenance
from isthmus.model import bounds
from isthmus.report import blocks_grid, render, results

NAMES = experiment.all_names()


def _one_per_kind() -> list[str]:
    """One experiment per runner kind: of those that extend no other, the one with the
    fewest quick steps (then by name). Its quick run covers the kind's code; the others
    differ in parameters only, which test_every_experiment_loads_and_plans checks, and
    every table renders from the committed results in `make check-results` (a quick run
    of every experiment took 165 s of make test)."""
    best: dict[str, tuple[int, str]] = {}
    for name in NAMES:
        exp = experiment.load(name, quick=True)
        if exp.base is None:
            key = (len(exp.runner.steps(exp)), name)
            best[exp.kind] = min(best.get(exp.kind, key), key)
    return sorted(name for _, name in best.values())


QUICK = _one_per_kind()


def test_every_experiment_loads_and_plans() -> None:
    for name in NAMES:
        for quick in (False, True):
            exp = experiment.load(name, quick)
            assert exp.runner.steps(exp), name


@pytest.mark.parametrize("name", QUICK)
def test_every_experiment_runs_quick_and_renders(
    isthmus: Run, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = isthmus("experiment", "run", name, "--quick", "--allow-dirty", "-o", tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / f"{name}.json"
    data = records.read_result(out)  # validates against docs/schemas/result.schema.json
    head = data["header"]
    assert head["experiment"] == name and head["quick"] is True
    assert head["command"] == f"bin/isthmus experiment run {name} --quick"
    assert head["machine"]["cores"] >= 1 and data["rows"]
    exp = experiment.load(name, quick=True)
    assert set(head["mpi"]) == set(exp.mpis)
    assert all(len(v) == 64 for v in head["platforms"].values())
    assert not (tmp_path / ".work" / f"{name}-quick").exists()  # the steps are folded in
    if name == "net/selftest":  # every figure of the network's self-test, against its target
        assert {r["kind"] for r in data["rows"]} == {"delay", "loss", "mtu", "rate"}
        assert not [n for n in os.listdir("/var/run/netns") if n.startswith("ist-self")]
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    for block_name, block in render.BLOCKS.items():
        if block.source == name:
            text = render.render_block(block_name)
            assert "| " in text and "--quick" in text, text


def test_an_interrupted_run_resumes_from_its_steps(isthmus: Run, tmp_path: Path) -> None:
    name = "collectives/latency"
    exp = experiment.load(name, quick=True)
    steps = exp.runner.steps(exp)
    assert len(steps) == 4
    # the first step as a previous run left it: the resumed run must not run it again
    work = tmp_path / ".work" / f"{name}-quick"
    work.mkdir(parents=True)
    plan = {
        "experiment_sha256": provenance.sha256(exp.path),
        "revision": provenance.revision(),
        "steps": [s.key for s in steps],
    }
    records.write_json(work / "plan.json", plan)
    fake = {
        "mpi_library": "left by an earlier run",
        "settings": [],
        "records": [
            {"collective": "barrier", "entry": e, "bytes": 0, "latency_median_us": 1234.0,
             "latency_min_us": 1234.0, "latency_max_us": 1234.0}
            for e in ("mpi", "native")
        ],
    }  # fmt: skip
    records.write_json(work / f"{steps[0].key}.json", fake)
    done = isthmus("experiment", "run", name, "--quick", "--allow-dirty", "-o", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "resuming, 1 of 4 steps done" in done.stderr
    rows = records.read_result(tmp_path / f"{name}.json")["rows"]
    assert any(r["median_us"] == 1234.0 for r in rows)  # kept, not re-measured
    assert len(rows) == 8


@pytest.mark.serial  # writes experiments/test-bad/, which every experiment listing sees
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('kind = "nope"\n', "kind = 'nope': expected one of app, batch, bench, coll"),
        ('kind = "coll"\nflavour = 1\n', "unknown key 'flavour'"),
        ('kind = "coll"\nmpis = ["lam"]\n', "mpis = ['lam']: expected a list of"),
        ('kind = "coll"\nrepetitions = 0\n', "repetitions = 0: expected a whole number >= 1"),
        ('kind = "coll"\n[params]\nplatform = "nowhere.toml"\n', "params.platform: expected"),
        (
            'kind = "coll"\n[params]\nplatform = "examples/platforms/das-4x2.toml"\nsizes = 1\n',
            "params.sizes: unknown parameter",
        ),
        (
            'kind = "coll"\n[params]\nplatform = "examples/platforms/das-4x2.toml"\n'
            'collectives = ["bcast"]\nmin_size = "lots"\n',
            "expected a size",
        ),
        ('kind = "coll"\n[params\n', "not valid TOML"),
        ('extends = "collectives/nope"\n', "no experiment 'collectives/nope'"),
        ('extends = "test-bad/bad"\n', "extends = 'test-bad/bad': expected another"),
        (
            'extends = "collectives/grid-4x2-mpich"\n',
            "which extends another: expected a file that extends none",
        ),
    ],
)
def test_a_bad_experiment_file_is_one_line_and_exit_2(
    isthmus: Run, text: str, message: str
) -> None:
    path = ROOT / "experiments" / "test-bad" / "bad.toml"
    path.parent.mkdir(exist_ok=True)
    try:
        path.write_text(text)
        done = isthmus("experiment", "run", "test-bad/bad", "--quick", "--allow-dirty")
    finally:
        shutil.rmtree(path.parent)
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_file_that_extends_another_changes_only_what_it_names() -> None:
    base, split = (
        experiment.load("collectives/grid-2x2"),
        experiment.load("collectives/grid-4x2-openmpi"),
    )
    assert split.base == base.path and split.mpis == ["openmpi"]
    assert split.params["platform"] == "examples/platforms/das-4x2.toml"
    assert split.params["set"] == [*base.params["set"], "wan.queue=1MiB"]
    named = {"platform", "set"}
    assert {k: v for k, v in split.params.items() if k not in named} == {
        k: v for k, v in base.params.items() if k not in named
    }
    quick = experiment.load("collectives/grid-4x2-openmpi", quick=True)
    assert quick.params["cases"] == [{"name": "openmpi", "mpi": "openmpi"}]


def test_an_unknown_experiment_names_the_known_ones(isthmus: Run) -> None:
    done = isthmus("experiment", "run", "collectives/nope")
    assert done.returncode == 2
    assert "no experiment 'collectives/nope': expected one of " in done.stderr
    assert "collectives/bandwidth" in done.stderr


def test_a_dirty_checkout_is_refused_unless_allowed(isthmus: Run, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    with open(clone / "python" / "isthmus" / "units.py", "a") as f:
        f.write("# changed\n")
    (clone / "results" / "collectives" / "new.txt").write_text("output does not count\n")
    done = subprocess.run(  # the clone's code with this checkout's venv and build
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "isthmus", "experiment", "run",
         "collectives/tcp-floor"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(clone / "python"),
             "ISTHMUS_BUILD": str(ROOT / "build")},
    )  # fmt: skip
    assert done.returncode == 2
    assert "uncommitted changes (python/isthmus/units.py)" in done.stderr
    assert "--allow-dirty" in done.stderr


def test_the_committed_results_and_their_tables_agree(isthmus: Run) -> None:
    done = isthmus("experiment", "render", "--check")
    assert done.returncode == 0, done.stderr
    assert "render --check: ok" in done.stdout


def test_render_check_finds_a_table_edited_by_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    md = ROOT / "results" / "collectives" / "README.md"
    text = md.read_text()
    assert "<!-- render collectives/latency -->" in text
    edited = text.replace(
        "<!-- render collectives/latency -->\n",
        "<!-- render collectives/latency -->\n| typed |\n",
        1,
    )
    monkeypatch.setattr(render, "markdown_files", lambda: [tmp_path / "README.md"])
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results")  # no plots drawn into the tree
    (tmp_path / "README.md").write_text(edited)
    problems = render.render(check=True)
    assert any("block collectives/latency differs from its JSON" in p for p in problems)
    assert (tmp_path / "README.md").read_text() == edited  # --check writes nothing
    render.render(check=False)
    assert (tmp_path / "README.md").read_text().count("| typed |") == 0


def test_render_check_refuses_results_without_a_clean_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    (tmp_path / "area").mkdir()
    (tmp_path / "area" / "old.json").write_text(json.dumps({"rows": []}))
    exp = experiment.load("collectives/latency")
    head = provenance.header(
        "collectives/latency", exp.path, exp.platform_files(), [], "test", 1, False, []
    )
    good = {"header": head, "params": {}, "rows": []}
    records.write_result(tmp_path / "area" / "good.json", good)
    dirty = json.loads(json.dumps(good))
    dirty["header"] |= {"clean": False, "dirty_files": ["python/isthmus/x.py"]}
    records.write_result(tmp_path / "area" / "dirty.json", dirty)
    alien = json.loads(json.dumps(good))
    alien["header"]["revision"] = "0" * 40
    records.write_result(tmp_path / "area" / "alien.json", alien)
    monkeypatch.setattr(results, "legacy", lambda: {})
    problems = "\n".join(render.header_problems())
    assert "old.json: not a valid result file" in problems
    assert "dirty.json: made from a dirty tree (python/isthmus/x.py)" in problems
    assert "alien.json: revision 000000000000 is not in this history" in problems
    assert "good.json" not in problems


def test_the_lower_bounds_are_the_cut_bounds_of_das_4x2() -> None:
    das = platform_mod.load(ROOT / "examples" / "platforms" / "das-4x2.toml")
    mib = 1 << 20
    # L = 10 ms, B = 1 MB/s, C = 4 clusters of n = 2
    assert bounds.lower_bound_s("bcast", das, 3 * mib) == pytest.approx(0.010 + mib / 1e6)
    assert bounds.lower_bound_s("allgather", das, mib) == pytest.approx(0.010 + 2 * mib / 1e6)
    assert bounds.lower_bound_s("alltoall", das, 64 << 10) == pytest.approx(0.010 + 4 * 65536 / 1e6)
    assert bounds.lower_bound_s("allreduce", das, mib) == pytest.approx(0.010 + mib / 2 / 1e6)
    flows = bounds.flows("bcast", 4, 2, 3 * mib)
    assert [row[0] for row in flows] == [0, 0, 0, 0]  # nothing flows into the root's cluster
    assert sum(map(sum, flows)) == 3 * 3 * mib  # each of the three others receives M


def test_experiment_list_shows_every_experiment() -> None:
    done = subprocess.run([str(ISTHMUS), "experiment", "list"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for name in NAMES:
        assert name in done.stdout


def test_a_block_shown_as_an_example_in_fenced_code_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "```\n<!-- render collectives/latency -->\n(example)\n<!-- end render -->\n```\n"
    (tmp_path / "doc.md").write_text(text)
    monkeypatch.setattr(render, "markdown_files", lambda: [tmp_path / "doc.md"])
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results")
    assert not [p for p in render.render(check=True) if "doc.md" in p]
    render.render(check=False)
    assert (tmp_path / "doc.md").read_text() == text


@pytest.mark.serial  # looks at every namespace and pio_bench
def test_a_terminated_run_stops_its_benchmark_and_leaves_no_network(tmp_path: Path) -> None:
    def ranks_running() -> bool:
        pgrep = ["pgrep", "-f", "bin/[a-z]*/pio_bench"]
        return bool(subprocess.run(pgrep, capture_output=True, text=True).stdout.strip())

    run = subprocess.Popen(
        [str(ISTHMUS), "experiment", "run", "pio/bench", "--quick", "--allow-dirty", "-o",
         str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not ranks_running() and time.monotonic() < deadline:
        time.sleep(0.05)  # terminated while the step's benchmark runs (its quick run: ~2 s)
    run.terminate()
    _, err = run.communicate(timeout=90)
    assert run.returncode == 130, err
    leftover = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "ist-" not in leftover
    assert not ranks_running()
    assert not (tmp_path / "pio" / "bench.json").exists()  # nothing half-written


def test_the_application_table_judges_times_and_rates_alike() -> None:
    """apps/layer's rule, as issue 26 words it: the layer's median as a time over native's
    (a rate inverted) at most 1.05; a wide spread does not pass a slower median."""
    from isthmus.experiment.runners import spread_stats
    from isthmus.report.blocks_apps import app_figures

    def row(coll: str, wall: list[float], fft: list[float]) -> dict[str, object]:
        return {
            "app": "hpcc",
            "mpi": "openmpi",
            "point": {"wan.latency": "1ms"},
            "coll": coll,
            "runs": 3,
            "ok": 3,
            "wall_s": spread_stats(wall),
            "fft": spread_stats(fft),
        }

    res = {
        "params": {"figures": {"fft": "rate"}},
        "rows": [row("native", [10, 10, 10], [2, 2, 2]), row("isthmus", [11, 12, 13], [1, 2, 3])],
    }
    wall, fft = app_figures(res)
    assert (wall.figure, fft.figure) == ("wall_s", "fft")
    assert wall.ratio == pytest.approx(1.2) and not wall.ok  # 20% slower, best run 11 > 10
    assert fft.ratio == pytest.approx(1.0) and fft.ok  # same median rate
    res["rows"][1]["fft"] = spread_stats([1.0, 1.0, 1.0])
    assert app_figures(res)[1].ratio == pytest.approx(2.0)  # half the rate: twice the time
    res["rows"][1]["fft"] = spread_stats([0.5, 1.5, 4.0])  # median 1.5: 1.33x the time
    assert not app_figures(res)[1].ok  # its best run beats native's, its median does not


def test_the_grid_records_what_the_layer_ran_and_the_model_is_judged_on_it() -> None:
    """The selector's log (collectives.log) says what ran on MPI_COMM_WORLD; the model's
    error is taken for that algorithm, not for what the model chooses today."""
    from isthmus.coll.explain import Candidate, Choice
    from isthmus.experiment.runners.coll import algorithms

    log = [
        "isthmus: selector: alltoall of 65536 B on 4 ranks in 2 clusters: aggregated, "
        "predicted: ours 8695 us, native 9705 us",
        "isthmus: selector: gather of 8 B on 4 ranks in 2 clusters: native (linear), "
        "predicted: ours 2100 us, native 2000 us",
        "isthmus: selector: scatterv on 4 ranks: the MPI's own (worst predicted ratio to the "
        "MPI's own: ours 1.17, agreeing first 3.35)",
        "isthmus: 4 ranks on 2 cores: ranks take turns on the cores",
    ]
    assert algorithms(log) == {
        ("alltoall", 65536): "aggregated",
        ("gather", 8): "native (linear)",
        ("scatterv", 0): "native",
    }
    cands = (Candidate("native (linear)", True, 9.0), Candidate("aggregated", False, 8.0))
    choice = Choice("openmpi, sleep", "alltoall", 65536, "aggregated", cands)
    assert blocks_grid.ran(choice, "native").name == "native (linear)"
    assert blocks_grid.ran(choice, "ours").name == "aggregated"
    assert blocks_grid.ran(choice, None).name == "aggregated"  # not recorded: the model's choice


def test_the_grid_counts_its_noise_where_both_entries_ran_the_same_code() -> None:
    """Points where the layer ran the MPI's own algorithm too (named so, or passed through
    with no record) are the control: their differences are the measurement's. The target
    still counts every point."""
    from isthmus.report import targets

    def point(coll: str, algorithm: str | None, layer: list[float]) -> list[dict[str, object]]:
        rows = []
        for entry, calls in (("mpi", layer), ("native", [10.0, 10.0, 10.5])):
            rows.append(
                {"case": "mpich", "mpi": "mpich", "collective": coll, "bytes": 8,
                 "entry": entry, "point": {"wan.latency": "2ms"}, "median_us": calls[1],
                 "calls_min_us": min(calls), "calls_max_us": max(calls)}
            )  # fmt: skip
            if entry == "mpi" and algorithm:
                rows[-1]["algorithm"] = algorithm
        return rows

    res = {
        "rows": point("gather", "native (linear)", [11.0, 12.0, 13.0])  # same code, beyond
        + point("bcast", None, [10.0, 12.0, 13.0])  # passed through, 1.2x inside the spread
        + point("alltoall", "aggregated", [11.0, 11.0, 11.0])  # ours, beyond
        + point("scan", "native (binomial)", [9.0, 9.0, 9.0])
    }
    assert blocks_grid.control(res, blocks_grid.entry_pairs(res)) == blocks_grid.Control(3, 2, 1)
    m = targets._never_slower(res)
    assert not m.met
    assert m.spread == (
        "2 of 4 points over 5% beyond the spread (1 of 3 with the MPI's own in both entries)"
    )
    for r in res["rows"]:
        r.pop("algorithm", None)
    assert blocks_grid.control(res, blocks_grid.entry_pairs(res)) is None  # nothing recorded


def test_still_winning_is_judged_row_by_row_against_the_baseline() -> None:
    """A row that won before must win by at least as much now; lower inside both runs'
    spreads still fails the target, and is counted apart from lower beyond them."""
    from isthmus.report import targets

    def latency(speedups: dict[str, float], spread: float) -> dict[str, object]:
        rows = []
        for coll, s in speedups.items():
            for entry, far in (("mpi", 10_000.0), ("native", 10_000.0 * s)):
                for lat, t in (("10ms", far), ("0", 100.0)):
                    rows.append(
                        {"case": "mpich, sleeping, block", "mpi": "mpich", "collective": coll,
                         "entry": entry, "point": {"wan.latency": lat}, "median_us": t,
                         "spread": spread}
                    )  # fmt: skip
        return {"header": {"experiment": "collectives/latency"}, "rows": rows}

    before = latency({"barrier": 3.0, "bcast": 2.0, "allreduce": 0.8}, 0.05)
    same = targets._still_wins(
        latency({"barrier": 3.0, "bcast": 2.5, "allreduce": 0.5}, 0.05), before
    )
    assert same.met and same.spread.startswith("0 of 2 rows lower")  # allreduce never won
    noisy = targets._still_wins(
        latency({"barrier": 2.9, "bcast": 2.0, "allreduce": 1}, 0.05), before
    )
    assert not noisy.met and noisy.spread == "1 of 2 rows lower, 0 beyond both runs' spreads"
    worse = targets._still_wins(
        latency({"barrier": 2.0, "bcast": 2.0, "allreduce": 1}, 0.05), before
    )
    assert not worse.met and worse.spread == "1 of 2 rows lower, 1 beyond both runs' spreads"
    assert worse.worst.startswith("2.00x, was 3.00x (mpich, sleeping, block, barrier")
    assert not targets._still_wins(latency({"barrier": 3.0}, 0), None).met
