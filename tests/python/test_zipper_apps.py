"""Applications from Debian, unmodified, across zipper forwarding (issue 19): LAMMPS gives
the same thermo output as on one cluster (the Lennard-Jones melt, and parallel tempering
over two partitions that each span both clusters), HPCC completes with its checks passed,
NetPIPE runs between the clusters with both MPIs. Debian builds LAMMPS and HPCC for Open
MPI only."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import PLATFORMS, ROOT, Run

ZIPPER = PLATFORMS / "zipper.toml"
ONE_CLUSTER = ("-p", PLATFORMS / "one-cluster.toml", "--set", "clusters.local.hosts=4")
LAMMPS = ROOT / "examples" / "apps" / "lammps"


def thermo(text: str) -> list[str]:
    """The thermo table of a LAMMPS log: the header line and the rows under it."""
    lines = text.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.split()[:1] == ["Step"]:
            out.append(line)
            out += [x for x in lines[i + 1 :] if re.match(r"^\s*\d+\s", x)][:10]
    return out


def run_in(isthmus: Run, where: Path, platform: tuple[str | Path, ...], *args: str | Path) -> str:
    where.mkdir()
    done = isthmus(
        "run", *platform, "--mpi", "openmpi", "--timeout", "300s", "--", *args, cwd=where
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_lammps_melt_matches_one_cluster(isthmus: Run, tmp_path: Path) -> None:
    args = ("lmp", "-in", LAMMPS / "in.lj", "-var", "x", "10", "-var", "y", "10", "-var", "z", "10")
    across = thermo(run_in(isthmus, tmp_path / "zip", ("-p", ZIPPER), *args, "-log", "none"))
    alone = thermo(run_in(isthmus, tmp_path / "one", ONE_CLUSTER, *args, "-log", "none"))
    assert len(across) == 4 and across == alone


def test_lammps_partitions_match_one_cluster(isthmus: Run, tmp_path: Path) -> None:
    """-partition 2x2, round-robin: each partition's communicator spans both clusters."""
    rr = ("--set", "layer.placement=round-robin")
    args = ("lmp", "-partition", "2x2", "-in", LAMMPS / "in.temper", "-screen", "none")
    run_in(isthmus, tmp_path / "zip", ("-p", ZIPPER, *rr), *args)
    run_in(isthmus, tmp_path / "one", (*ONE_CLUSTER, *rr), *args)
    for log in ("log.lammps.0", "log.lammps.1"):
        across = thermo((tmp_path / "zip" / log).read_text())
        assert len(across) == 5 and across == thermo((tmp_path / "one" / log).read_text())
    swaps = (tmp_path / "zip" / "log.lammps").read_text()
    assert swaps == (tmp_path / "one" / "log.lammps").read_text()
    assert "1 0" in swaps  # the replicas swapped temperatures at least once


@pytest.mark.xdist_group("cpu")  # large: make test runs these one after the other
def test_hpcc_passes_its_checks(isthmus: Run, tmp_path: Path) -> None:
    (tmp_path / "hpcc").mkdir()
    shutil.copy(ROOT / "examples" / "apps" / "hpcc" / "hpccinf.txt", tmp_path / "hpcc")
    done = isthmus(
        "run", "-p", ZIPPER, "--mpi", "openmpi", "--timeout", "300s", "--", "hpcc",
        cwd=tmp_path / "hpcc",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = (tmp_path / "hpcc" / "hpccoutf.txt").read_text()
    assert "Success=1" in out and "End of Summary section" in out
    assert "0 tests completed and failed residual checks" in out


@pytest.mark.parametrize(("mpi", "netpipe"), [("openmpi", "NPopenmpi"), ("mpich", "NPmpich2")])
def test_netpipe_between_the_clusters(isthmus: Run, tmp_path: Path, mpi: str, netpipe: str) -> None:
    one_each = ("--set", "clusters.left.hosts=1", "--set", "clusters.right.hosts=1")
    done = isthmus(
        "run", "-p", ZIPPER, *one_each, "--mpi", mpi, "--timeout", "300s", "--",
        netpipe, "-u", "65536", "-n", "20", "-o", tmp_path / "np.out",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in (tmp_path / "np.out").read_text().splitlines() if line.strip()]
    assert rows[-1][0] == "65539" and float(rows[-1][1]) > 0  # bytes, Mbit/s
