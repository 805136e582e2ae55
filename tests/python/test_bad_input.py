"""Every bad input is one line that names what is wrong and what is expected, exit status
2, no traceback, and nothing half-written: a table of malformed platform files, sweep
files, --set settings, command-line options, profiles, benchmark records and results
directories, each run through the real command line."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import PLATFORMS, Run

BASE = (PLATFORMS / "two-clusters.toml").read_text()
ZIPPER = (PLATFORMS / "zipper.toml").read_text()


def _with(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


@dataclass
class Case:
    name: str
    args: list[str]  # "{f}" is the case's input file, "{d}" its directory, "{o}" an output
    expect: str  # a fragment of the one line
    file: str | bytes | None = None  # the input file's content
    suffix: str = ".toml"
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str | bytes] = field(default_factory=dict)  # more, under "{d}"


def platform(name: str, text: str | bytes, expect: str) -> Case:
    return Case(f"platform: {name}", ["platform", "check", "{f}"], expect, text)


def setting(name: str, value: str, expect: str) -> Case:
    return Case(
        f"--set {name}",
        ["platform", "check", str(PLATFORMS / "two-clusters.toml"), "--set", value],
        expect,
    )


def sweep(name: str, text: str | bytes, expect: str) -> Case:
    return Case(f"sweep file: {name}", ["sweep", "{f}", "-o", "{o}"], expect, text)


def profile(name: str, text: str | bytes, expect: str) -> Case:
    return Case(f"profile: {name}", ["profile", "show", "{f}"], expect, text, ".json")


SWEEP_JSON = (
    '{"platform": "p.toml", "apps": [{"name": "a"}], "vary": [], "mpis": ["openmpi"], '
    '"colls": ["native"], "repeat": 1}'
)


def report(name: str, sweep: str, results: str | bytes, expect: str) -> Case:
    files = {"sweep/sweep.json": sweep, "sweep/results.json": results}
    return Case(f"report: {name}", ["report", "{d}/sweep"], expect, files=files)


def bench(name: str, text: str | bytes, expect: str) -> Case:
    return Case(
        f"bench records: {name}", ["model", "fit", "{f}", "-o", "{o}"], expect, text, ".jsonl"
    )


TWO = str(PLATFORMS / "two-clusters.toml")
CASES = [
    # ---- platform files -----------------------------------------------------------------
    platform("empty file", "", "clusters"),
    platform("not UTF-8", b'name = "x\xff"\n', "not UTF-8"),
    platform("not TOML", "clusters = [", "not valid TOML"),
    platform("duplicate cluster", BASE + "\n[clusters.east]\nhosts = 1\n", "not valid TOML"),
    platform("list for a latency", _with('latency = "5ms"', "latency = [1, 2]"), "wan.latency"),
    platform(
        "table for a bandwidth",
        _with('bandwidth = "100Mbit/s"', "bandwidth = {a = 1}"),
        "wan.bandwidth",
    ),
    platform("number without unit", _with('latency = "5ms"', "latency = 5"), "wan.latency"),
    platform("unknown time unit", _with('latency = "5ms"', 'latency = "5 parsecs"'), "time unit"),
    platform(
        "unknown rate unit",
        _with('bandwidth = "100Mbit/s"', 'bandwidth = "100 furlongs"'),
        "rate unit",
    ),
    platform("negative latency", _with('latency = "5ms"', 'latency = "-5ms"'), "wan.latency"),
    platform("NaN latency", _with('latency = "5ms"', "latency = nan"), "wan.latency"),
    platform("infinite latency", _with('latency = "5ms"', "latency = inf"), "wan.latency"),
    platform("enormous latency", _with('latency = "5ms"', 'latency = "1e400s"'), "too large"),
    platform(
        "zero bandwidth string",
        _with('bandwidth = "100Mbit/s"', 'bandwidth = "0bit/s"'),
        "wan.bandwidth",
    ),
    platform("queue in seconds", _with('queue = "1MiB"', 'queue = "1ms"'), "wan.queue"),
    platform("loss above 1", _with('queue = "1MiB"', 'queue = "1MiB"\nloss = 1.5'), "wan.loss"),
    platform("no hosts", _with("hosts = 2", "hosts = 0"), "hosts"),
    platform("hosts as text", _with("hosts = 2", 'hosts = "two"'), "hosts"),
    platform("fractional hosts", _with("hosts = 2", "hosts = 2.5"), "hosts"),
    platform(
        "negative ranks per host",
        _with("ranks_per_host = 1", "ranks_per_host = -1"),
        "ranks_per_host",
    ),
    platform("enormous hosts", _with("hosts = 2", "hosts = 100000000"), "hosts"),
    platform("unknown top key", BASE + "\ncolour = 1\n", "unknown key"),
    platform("unknown cluster key", _with("hosts = 2", "hosts = 2\nflavour = 1"), "flavour"),
    platform("clusters a list", _with("[clusters.east]", "[[clusters]]"), "clusters"),
    platform(
        "one cluster named twice by case", BASE + "\n[clusters.EAST]\nhosts = 1\n", "clusters"
    ),
    platform(
        "cluster name with a space", _with("[clusters.west]", '[clusters."we st"]'), "clusters"
    ),
    platform(
        "zipper naming an unknown cluster",
        _with('clusters = ["left", "right"]', 'clusters = ["left", "nowhere"]', ZIPPER),
        "nowhere",
    ),
    platform("mtu too small", _with('queue = "1MiB"', 'queue = "1MiB"\nmtu = 100'), "mtu"),
    platform("placement unknown", BASE + '\n[layer]\nplacement = "random"\n', "layer.placement"),
    platform("clusters unknown", BASE + '\n[layer]\nclusters = "guess"\n', "layer.clusters"),
    platform(
        "discovery across zipper hosts",
        ZIPPER + '\n[layer]\nclusters = "auto"\n',
        "cannot discover clusters across zipper hosts",
    ),
    platform(
        "collectives mode unknown", BASE + '\n[layer]\ncollectives = "fast"\n', "layer.collectives"
    ),
    platform(
        "collective algorithm unknown",
        BASE + '\n[collectives.algorithm]\nbcast = "ring"\n',
        "unknown algorithm 'ring'",
    ),
    platform(
        "segment for barrier",
        BASE + '\n[collectives.segment]\nbarrier = "4KiB"\n',
        "barrier takes no segment",
    ),
    platform(
        "segment banana", BASE + '\n[collectives]\nsegment = "banana"\n', "collectives.segment"
    ),
    platform("params file missing", BASE + '\n[collectives]\nparams = ""\n', "collectives.params"),
    Case("platform: missing file", ["platform", "check", "{d}/nope.toml"], "no such platform file"),
    Case("platform: a directory", ["platform", "show", "{d}"], "a directory"),
    # ---- --set KEY=VALUE ----------------------------------------------------------------
    setting("without =", "wan.latency", "expected KEY=VALUE"),
    setting("empty key", "=5ms", "expected KEY=VALUE"),
    setting("newline in key", "wan\n.latency=5ms", "names joined by dots"),
    setting("bad duration", "wan.latency=fast", "wan.latency"),
    setting("into a value", "name.sub=1", "is a value, not a table"),
    setting("list index out of range", "zippers.7.hosts=1", "clusters"),
    setting("unknown key", "wan.colour=red", "wan.colour"),
    setting("hosts zero", "clusters.east.hosts=0", "hosts"),
    # ---- command-line options -----------------------------------------------------------
    Case(
        "run: bad timeout", ["run", "-p", TWO, "--timeout", "soon", "--", "/bin/true"], "--timeout"
    ),
    Case(
        "run: negative timeout",
        ["run", "-p", TWO, "--timeout", "-5s", "--", "/bin/true"],
        "--timeout",
    ),
    Case("run: zero ranks", ["run", "-p", TWO, "-n", "0", "--", "/bin/true"], "-n"),
    Case(
        "run: more ranks than the platform has",
        ["run", "-p", TWO, "-n", "100", "--", "/bin/true"],
        "-n 100",
    ),
    Case("run: no program", ["run", "-p", TWO], "application"),
    Case("run: unknown MPI", ["run", "-p", TWO, "--mpi", "lam", "--", "/bin/true"], "--mpi"),
    Case("bench: unknown benchmark", ["bench", "pingpang", "-p", TWO], "pingpang"),
    Case("coll explain: bad size", ["coll", "explain", "-p", TWO, "bcast", "lots"], "lots"),
    Case("coll explain: unknown collective", ["coll", "explain", "-p", TWO, "bcst", "8"], "bcst"),
    Case("coll info: unknown collective", ["coll", "info", "ring"], "unknown collective"),
    Case("model predict: bad size", ["model", "predict", "-p", TWO, "-M", "-3"], "-M"),
    Case("experiment: unknown", ["experiment", "run", "no/such"], "no experiment"),
    Case("report: not a sweep directory", ["report", "{d}"], "not a sweep's directory"),
    Case(
        "sweep: vary without values",
        ["sweep", "-p", TWO, "--vary", "wan.latency=", "-o", "{o}", "--", "/bin/true"],
        "--vary",
    ),
    Case(
        "sweep: repeat zero",
        ["sweep", "-p", TWO, "--repeat", "0", "-o", "{o}", "--", "/bin/true"],
        "repeat 0",
    ),
    # ---- sweep files --------------------------------------------------------------------
    sweep("not UTF-8", b'platform = "\xfe"\n', "not UTF-8"),
    sweep("not TOML", "platform = [", "not valid TOML"),
    sweep("platform missing", '[[app]]\nname = "x"\ncommand = ["/bin/true"]\n', "platform"),
    sweep(
        "repeat negative",
        f'platform = "{TWO}"\nrepeat = -1\n[[app]]\nname = "x"\ncommand = ["/bin/true"]\n',
        "repeat",
    ),
    sweep(
        "vary a number",
        f'platform = "{TWO}"\nvary = 5\n[[app]]\nname = "x"\ncommand = ["/bin/true"]\n',
        "vary",
    ),
    # ---- profiles -----------------------------------------------------------------------
    profile("empty", "", "not JSON"),
    profile("truncated", '{"schema": "isthmus-profile", "version": 1, "ranks"', "not JSON"),
    profile("not UTF-8", b'{"x": "\xff"}', "not UTF-8"),
    profile("a list", "[1, 2, 3]", "profile"),
    profile("wrong schema version", '{"schema": "isthmus-profile", "version": 99}', "profile"),
    Case("profile: missing", ["profile", "show", "{d}/nope.json"], "no such"),
    Case("profile: a directory", ["profile", "show", "{d}"], "a directory"),
    # ---- a sweep's directory given to `report` --------------------------------------------
    report("sweep.json truncated", '{"platform": ', "", "not JSON"),
    report("sweep.json a list", "[1]", "", "not a valid sweep file"),
    report("sweep.json repeat 0", SWEEP_JSON.replace('"repeat": 1', '"repeat": 0'), "", "repeat"),
    report("sweep.json without apps", SWEEP_JSON.replace('"apps"', '"programs"'), "", "'apps'"),
    report("results.json a table", SWEEP_JSON, '{"id": "a"}', "not a list of points"),
    report(
        "results.json point without status",
        SWEEP_JSON,
        '[{"id": "a", "command": []}]',
        "point 0: not a valid sweep-point file",
    ),
    report("results.json not UTF-8", SWEEP_JSON, b'[{"id": "\xff"}]', "not UTF-8"),
    report("results.json empty", SWEEP_JSON, "[]", "no finished points yet"),
    # ---- benchmark records (JSON lines) -------------------------------------------------
    bench("empty file", "", "header"),
    bench("no header", '{"record": "logp", "bytes": 8}\n', "header"),
    bench("broken record", '{"record": "header"}\n{"record": \n', "not a JSON record"),
    Case("model fit: missing file", ["model", "fit", "{d}/missing.jsonl", "-o", "{o}"], "no such"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line(isthmus: Run, tmp_path: Path, case: Case) -> None:
    f = tmp_path / f"input{case.suffix}"
    if case.file is not None:
        if isinstance(case.file, bytes):
            f.write_bytes(case.file)
        else:
            f.write_text(case.file)
    for rel, content in case.files.items():
        extra = tmp_path / rel
        extra.parent.mkdir(parents=True, exist_ok=True)
        extra.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = set(tmp_path.rglob("*"))
    out = tmp_path / "out" / "result.txt"
    args = [
        a.replace("{f}", str(f)).replace("{d}", str(tmp_path)).replace("{o}", str(out))
        for a in case.args
    ]
    done = isthmus(*args, timeout=120)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-1500:])
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    assert len(lines) == 1, done.stderr
    assert case.expect in lines[0], lines[0]
    assert not out.exists(), "an output was written although the input was refused"
    assert not list(tmp_path.rglob("*.tmp*")), "a half-written file was left"
    assert set(tmp_path.rglob("*")) == before, "the refused command wrote something"


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 60


# The environment libisthmus reads, set by hand (as on real sites, without isthmus run):
# checked at MPI_Init, one line from rank 0, and a non-zero status for the job.
LAYER_ENV = [
    ("ISTHMUS_CLUSTERS", "east:x,west:2", "ISTHMUS_CLUSTERS=east:x,west:2: 'east:x' is not"),
    ("ISTHMUS_WAIT", "nap", "ISTHMUS_WAIT=nap: unknown waiting mode (expected spin or sleep)"),
    ("ISTHMUS_COLL", "on", "ISTHMUS_COLL: unknown value 'on' (expected one of native, isthmus)"),
    ("ISTHMUS_COLL_SEGMENT", "16Ki", "ISTHMUS_COLL_SEGMENT: '16Ki' is not a positive size"),
]


@pytest.mark.parametrize(("var", "value", "line"), LAYER_ENV, ids=[v[0] for v in LAYER_ENV])
def test_bad_layer_environment_stops_the_job_once(var: str, value: str, line: str) -> None:
    root = Path(__file__).resolve().parents[2]
    app = root / "build" / "bin" / "openmpi" / "allreduce_loop"
    layer = root / "build" / "lib" / "openmpi" / "libisthmus.so"
    done = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
         "-x", f"LD_PRELOAD={layer}", "-x", f"{var}={value}", str(app), "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0, done.stderr
    assert (done.stdout + done.stderr).count(line) == 1, done.stderr
    assert "Traceback" not in done.stderr


# Experiment files, checked the same way; the experiments folder is swapped for a temporary
# one in-process (the command line always reads the repository's).
EXPERIMENT_FILES = [
    ("not UTF-8", b'kind = "\xfe"\n', "not UTF-8"),
    ("not TOML", 'kind = "bench', "not valid TOML"),
    ("unknown key", 'kind = "bench"\nrepeats = 3\n', "unknown key 'repeats'"),
    ("unknown kind", 'kind = "magic"\n', "kind = 'magic': expected one of"),
    ("quick a number", 'kind = "bench"\nquick = 3\n', "quick = 3: expected a table"),
    ("quick.params a list", 'kind = "bench"\nquick = { params = [1] }\n', "quick.params"),
    ("quick unknown key", 'kind = "bench"\nquick = { reps = 1 }\n', "quick.reps"),
    ("minutes a string", 'kind = "bench"\nminutes = "ten"\n', "minutes = 'ten'"),
    ("minutes negative", 'kind = "bench"\nminutes = -1\n', "minutes = -1"),
    ("minutes NaN", 'kind = "bench"\nminutes = nan\n', "minutes = nan"),
    ("params a number", 'kind = "bench"\nparams = 5\n', "params = 5: expected a table"),
    ("repetitions zero", 'kind = "bench"\nrepetitions = 0\n', "repetitions = 0"),
    ("repetitions true", 'kind = "bench"\nrepetitions = true\n', "repetitions = True"),
    ("mpis a string", 'kind = "bench"\nmpis = "openmpi"\n', "mpis = 'openmpi'"),
    ("mpis unknown", 'kind = "bench"\nmpis = ["lam"]\n', "mpis = ['lam']"),
    ("extends missing", 'extends = "area/none"\n', "no experiment 'area/none'"),
    ("extends itself", 'extends = "area/x"\n', "extends = 'area/x'"),
    ("title a table", 'kind = "bench"\ntitle = { a = 1 }\n', "title = {'a': 1}"),
]


@pytest.mark.parametrize(
    ("text", "expect"), [c[1:] for c in EXPERIMENT_FILES], ids=[c[0] for c in EXPERIMENT_FILES]
)
def test_bad_experiment_file_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str | bytes,
    expect: str,
) -> None:
    from isthmus import cli, experiment

    (tmp_path / "area").mkdir()
    f = tmp_path / "area" / "x.toml"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    monkeypatch.setattr(experiment, "EXPERIMENTS", tmp_path)
    assert cli.main(["experiment", "list"]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and expect in lines[0], err
    assert str(f) in lines[0] or "no experiment" in lines[0], lines[0]


# The environment isthmus-exec reads (isthmus run sets it; a site's own launcher may too).
EXEC_ENV = [
    ({"ISTHMUS_PRELOAD": "{d}/none.so"}, "ISTHMUS_PRELOAD={d}/none.so: {d}/none.so: No such file"),
    ({"ISTHMUS_PRELOAD": "{d}"}, "ISTHMUS_PRELOAD={d}: {d}: not a regular file"),
    (
        {"ISTHMUS_PRELOAD": "{d}/file:{d}/no.so"},
        "ISTHMUS_PRELOAD={d}/file:{d}/no.so: {d}/no.so: No",
    ),
    ({"ISTHMUS_STATUS_DIR": "{d}/none"}, "ISTHMUS_STATUS_DIR={d}/none: No such file"),
    ({"ISTHMUS_STATUS_DIR": "{d}/file"}, "ISTHMUS_STATUS_DIR={d}/file: not a directory"),
    ({"ISTHMUS_NETNS": "a,b"}, "ISTHMUS_NETNS has no namespace for rank 5"),
    ({"ISTHMUS_NETNS": "a,b,c,d,e,,f"}, "ISTHMUS_NETNS: entry 5 is ''"),
    ({"ISTHMUS_NETNS": "a,b,c,d,e,ist-none"}, "ISTHMUS_NETNS: cannot enter ist-none (rank 5)"),
    ({"ISTHMUS_NETNS": "a,b,c,d,e,"}, "ISTHMUS_NETNS has no namespace for rank 5"),
    ({"ISTHMUS_NETNS": "a,b,c,d,e,../x"}, "ISTHMUS_NETNS: entry 5 is '../x'"),
    ({"ISTHMUS_NETNS": "a", "PMI_RANK": "x"}, "rank 'x' from the launcher is not a number"),
]


@pytest.mark.parametrize(("env", "line"), EXEC_ENV, ids=[e[1][:40] for e in EXEC_ENV])
def test_bad_exec_environment_is_one_line(tmp_path: Path, env: dict[str, str], line: str) -> None:
    exec_wrapper = Path(__file__).resolve().parents[2] / "build" / "bin" / "isthmus-exec"
    (tmp_path / "file").write_text("")
    given = {k: v.replace("{d}", str(tmp_path)) for k, v in env.items()}
    done = subprocess.run(
        [str(exec_wrapper), "/bin/echo", "started"],
        env={"PATH": "/usr/bin:/bin", "PMI_RANK": "5", **given},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == "", "the program started"
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert line.replace("{d}", str(tmp_path)) in done.stderr, done.stderr
