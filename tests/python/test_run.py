"""`isthmus run`: exit codes, signals, timeouts and launcher choice, with real launchers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import AS_NOBODY, ISTHMUS, MPIS, TWO_CLUSTERS, Run
from isthmus.launch.run import first_failure


@pytest.mark.parametrize("mpi", MPIS)
def test_exit_status_of_a_failing_rank_is_returned(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str
) -> None:
    done = isthmus(
        "run", "-p", TWO_CLUSTERS, "--timeout", "120s", "--", apps[(mpi, "exitcode")], "2", "3"
    )
    assert done.returncode == 3, (done.stdout, done.stderr)


@pytest.mark.parametrize("mpi", MPIS)
def test_rank_killed_by_a_signal_gives_128_plus_signal(
    isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str
) -> None:
    done = isthmus(
        "run",
        "-p",
        TWO_CLUSTERS,
        "--timeout",
        "120s",
        "--",
        apps[(mpi, "exitcode")],
        "1",
        str(-signal.SIGSEGV),
    )
    assert done.returncode == 128 + signal.SIGSEGV, (done.stdout, done.stderr)


@pytest.mark.parametrize("mpi", MPIS)
def test_success_returns_zero(isthmus: Run, apps: dict[tuple[str, str], Path], mpi: str) -> None:
    done = isthmus(
        "run", "-p", TWO_CLUSTERS, "--timeout", "120s", "--", apps[(mpi, "exitcode")], "0", "0"
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_the_network_comes_up_leaves_no_network(
    apps: dict[tuple[str, str], Path], sig: signal.Signals
) -> None:
    """Python dies at once on SIGTERM unless told otherwise: the namespaces made so far
    would stay (the CI failure of stop 32)."""
    proc = subprocess.Popen(
        [str(ISTHMUS), "run", "-p", str(TWO_CLUSTERS), "--", str(apps[("openmpi", "sleeper")]),
         "120"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    mine = f"ist-run{proc.pid}-"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and mine not in _namespaces():
            time.sleep(0.005)
        assert mine in _namespaces()  # caught half-way: the first namespace is there
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert mine not in _namespaces()


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_mpi_mismatch_is_refused(isthmus: Run, apps: dict[tuple[str, str], Path]) -> None:
    done = isthmus("run", "-p", TWO_CLUSTERS, "--mpi", "mpich", "--", apps[("openmpi", "c")])
    assert done.returncode == 2
    assert "linked with Open MPI but --mpi mpich" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "3"], "has 4 ranks"),
        (["--timeout", "soon"], "--timeout"),
        (["--profile", "/nonexistent/dir/p.json"], "does not exist"),
        ([], "no application given"),
    ],
)
def test_bad_run_arguments(
    isthmus: Run, apps: dict[tuple[str, str], Path], args: list[str], message: str
) -> None:
    app = [] if message == "no application given" else ["--", str(apps[("openmpi", "c")])]
    done = isthmus("run", "-p", TWO_CLUSTERS, *args, *app)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_missing_program_fails_cleanly(isthmus: Run) -> None:
    done = isthmus("run", "-p", TWO_CLUSTERS, "--timeout", "60s", "--", "/nonexistent/program")
    assert done.returncode != 0
    assert "cannot run '/nonexistent/program'" in done.stderr


def test_runs_as_a_normal_user(apps: dict[tuple[str, str], Path]) -> None:
    """The run path works without root (the launcher gets no root-only flags); emulation
    needs root, so this run uses the machine's own network."""
    if os.geteuid() != 0:
        pytest.skip("already a normal user: the other tests cover it")
    with tempfile.TemporaryDirectory(prefix="isthmus-user-") as d:
        home = Path(d)
        home.chmod(0o777)
        app = home / "app"
        shutil.copy(apps[("openmpi", "exitcode")], app)
        app.chmod(0o755)
        done = subprocess.run(
            [
                *AS_NOBODY,
                str(ISTHMUS),
                "run",
                "-p",
                str(TWO_CLUSTERS),
                "--no-emulation",
                "--timeout",
                "120s",
                "--",
                str(app),
                "0",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=home,
            env={**os.environ, "HOME": str(home)},
        )
    assert done.returncode == 0, done.stderr


def test_a_rank_failing_inside_finalize_does_not_hide_the_first_real_failure(
    tmp_path: Path,
) -> None:
    # CI once saw MPICH's survivors fail in MPI_Finalize (UCX endpoint timeout, exit 15)
    # before the rank that called exit(3) had been reaped: 3 is still the job's status.
    (tmp_path / "rank-0").write_text("exit 15 100 ist-run1-east0\n")
    (tmp_path / "finalizing-0").write_text("")
    (tmp_path / "rank-1").write_text("exit 0 90 ist-run1-east1\n")
    (tmp_path / "rank-2").write_text("exit 3 200 ist-run1-west0\n")
    failure = first_failure(tmp_path)
    assert failure is not None and failure.code == 3
    assert failure.describe("ist-run1-") == "rank 2 on west0 exited with status 3"
    (tmp_path / "rank-2").write_text("exit 0 200\n")  # no host: an older isthmus-exec
    assert (failure := first_failure(tmp_path)) is not None and failure.code == 15
    (tmp_path / "rank-3").write_text("signal 9 300 node7\n")
    failure = first_failure(tmp_path)
    assert failure is not None and failure.code == 128 + 9
    assert failure.describe() == "rank 3 on node7 was killed by signal 9 (SIGKILL)"
    (tmp_path / "rank-4").write_text("signal 9")  # being written: ignored
    assert first_failure(tmp_path) == failure
