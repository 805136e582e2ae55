"""The MPI implementations isthmus drives: Debian's Open MPI and MPICH.

Each knows its launcher, how to pass environment variables through it, and which shared
library an application linked against it needs (so a mismatch is caught before launch).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from isthmus.errors import UserError


@dataclass(frozen=True)
class MpiImplementation:
    name: str  # "openmpi" or "mpich": also the directory of its libisthmus build
    title: str
    launcher: str
    soname: str  # the library an application linked with it loads

    def launch_command(self, nranks: int, exported: list[str], argv: list[str]) -> list[str]:
        """The launcher's command line running argv on nranks ranks with exported env vars."""
        if self.name == "openmpi":
            cmd = [self.launcher, "-np", str(nranks), "--oversubscribe"]
            if os.geteuid() == 0:
                cmd.append("--allow-run-as-root")
            for var in exported:
                cmd += ["-x", var]
            return [*cmd, *argv]
        # Hydra passes the whole environment to the ranks by default.
        return [self.launcher, "-n", str(nranks), *argv]


def emulation_environment(impl: MpiImplementation) -> dict[str, str]:
    """What makes every byte of an implementation cross the emulated network: TCP only, on
    the emulated device, shared memory off (the ranks share one kernel, so an MPI would
    otherwise see them as one host), and the launcher reachable from other namespaces."""
    if impl.name == "openmpi":
        return {
            "OMPI_MCA_pml": "ob1",
            "OMPI_MCA_btl": "tcp,self",
            "OMPI_MCA_btl_tcp_if_include": "ist0",
            "OMPI_MCA_oob_tcp_if_include": "ist0",
            # PMIx server of mpirun: listen for remote clients, on the emulated device.
            "PMIX_MCA_ptl_tcp_remote_connections": "1",
            "PMIX_MCA_ptl_tcp_if_include": "ist0",
        }
    return {
        "UCX_TLS": "tcp,self",  # UCX's shared memory ignores namespaces
        "UCX_NET_DEVICES": "ist0",
        "MPIR_CVAR_NOLOCAL": "1",
        # UCX catches SIGSEGV and the like to print a backtrace while the rank lives on,
        # seconds under load: its peers then time out in MPI_Finalize first and the job's
        # status named them, not the rank that crashed. Without its handlers a rank killed
        # by a signal dies at once (the user's own setting wins).
        "UCX_ERROR_SIGNALS": os.environ.get("UCX_ERROR_SIGNALS", ""),
        # Under load this machine can stand still for tens of seconds (docs/net.md): UCX's
        # keepalive (TCP's, after 10 s idle, probes 2 s apart) then declared live peers dead,
        # "Endpoint timeout" in a rank that had only waited. A rank that dies closes its
        # sockets and a dead router stops the run, so the keepalive finds nothing else here.
        "UCX_TCP_KEEPIDLE": os.environ.get("UCX_TCP_KEEPIDLE", "inf"),
        "UCX_KEEPALIVE_INTERVAL": os.environ.get("UCX_KEEPALIVE_INTERVAL", "inf"),
    }


IMPLEMENTATIONS = {
    "openmpi": MpiImplementation("openmpi", "Open MPI", "mpirun.openmpi", "libmpi.so.40"),
    "mpich": MpiImplementation("mpich", "MPICH", "mpiexec.mpich", "libmpich.so.12"),
}


def get(name: str) -> MpiImplementation:
    try:
        impl = IMPLEMENTATIONS[name]
    except KeyError:
        raise UserError(f"--mpi {name!r}: expected one of {', '.join(IMPLEMENTATIONS)}") from None
    if shutil.which(impl.launcher) is None:
        raise UserError(
            f"{impl.title}'s launcher {impl.launcher} is not installed (run 'make build')"
        )
    return impl


def linked_implementation(program: str) -> str | None:
    """The MPI a dynamically linked program loads, from ldd; None for scripts and others."""
    path = shutil.which(program) or program
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for impl in IMPLEMENTATIONS.values():
        if impl.soname in out:
            return impl.name
    return None


def choose(requested: str | None, program: str) -> MpiImplementation:
    """The implementation to launch with: --mpi if given (checked against the program)."""
    linked = linked_implementation(program)
    if requested is None:
        return get(linked or "openmpi")
    impl = get(requested)
    if linked is not None and linked != impl.name:
        raise UserError(
            f"{program} is linked with {IMPLEMENTATIONS[linked].title} but --mpi {requested} "
            f"was asked: rebuild it with mpicc.{requested} or use --mpi {linked}"
        )
    return impl
