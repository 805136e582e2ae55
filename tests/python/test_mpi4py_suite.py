"""mpi4py through the layer: its own test suite, and the intercommunicator broadcasts
that once hung in the sleeping waits.

The suite is the source distribution of the version Debian's python3-mpi4py is (3.1.4),
fetched by scripts/install-deps.sh into .cache/. It runs as a user would run it, on 4
ranks in two emulated clusters at 0 ms with the WAN-aware collectives on; 4 ranks on 2
cores make layer.wait=auto sleep, the mode where the hangs were (issue 26).

Each cluster is one host of two ranks: test_dynproc's Join has rank 1 connect to a socket
rank 0 opened at socket.gethostname(), and emulated hosts share the machine's hostname
(its loopback address, which is each namespace's own), so ranks 0 and 1 must share a
host, as they would on a real cluster's node."""

from __future__ import annotations

import re

import pytest

from conftest import APPS, ROOT, TWO_CLUSTERS, Run

SUITE = ROOT / ".cache" / "mpi4py-3.1.4" / "test"
# Spawn needs a launcher inside the job (MPI_Comm_spawn); isthmus runs no such service.
# util_dtlib converts numpy dtypes to MPI datatypes inside each process, no message: 14 of
# the suite's 67 s on 4 ranks (measured), and test_datatype covers the same layer calls.
EXCLUDED = ("test_spawn", "test_util_dtlib")
LAYER_ON = ("--set", "wan.latency=0", "--set", "layer.collectives=isthmus", "--mpi", "openmpi")
ONE_HOST_PER_CLUSTER = tuple(
    a for c in ("east", "west")
    for a in ("--set", f"clusters.{c}.hosts=1", "--set", f"clusters.{c}.ranks_per_host=2")
)  # fmt: skip


@pytest.mark.parametrize("wait", ["sleep", "spin"])
def test_intercommunicator_object_broadcasts_finish(isthmus: Run, wait: str) -> None:
    """Each rank of one group broadcasts in turn (MPI.ROOT at the broadcaster,
    MPI.PROC_NULL at the others of its group), the other group receives from root 0,
    1, ...: under the sleeping waits this once waited for ever."""
    done = isthmus(
        "run", "-p", TWO_CLUSTERS, *LAYER_ON, "--set", f"layer.wait={wait}",
        "--timeout", "120s", "--", "/usr/bin/python3", APPS / "inter_bcast.py", "20",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "inter_bcast: ok" in done.stdout


@pytest.mark.xdist_group("cpu")  # large: make test runs these one after the other
def test_mpi4py_test_suite_passes_under_the_layer(isthmus: Run) -> None:
    assert (SUITE / "runtests.py").is_file(), "run scripts/install-deps.sh (make deps)"
    excluded = [a for name in EXCLUDED for a in ("--exclude", name)]
    done = isthmus(
        "run", "-p", TWO_CLUSTERS, *ONE_HOST_PER_CLUSTER, *LAYER_ON, "--timeout", "10min", "--",
        "/usr/bin/python3", SUITE / "runtests.py", "--no-builddir", "--quiet", *excluded,
        cwd=SUITE,
    )  # fmt: skip
    tail = done.stderr[-4000:]
    assert done.returncode == 0, done.stdout[-2000:] + tail
    # unittest's verdict, once per rank (the ranks' stderr interleaves, so no line anchor)
    assert len(re.findall(r"\bOK\b", done.stderr)) >= 4 and "FAILED (" not in done.stderr, tail
