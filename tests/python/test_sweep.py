"""`isthmus sweep`: the matrix of runs on the real emulated network, failures, hangs,
figures that match nothing, resume, Ctrl-C, bad input."""

from __future__ import annotations

import csv
import dataclasses
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ISTHMUS, ROOT, TWO_CLUSTERS, Run
from isthmus.config import platform as platform_mod
from isthmus.sweep import spec as sweep_spec

# A sweep file's start whose platform loads, for errors found after loading it.
APP_A = f'platform = "{TWO_CLUSTERS}"\n[[app]]\nname = "a"\ncommand = "true"\n'


def _rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "results.csv") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


def test_a_sweep_runs_the_matrix_records_a_failing_point_and_goes_on(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    # rtt_gate fails when the round trip exceeds 4 ms: at 5 ms one way, not at 0
    out = tmp_path / "sweep"
    done = isthmus(
        "sweep",
        "-p",
        TWO_CLUSTERS,
        "--vary",
        "wan.latency=0,5ms",
        "--mpi",
        "openmpi",
        "--coll",
        "native,isthmus",
        "--figure",
        r"rtt_us=rtt_us = ([0-9.]+)",
        "--figure",
        "nothing=NO SUCH LINE ([0-9]+)",
        "--name",
        "gate",
        "--timeout",
        "120s",
        "-o",
        out,
        "--",
        apps[("openmpi", "rtt_gate")],
        "4000",
    )
    assert done.returncode == 0, done.stderr
    rows = _rows(out)
    assert len(rows) == 5  # baseline + 2 latencies x 2 collective modes
    base = rows["gate_openmpi_native_one-cluster_r0"]
    assert base["status"] == "ok" and base["platform"] == "one-cluster"
    for coll in ("native", "isthmus"):
        fast = rows[f"gate_openmpi_{coll}_wan.latency=0_r0"]
        slow = rows[f"gate_openmpi_{coll}_wan.latency=5ms_r0"]
        assert fast["status"] == "ok" and float(fast["rtt_us"]) < 4000
        assert slow["status"] == "failed" and slow["exit_code"] == "1"
        assert float(slow["rtt_us"]) >= 10000  # the failing point's figure is kept
        assert float(slow["wall_s"]) > 0 and slow["nothing"] == ""
        assert float(slow["inter_bytes"]) > 0  # from the point's profile
    # every point warned that its pattern matched nothing, and its files are there
    assert done.stderr.count("figure 'nothing' not found") == 5
    point = out / "points" / "gate_openmpi_isthmus_wan.latency=5ms_r0"
    assert {"stdout.txt", "stderr.txt", "profile.json", "point.json"} <= {
        p.name for p in point.iterdir()
    }
    assert json.loads((out / "results.json").read_text())[0]["id"] == base["id"]
    # the baseline platform holds the same ranks in one cluster
    one = platform_mod.load(out / "one-cluster-gate.toml", [])
    assert len(one.clusters) == 1 and one.total_ranks == 4

    # run again: everything is done already, nothing runs
    again = isthmus("sweep", "-p", TWO_CLUSTERS, "--vary", "wan.latency=0,5ms", "--mpi",
                    "openmpi", "--coll", "native,isthmus", "--figure",
                    r"rtt_us=rtt_us = ([0-9.]+)", "--figure", "nothing=NO SUCH LINE ([0-9]+)",
                    "--name", "gate", "--timeout", "120s", "-o", out, "--",
                    apps[("openmpi", "rtt_gate")], "4000")  # fmt: skip
    assert again.returncode == 0 and "5 already done" in again.stderr, again.stderr
    # another sweep into the same directory is refused
    other = isthmus("sweep", "-p", TWO_CLUSTERS, "-o", out, "--", apps[("openmpi", "rtt_gate")])
    assert other.returncode == 2 and "different sweep" in other.stderr


def test_a_hanging_point_times_out_and_the_sweep_goes_on(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    sweep_file = tmp_path / "hang.toml"
    sweep_file.write_text(
        f"""
platform = "{TWO_CLUSTERS}"
mpi = ["mpich"]
timeout = "4s"
baseline = false
[[app]]
name = "hang"
command = ["{apps[("mpich", "sleeper")]}", "600"]
[[app]]
name = "quick"
command = ["{apps[("mpich", "sleeper")]}", "0"]
figures = {{ ready = "(ready)" }}
"""
    )
    out = tmp_path / "out"
    started = time.monotonic()
    done = isthmus("sweep", sweep_file, "-o", out)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 120
    rows = _rows(out)
    assert rows["hang_mpich_native_r0"]["status"] == "timeout"
    assert rows["quick_mpich_native_r0"]["status"] == "ok"
    # "ready" is not a number: recorded empty, with a warning
    assert "figure 'ready' not found" in done.stderr


def test_ctrl_c_keeps_the_finished_points_and_a_rerun_resumes(
    apps: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    cmd = [str(ISTHMUS), "sweep", "-p", str(TWO_CLUSTERS), "--vary", "wan.latency=0,1ms",
           "--no-baseline", "--timeout", "300s", "--name", "sleeper", "-o", str(out), "--",
           str(apps[("openmpi", "sleeper")]), "2"]  # fmt: skip
    # A test run started in the background (nohup ... &) inherits SIGINT ignored, and then
    # Python installs no KeyboardInterrupt handler: give the sweep the default disposition.
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    first = out / "points" / "sleeper_openmpi_native_wan.latency=0_r0" / "point.json"
    second = out / "points" / "sleeper_openmpi_native_wan.latency=1ms_r0"
    deadline = time.monotonic() + 120
    while not (second / "stdout.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert first.exists()
    time.sleep(1.0)  # the second point is running
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert json.loads(first.read_text())["status"] == "ok"
    assert not (second / "point.json").exists()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "1 already done" in done.stderr, done.stderr
    assert all(r["status"] == "ok" for r in _rows(out).values())
    assert len(_rows(out)) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vary", "wan.latency"], "expected KEY=VALUE,VALUE"),
        (["--vary", "wan.latency=0,fast"], "wan.latency"),
        (["--mpi", "lam"], "expected a comma-separated list of openmpi, mpich"),
        (["--coll", "magic"], "native, isthmus"),
        (["--figure", "x=no group"], "needs a (group)"),
        (["--figure", "x=(unclosed"], "not a regular expression"),
        (["--repeat", "0"], "repeat 0"),
    ],
)
def test_bad_sweep_options_are_one_line_errors(
    isthmus: Run, tmp_path: Path, args: list[str], message: str
) -> None:
    done = isthmus("sweep", "-p", TWO_CLUSTERS, *args, "-o", tmp_path / "o", "--", "true")
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "o").exists()  # nothing started


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("platform = 3", "platform: expected the path"),
        ('platform = "x.toml"\ncolour = 1', "unknown key 'colour'"),
        ('platform = "x.toml"', "no [[app]]"),
        ('platform = "x.toml"\n[[app]]\nname = "a"', "command: expected"),
        ('platform = "x.toml"\ntimeout = "soon"\n[[app]]\nname="a"\ncommand="b"', "timeout"),
        ('platform = "x.toml"\n[[app]]\nname="a"\ncommand={lam=["b"]}', "command.lam"),
        ("platform = [", "not valid TOML"),
        ('platform = "x.toml"\n[[app]]\nname="a"\ncommand="b"\nrepeat=true', "repeat: expected"),
        # per-app settings that only the loaded platform's checks catch
        (f"{APP_A}repeat = 0", "app a: repeat 0: expected 1 or more"),
        (f'{APP_A}inputs = ["{{here}}/missing.txt"]', "app a: input"),
        (f'{APP_A}figures_in = "../x"', "figures_in: expected a file name"),
        (f'{APP_A}against = "b"', "app a: against 'b': expected another app"),
        (APP_A.replace('"true"', '"no-such-program"'), "no-such-program is not installed"),
        (f'{APP_A}placement = "{{here}}/none.toml"', "app a: placement"),
        (f'{APP_A}set = ["wan.latency={{wan.bandwidth}}"]', "{KEY} must name a varied key"),
    ],
)
def test_bad_sweep_files_are_one_line_errors(
    isthmus: Run, tmp_path: Path, text: str, message: str
) -> None:
    f = tmp_path / "s.toml"
    f.write_text(text + "\n")
    done = isthmus("sweep", f, "-o", tmp_path / "o")
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "o").exists()


