"""The MPI-IO profile (docs/profile.md "io"): per file, Darshan's counters, for programs
using the MPI's own MPI-IO, in C and Fortran, under both MPIs."""

from __future__ import annotations

import io as text_io
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from conftest import APPS, MPIS, TWO_CLUSTERS, Run, _compile
from isthmus import profile as profiles
from isthmus.profile import io

BLOCK, TRANSFER, SEGMENTS, RANKS = 65536, 16384, 2, 4


def run(isthmus: Run, app: Path, mpi: str, tmp_path: Path, *args: str) -> tuple[str, Any]:
    """Run app with args on the two-cluster platform, profiled; (its output, the profile)."""
    out = tmp_path / "profile.json"
    done = isthmus("run", "-p", TWO_CLUSTERS, "--mpi", mpi, "--profile", out,
                   "--timeout", "120s", "--", app, *args)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, json.loads(out.read_text())


def io_calls(profile: dict[str, Any]) -> dict[tuple[str, str], list[int]]:
    """(file, function) -> [calls, bytes] summed over ranks."""
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for _rank, name, fn, calls, nbytes, _s in profile["io"]["calls"]["rows"]:
        out[(name, fn)][0] += calls
        out[(name, fn)][1] += nbytes
    return dict(out)


# (flags, the write and read functions ior_like calls)
CASES = {
    "collective-segmented": (["-c"], "MPI_File_write_at_all", "MPI_File_read_at_all"),
    "nonblocking-strided": (["-n", "-l", "strided"], "MPI_File_iwrite_at", "MPI_File_iread_at"),
    "view-collective-strided": (
        ["-v", "-c", "-l", "strided"],
        "MPI_File_write_all",
        "MPI_File_read_all",
    ),
}


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("case", list(CASES))
def test_ior_like_is_profiled_per_file(
    isthmus: Run, apps: dict[tuple[str, str], Path], tmp_path: Path, mpi: str, case: str
) -> None:
    """Every transfer counted once on its file, with its bytes and access size; the
    collective or nonblocking kind from the function; the data read back intact."""
    flags, write_fn, read_fn = CASES[case]
    data = str(tmp_path / "ior.dat")
    output, profile = run(
        isthmus,
        apps[(mpi, "ior_like")],
        mpi,
        tmp_path,
        "-b",
        str(BLOCK),
        "-t",
        str(TRANSFER),
        "-s",
        str(SEGMENTS),
        "-o",
        data,
        *flags,
    )
    assert '"bad_bytes": 0' in output
    calls = io_calls(profile)
    transfers = RANKS * SEGMENTS * BLOCK // TRANSFER
    total = RANKS * SEGMENTS * BLOCK
    assert calls[(data, write_fn)] == [transfers, total]
    assert calls[(data, read_fn)] == [transfers, total]
    assert calls[(data, "MPI_File_open")][0] == 2 * RANKS
    assert calls[(data, "MPI_File_close")][0] == 2 * RANKS
    assert calls[(data, "MPI_File_sync")][0] == RANKS
    assert {name for name, _fn in calls} == {data}
    sizes = {(op, low): 0 for op in ("read", "write") for low in (TRANSFER,)}
    for _rank, name, op, low, count in profile["io"]["access_sizes"]["rows"]:
        assert name == data and low == TRANSFER, (op, low)
        sizes[(op, low)] += count
    assert sizes == {("read", TRANSFER): transfers, ("write", TRANSFER): transfers}
    # the per-function table has the same calls, filed under group io
    assert profile["functions"][write_fn] == "io"
    (summary,) = io.files(profile)
    kind = io.access(write_fn)
    assert kind is not None
    counted = summary.collective if kind.collective else summary.independent
    assert counted["write"] == transfers and summary.bytes["write"] == total
    assert summary.nonblocking["write"] == (transfers if kind.nonblocking else 0)
    assert summary.opens == 2 * RANKS and summary.ranks == set(range(RANKS))
    assert summary.common_sizes("read") == [(TRANSFER, transfers)]


@pytest.mark.parametrize("mpi", MPIS)
def test_fortran_mpiio_names_the_file_and_profile_show_prints_it(
    isthmus: Run, tmp_path: Path, mpi: str
) -> None:
    """The file name reaches the layer as a blank-padded Fortran string with a hidden
    length: trimmed or padded, it is one file; `profile show` prints the MPI-IO table."""
    app = _compile("mpif90", mpi, [], APPS / "io_fortran.F90", tmp_path / f"io-{mpi}")
    data = str(tmp_path / "fortran.dat")
    output, profile = run(isthmus, app, mpi, tmp_path, data)
    assert "bad 0" in output
    calls = io_calls(profile)
    assert calls[(data, "MPI_File_open")][0] == 2 * RANKS
    assert calls[(data, "MPI_File_write_at_all")] == [RANKS, RANKS * 4096]
    assert calls[(data, "MPI_File_read_at")] == [RANKS, RANKS * 4096]
    console = Console(file=text_io.StringIO(), width=250)
    profiles.show(profiles.load(tmp_path / "profile.json"), console)
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "MPI-IO per file" in shown and data in shown


def test_access_kinds_come_from_the_mpi_names() -> None:
    assert io.access("MPI_File_open") is None and io.access("MPI_File_set_view") is None
    assert io.access("MPI_File_iread_at_all") == io.Access("read", True, True, False)
    assert io.access("MPI_File_write_ordered_end") == io.Access("write", True, False, True)
    assert io.access("MPI_File_write_shared") == io.Access("write", False, False, False)
