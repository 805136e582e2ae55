"""Profiles of a program with known communication, in every language and both MPIs, hold
exactly the expected calls, size buckets and matrices (tests/apps/pattern.*)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import APPS, LANGUAGES, MPIS, TWO_CLUSTERS, Run
from expected_pattern import calls, matrices
from isthmus.profile import where_in_source

LIFECYCLE = ("MPI_Init", "MPI_Init_thread", "MPI_Finalize")
CASES = [(mpi, lang) for mpi in MPIS for lang in LANGUAGES] + [("openmpi", "python")]
# The waiting mode for oversubscribed runs replaces blocking calls by nonblocking ones plus
# tests: profiles must not change. MPICH's Fortran reaches the C wrappers, Open MPI's not.
SLEEP_CASES = [("mpich", "c"), ("mpich", "fortran-mpi"), ("openmpi", "c")]


def _measured(profile: dict[str, Any]) -> tuple[Counter[Any], Counter[Any]]:
    c: Counter[Any] = Counter()
    b: Counter[Any] = Counter()
    for rank, fn, low, ncalls, nbytes, _seconds in profile["calls"]["rows"]:
        if fn not in LIFECYCLE:
            c[(rank, fn, low)] += ncalls
            b[(rank, fn, low)] += nbytes
    return c, b


def _run_pattern(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str, lang: str, out: Path, *options: str
) -> dict[str, Any]:
    app = (
        ["/usr/bin/python3", str(APPS / "pattern.py")]
        if lang == "python"
        else [str(apps[(mpi, lang)])]
    )
    done = isthmus(
        "run",
        "-p",
        TWO_CLUSTERS,
        *options,
        "--mpi",
        mpi,
        "--profile",
        out,
        "--timeout",
        "120s",
        "--",
        *app,
    )
    assert done.returncode == 0, done.stderr
    assert "pattern: done on 4 ranks" in done.stdout
    result: dict[str, Any] = json.loads(out.read_text())
    return result


@pytest.mark.parametrize(
    ("mpi", "lang", "wait"),
    [(m, lang, "auto") for m, lang in CASES] + [(m, lang, "sleep") for m, lang in SLEEP_CASES],
)
def test_pattern_profile_is_exact(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path, mpi: str, lang: str, wait: str
) -> None:
    options = ("--set", f"layer.wait={wait}")
    profile = _run_pattern(isthmus, apps, mpi, lang, tmp_path / "p.json", *options)
    n = profile["nranks"]
    assert n == 4
    assert profile["mpi"]["implementation"] == mpi
    want_calls, want_bytes = calls(n)
    got_calls, got_bytes = _measured(profile)
    assert got_calls == want_calls
    assert got_bytes == want_bytes

    m = matrices(n)
    assert profile["traffic"]["p2p"]["messages"] == m["p2p_msgs"]
    assert profile["traffic"]["p2p"]["bytes"] == m["p2p_bytes"]
    assert profile["traffic"]["coll"]["messages"] == m["coll_msgs"]
    assert profile["traffic"]["coll"]["bytes"] == m["coll_bytes"]

    # Clusters: block mapping of two-clusters.toml, east = ranks 0-1, west = 2-3.
    assert profile["clusters"] == ["east", "west"]
    assert [r["cluster"] for r in profile["ranks"]] == [0, 0, 1, 1]
    for kind, key in (("p2p", "p2p_bytes"), ("coll", "coll_bytes")):
        cells = m[key]
        inter = sum(cells[s][d] for s in range(n) for d in range(n) if (s < 2) != (d < 2))
        total = sum(map(sum, cells))
        assert profile["traffic"][kind]["inter"]["bytes"] == inter
        assert profile["traffic"][kind]["intra"]["bytes"] == total - inter
        cluster = profile["traffic"][kind]["cluster_bytes"]
        assert cluster[0][1] + cluster[1][0] == inter

    # Every call took some time; MPI time is within application time.
    for r in profile["ranks"]:
        assert 0 < r["mpi_seconds"] <= r["app_seconds"] * 1.01 + 1e-3
    assert profile["run"]["exit_code"] == 0
    assert profile["run"]["platform"]["name"] == "two-clusters"
    lifecycle = {row[1] for row in profile["calls"]["rows"] if row[1] in LIFECYCLE}
    assert lifecycle == {"MPI_Init_thread" if lang == "python" else "MPI_Init", "MPI_Finalize"}
    _check_sites(profile, got_calls, lang)


def _check_sites(profile: dict[str, Any], got_calls: Counter[Any], lang: str) -> None:
    """Every blocking collective call is filed under its call site; in C the sites are the
    program's lines (pattern.c: 4 Allreduce calls at line 50, 1 at line 67)."""
    coll = {fn for fn, group in profile["functions"].items() if group == "coll"}
    per_fn: Counter[Any] = Counter()
    for (rank, fn, _low), c in got_calls.items():
        if fn in coll:
            per_fn[(rank, fn)] += c
    at_sites: Counter[Any] = Counter()
    for rank, fn, _obj, _address, c, _wan, _s in profile["sites"]["rows"]:
        at_sites[(rank, fn)] += c
    assert at_sites == per_fn and profile["sites"]["dropped_calls"] == 0
    if lang == "c":
        allreduce = [tuple(r[1:4]) for r in profile["sites"]["rows"]
                     if r[0] == 0 and r[1] == "MPI_Allreduce"]  # fmt: skip
        calls_at = {r[4] for r in profile["sites"]["rows"] if r[0] == 0 and r[1] == "MPI_Allreduce"}
        assert len(allreduce) == 2 and calls_at == {4, 1}
        where = where_in_source(allreduce)
        assert sorted(w.split(" at ")[-1] for w in where.values()) == [
            "pattern.c:50",
            "pattern.c:67",
        ]


