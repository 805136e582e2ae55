"""MPI-IO on pio (docs/mpiio.md): unmodified MPI-IO programs whose files are named
"pio:NAME" on a platform with [io] mpiio = true, under both MPIs: the I/O servers hidden
in the job, every view and access form byte-exact against the MPI's own MPI-IO, the
IOR-like program's read-back, the profile, and what is refused with one line."""

from __future__ import annotations

import json
import os
import subprocess
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
@pytest.mark.parametrize("two_phase", ["auto", "on"])
def test_every_view_and_access_form_matches_the_mpis_own_mpiio(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path, mpi: str, two_phase: str
) -> None:
    """Every datatype kind of a filetype by every access form: the same bytes in the pio
    file as in the MPI's own, read back through the view; the same sizes, positions and
    byte offsets; the application sees 4 ranks, not 6. With two_phase on, every
    collective write goes through aggregators."""
    servers, plain = tmp_path / "pio", tmp_path / "plain"
    servers.mkdir()
    plain.mkdir()
    rc, out, err = run_on_pio(
        isthmus, mpi, servers, apps[(mpi, "mpiio_views")], str(plain),
        sets=("--set", f"io.two_phase={two_phase}"),
    )  # fmt: skip
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


def _hdf5_program(mpi: str, tmp_path: Path) -> Path:
    """tests/apps/h5_chunked.c against Debian's parallel HDF5 for this MPI."""
    lib, out = Path("/usr/lib/x86_64-linux-gnu/hdf5") / mpi, tmp_path / "h5"
    cmd = [f"mpicc.{mpi}", "-O1", f"-I/usr/include/hdf5/{mpi}", "-o", str(out),
           str(APPS / "h5_chunked.c"), f"-L{lib}", f"-Wl,-rpath,{lib}", "-lhdf5"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("mpi", MPIS)
def test_an_hdf5_program_runs_unmodified_and_its_file_reads_back_through_the_mpis_own(
    isthmus: Run, tmp_path: Path, mpi: str
) -> None:
    """HDF5's MPI-IO driver on a pio: file (a chunked 3-D dataset written and read back
    collectively); `isthmus pio export` writes it out whole, and the same program reads it
    back through the MPI's own MPI-IO on another platform."""
    program = _hdf5_program(mpi, tmp_path)
    servers = tmp_path / "pio"
    servers.mkdir()
    rc, out, err = run_on_pio(isthmus, mpi, servers, program, "pio:field.h5")
    assert rc == 0, out + err[-3000:]
    assert "h5_chunked: 23040 elements, 0 bad" in out
    plain = tmp_path / "field.h5"
    done = isthmus("pio", "export", servers, "field.h5", "-o", plain)
    assert done.returncode == 0, done.stderr
    assert plain.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
    done = isthmus("run", "-p", PLATFORMS / "two-clusters.toml", "--mpi", mpi,
                   "--timeout", "120s", "--", program, plain, "read")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "h5_chunked: 23040 elements, 0 bad" in done.stdout


def test_export_of_a_file_that_is_not_there_is_one_line(isthmus: Run, tmp_path: Path) -> None:
    done = isthmus("pio", "export", tmp_path, "nothing", "-o", tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("nothing.pio-meta: No such file or directory: "
                                        "expected pio's layout of 'nothing'")  # fmt: skip
    assert not (tmp_path / "out").exists()
