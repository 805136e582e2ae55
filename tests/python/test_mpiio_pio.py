"""MPI-IO on pio (docs/mpiio.md): unmodified MPI-IO programs whose files are named
"pio:NAME" on a platform with [io] mpiio = true, under both MPIs: the I/O servers hidden
in the job, every view and access form byte-exact against the MPI's own MPI-IO, the
IOR-like program's read-back, the profile, and what is refused with one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import APPS, MPIS, PLATFORMS, Run, _compile

PIO = PLATFORMS / "pio.toml"


def run_on_pio(
    isthmus: Run, mpi: str, directory: Path, program: Path, *args: str, sets: tuple[str, ...] = ()
) -> tuple[int, str, str]:
    """program on pio's platform (4 compute ranks, 2 storage ranks that serve), mpiio on."""
    done = isthmus(
        "run", "-p", PIO, "--set", f"io.directory={directory}", "--set", "io.mpiio=true",
        *sets, "--mpi", mpi, "--timeout", "180s", "--", program, *args,
        env={**os.environ},
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("mpi", MPIS)
def test_every_view_and_access_form_matches_the_mpis_own_mpiio(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path, mpi: str
) -> None:
    """Every datatype kind of a filetype by every access form: the same bytes in the pio
    file as in the MPI's own, read back through the view; the same sizes, positions and
    byte offsets; the application sees 4 ranks, not 6."""
    servers, plain = tmp_path / "pio", tmp_path / "plain"
    servers.mkdir()
    plain.mkdir()
    rc, out, err = run_on_pio(isthmus, mpi, servers, apps[(mpi, "mpiio_views")], str(plain))
    assert rc == 0, out + err[-3000:]
    assert "mpiio_views: 56 cases" in out and ", 0 differ" in out, out + err[-2000:]
    # the servers' stripes hold the pio files; the MPI's files are plain
    assert sorted(p.name for p in servers.iterdir()) == ["server-0", "server-1"]
    assert any(p.name.startswith("views-") for p in (servers / "server-0").iterdir())


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize(
    "flags",
    [["-c"], ["-n", "-l", "strided"], ["-v", "-c", "-l", "strided"], ["-F"]],
    ids=["collective", "nonblocking-strided", "view-collective-strided", "file-per-process"],
)
def test_ior_like_on_pio_reads_back_and_is_profiled(
    isthmus: Run,
    apps: dict[tuple[str, str], Path],
    tmp_path: Path,
    mpi: str,
    flags: list[str],
) -> None:
    servers = tmp_path / "pio"
    servers.mkdir()
    profile = tmp_path / "profile.json"
    done = isthmus(
        "run", "-p", PIO, "--set", f"io.directory={servers}", "--set", "io.mpiio=true",
        "--mpi", mpi, "--profile", profile, "--timeout", "180s", "--",
        apps[(mpi, "ior_like")], "-b", "65536", "-t", "16384", "-s", "2", "-o", "pio:ior", *flags,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert '"bad_bytes": 0' in done.stdout
    rows = json.loads(profile.read_text())["io"]["calls"]["rows"]
    ranks = {row[0] for row in rows}
    assert ranks == {0, 1, 2, 3}  # the clients alone: the servers are not the application's
    assert all(row[1].startswith("pio:ior") for row in rows)


def test_what_pio_does_not_serve_is_refused_in_one_line(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    program = apps[("openmpi", "mpiio_refused")]
    servers = tmp_path / "pio"
    servers.mkdir()
    rc, out, err = run_on_pio(isthmus, "openmpi", servers, program)
    assert rc == 0, out + err[-2000:]
    assert out.count("size 4 refused 1 1 1 1") == 4
    for line in (
        "MPI_File_open of 'pio:x': MPI_MODE_EXCL, DELETE_ON_CLOSE and SEQUENTIAL are not supported",
        'MPI_File_set_view with a datarep but "native" on pio:y: not supported',
        "MPI_File_set_atomicity with flag 1 (atomic mode) on pio:z: not supported by MPI-IO on pio",
    ):
        assert line in err
    # without [io] mpiio the name is refused, not passed to the MPI
    done = isthmus("run", "-p", PIO, "--set", f"io.directory={servers}", "--mpi", "openmpi",
                   "--timeout", "120s", "--", program)  # fmt: skip
    assert "pio is off: give the platform's [io] table mpiio = true" in done.stderr


def test_a_fortran_program_is_refused_with_mpiio(isthmus: Run, tmp_path: Path) -> None:
    program = _compile("mpifort", "openmpi", [], APPS / "io_fortran.F90", tmp_path / "io_fortran")
    servers = tmp_path / "pio"
    servers.mkdir()
    rc, out, err = run_on_pio(isthmus, "openmpi", servers, program, str(tmp_path / "f.dat"))
    assert rc == 2, out + err[-2000:]
    assert "MPI-IO on pio ([io] mpiio = true) serves C programs; this one is Fortran" in err
