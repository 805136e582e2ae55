"""What the self-test can run beside the network it measures (`net selftest --busy N
--mpi-job N`): processes that spin, and an MPI job on a network of its own. Both are
bounded in time and stopped when the measurement ends."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

from isthmus.config import paths
from isthmus.errors import UserError


@contextmanager
def busy_loops(count: int, seconds: int = 900) -> Iterator[None]:
    """COUNT processes that spin at the lowest priority for the measurement (bounded)."""
    loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"
    procs = [subprocess.Popen(["nice", "-n", "19", "python3", "-c", loop]) for _ in range(count)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@contextmanager
def mpi_job(ranks: int, k: float, seconds: int = 1800) -> Iterator[None]:
    """An MPI job of RANKS ranks on a network of its own (one cluster, at the same
    dilation), 8-byte Allreduces without end, for the measurement (bounded by its
    --timeout; Ctrl-C as `isthmus run` takes it stops it and its network)."""
    if not ranks:
        yield
        return
    cmd = [
        str(paths.isthmus_command()), "run",
        "-p", str(paths.ROOT / "examples" / "platforms" / "one-cluster.toml"),
        "--set", f"clusters.local.hosts={ranks}", "--dilate", f"{k:g}", "--mpi", "openmpi",
        "--timeout", f"{seconds / k:g}s", "--", str(paths.program("openmpi", "allreduce_loop")),
        "1000000000",
    ]  # fmt: skip
    job = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(3 * k)  # its ranks are past MPI_Init
        if job.poll() is not None:
            raise UserError(f"the MPI job beside the self-test ended early ({job.returncode})")
        yield
    finally:
        job.send_signal(signal.SIGINT)
        try:
            job.wait(60)
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait()