def test_profiling_off_writes_nothing(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    done = isthmus(
        "run", "-p", TWO_CLUSTERS, "--timeout", "120s", "--", apps[("openmpi", "c")], cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_cluster_from_environment_overrides_blocks(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    """ISTHMUS_CLUSTER, as a real site's launcher would set it, wins over the block mapping."""
    import os

    out = tmp_path / "p.json"
    env = {**os.environ, "ISTHMUS_CLUSTER": "solo"}
    done = isthmus(
        "run",
        "-p",
        TWO_CLUSTERS,
        "--profile",
        out,
        "--timeout",
        "120s",
        "--",
        apps[("mpich", "c")],
        env=env,
    )
    assert done.returncode == 0, done.stderr
    profile = json.loads(out.read_text())
    assert profile["clusters"] == ["east", "west", "solo"]
    assert {r["cluster"] for r in profile["ranks"]} == {2}
    assert profile["traffic"]["p2p"]["inter"]["bytes"] == 0


def test_cluster_from_host_patterns(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    """A real-site platform: ranks find their cluster by matching the host name."""
    import socket

    host = socket.gethostname()
    plat = tmp_path / "site.toml"
    plat.write_text(f"""
[clusters.elsewhere]
host_patterns = ["no-such-host-*"]
[clusters.here]
host_patterns = ["{host[:1]}*"]
[wan]
latency = "1ms"
""")
    out = tmp_path / "p.json"
    done = isthmus(
        "run",
        "-p",
        plat,
        "-n",
        "3",
        "--profile",
        out,
        "--timeout",
        "120s",
        "--",
        apps[("openmpi", "c")],
    )
    assert done.returncode == 0, done.stderr
    profile = json.loads(out.read_text())
    assert profile["nranks"] == 3
    placed = {profile["clusters"][r["cluster"]] for r in profile["ranks"]}
    assert placed == {"here"}
    done = isthmus("run", "-p", plat, "--", apps[("openmpi", "c")])
    assert done.returncode == 2 and "-n is needed" in done.stderr
