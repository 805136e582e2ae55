"""Shared fixtures: paths, the test programs built for both MPIs, and running isthmus."""

from __future__ import annotations

import fcntl
import hashlib
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
    "ior_like": "ior_like.c",
    "mpiio_views": "mpiio_views.c",
    "mpiio_refused": "mpiio_refused.c",
}


class Done(subprocess.CompletedProcess[str]):
    """A finished isthmus command and its pid: `isthmus run` names its network run<pid>,
    so a test can look for what its own run left, whatever other tests run beside it."""

    pid: int = 0


Run = Callable[..., Done]


def _compile(wrapper: str, mpi: str, flags: list[str], source: Path, out: Path) -> Path:
    cmd = [f"{wrapper}.{mpi}", "-O1", *flags, "-o", str(out), str(source)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return out


@pytest.fixture(scope="session")
def apps(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Every test program built with each MPI's compiler wrappers, keyed (mpi, name).

    Built once per `make test` for all pytest processes (make test runs two at a time,
    then one): into build/test-apps, each file named by a hash of its source, compiler
    and flags, under a lock, so that a process finds what another built. A user who may
    not write there (test_net_rootless.py's) builds its own in a temporary directory."""
    out = ROOT / "build" / "test-apps"
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / ".lock").touch()
    except PermissionError:
        out = tmp_path_factory.mktemp("apps")
    jobs = []
    for mpi in MPIS:
        for lang, (src, wrapper, flags) in LANGUAGES.items():
            jobs.append(((mpi, lang), wrapper, mpi, flags, APPS / src, f"{lang}-{mpi}"))
        for name, src in HELPERS.items():
            jobs.append(((mpi, name), "mpicc", mpi, [], APPS / src, f"{name}-{mpi}"))

    def build(job: tuple[Any, ...]) -> tuple[tuple[str, str], Path]:
        key, wrapper, mpi, flags, source, name = job
        stamp = hashlib.sha256(f"{wrapper} {mpi} {flags}".encode() + source.read_bytes())
        target = out / f"{name}-{stamp.hexdigest()[:12]}"
        if not target.exists():
            _compile(wrapper, mpi, flags, source, target.with_suffix(".tmp"))
            target.with_suffix(".tmp").rename(target)
        return key, target

    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(pool.map(build, jobs))


@pytest.fixture
def isthmus() -> Run:
    """Run the CLI; returns the completed process (text output)."""

    def run(
        *args: str | Path,
        timeout: float = 900,  # above every --timeout the tests give, so isthmus cleans up
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Done:
        with subprocess.Popen(
            [str(ISTHMUS), *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env or dict(os.environ),
            cwd=cwd,
        ) as proc:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise
        done = Done(proc.args, proc.returncode, out, err)
        done.pid = proc.pid
        return done

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