def test_points_and_commands() -> None:
    app = sweep_spec.App("a", ("{bench}/pingpong", "-o", "{point}/x", "{mpi}"))
    s = sweep_spec.Sweep(
        platform=ROOT / "examples/platforms/two-clusters.toml",
        apps=(app,),
        vary=(("wan.latency", ("0", "1ms")), ("wan.bandwidth", ("1MB/s", "1Gbit/s"))),
        mpis=("openmpi", "mpich"),
        colls=("native", "isthmus"),
        repeat=2,
    )
    pts = sweep_spec.points(s)
    assert len(pts) == 2 * 2 * (1 + 2 * 2 * 2)
    assert len({p.id for p in pts}) == len(pts)
    once = sweep_spec.App("once", ("true",), repeat=1)
    assert len(sweep_spec.points(dataclasses.replace(s, apps=(app, once)))) == len(pts) + 2 * (
        1 + 2 * 2 * 2
    )
    cmd = app.command("mpich", Path("/tmp/p"), Path("/x"))
    assert cmd[0].endswith("bin/mpich/pingpong") and cmd[2:] == ["/tmp/p/x", "mpich"]


def test_an_apps_settings_follow_a_varied_key() -> None:
    """{KEY} in an app's set is the point's value of that varied key (the demo's direct
    link follows the zipper link's latency); the demo's zipper sweep checks out."""
    app = sweep_spec.App("d", ("true",), overrides=("wan.latency={zippers.gate.link.latency}",))
    assert app.settings({"zippers.gate.link.latency": "1ms"}) == ["wan.latency=1ms"]
    demo = sweep_spec.load_file(ROOT / "examples/demo/zipper.toml")
    sweep_spec.check(demo)
    assert [a.against for a in demo.apps] == ["lammps-direct", None]
    sweep_spec.check(sweep_spec.load_file(ROOT / "examples/sweeps/zipper-apps.toml"))


def test_an_app_with_inputs_runs_in_its_point_directory(isthmus: Run, tmp_path: Path) -> None:
    # HPCC's way: the input file in the working directory, the output written next to it
    (tmp_path / "in.txt").write_text("answer 42\n")
    f = tmp_path / "s.toml"
    f.write_text(
        f'platform = "{TWO_CLUSTERS}"\nbaseline = false\n[[app]]\nname = "reader"\n'
        'inputs = ["{here}/in.txt"]\nrepeat = 2\n'
        'command = ["sh", "-c", "cat in.txt > out-$$.txt"]\n'
        'figures_in = "in.txt"\n'
        "figures = { answer = 'answer ([0-9]+)' }\n"
    )
    out = tmp_path / "o"
    done = isthmus("sweep", f, "-o", out)
    assert done.returncode == 0, done.stderr
    rows = _rows(out)
    assert sorted(rows) == ["reader_openmpi_native_r0", "reader_openmpi_native_r1"]
    for pid, row in rows.items():
        assert row["status"] == "ok" and float(row["answer"]) == 42
        assert len(list((out / "points" / pid).glob("out-*.txt"))) == 4  # one per rank
