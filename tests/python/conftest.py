"""Shared fixtures: paths, the test programs built for both MPIs, and running isthmus."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ISTHMUS = ROOT / "bin" / "isthmus"
PLATFORMS = ROOT / "examples" / "platforms"
TWO_CLUSTERS = PLATFORMS / "two-clusters.toml"
APPS = ROOT / "tests" / "apps"
MPIS = ("openmpi", "mpich")
# (language, source, compiler wrapper, flags)
LANGUAGES = {
    "c": ("pattern.c", "mpicc", ["-g"]),  # -g: profile show names its call sites
    "cxx": ("pattern.cpp", "mpicxx", []),
    "fortran-mpif": ("pattern.F90", "mpif90", ["-fallow-argument-mismatch"]),
    "fortran-mpi": ("pattern.F90", "mpif90", ["-DUSE_MPI"]),
    "fortran-f08": ("pattern.F90", "mpif90", ["-DUSE_F08"]),
}
# Run a command as an unprivileged user.
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
# Root of the machine, not root of a user namespace (test_net_rootless.py runs test_net.py
# in one): only the machine's root may change users, nice levels or /dev/net/tun.
MACHINE_ROOT = os.geteuid() == 0 and Path("/proc/self/uid_map").read_text().split() == [
    "0",
    "0",
    "4294967295",
]
HELPERS = {
    "exitcode": "exitcode.c",
    "sleeper": "sleeper.c",
    "edge_cases": "edge_cases.c",
    "coll_check": "coll_check.c",
    "coll_threads": "coll_threads.c",
    "rtt_gate": "rtt_gate.c",
    "dist_graph_loop": "dist_graph_loop.c",
    "zip_check": "zip_check.c",
    "zip_collectives_check": "zip_collectives_check.c",
    "zip_stress": "zip_stress.c",
    "probe_ssend": "probe_ssend.c",
    "zero_counts": "zero_counts.c",
    "late_rank": "late_rank.c",
}

Run = Callable[..., subprocess.CompletedProcess[str]]


def _compile(wrapper: str, mpi: str, flags: list[str], source: Path, out: Path) -> Path:
    cmd = [f"{wrapper}.{mpi}", "-O1", *flags, "-o", str(out), str(source)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return out


@pytest.fixture(scope="session")
def apps(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Every test program built with each MPI's compiler wrappers, keyed (mpi, name)."""
    out = tmp_path_factory.mktemp("apps")
    jobs = []
    for mpi in MPIS:
        for lang, (src, wrapper, flags) in LANGUAGES.items():
            jobs.append(((mpi, lang), wrapper, mpi, flags, APPS / src, out / f"{lang}-{mpi}"))
        for name, src in HELPERS.items():
            jobs.append(((mpi, name), "mpicc", mpi, [], APPS / src, out / f"{name}-{mpi}"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = list(pool.map(lambda j: (j[0], _compile(*j[1:])), jobs))
    return dict(built)


@pytest.fixture
def isthmus() -> Run:
    """Run the CLI; returns the completed process (text output)."""

    def run(
        *args: str | Path,
        timeout: float = 900,  # above every --timeout the tests give, so isthmus cleans up
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ISTHMUS), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env or dict(os.environ),
            cwd=cwd,
        )

    return run


def profile_run(
    app: Path, out: Path, platform: Path = TWO_CLUSTERS, *options: str
) -> dict[str, Any]:
    """Run app under isthmus (with extra run options) profiling into out; return the profile."""
    done = subprocess.run(
        [
            str(ISTHMUS),
            "run",
            "-p",
            str(platform),
            *options,
            "--profile",
            str(out),
            "--timeout",
            "120s",
            "--",
            str(app),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    return result
