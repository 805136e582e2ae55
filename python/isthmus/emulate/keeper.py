"""A keeper: what must be undone when an `isthmus run` is killed outright (SIGKILL), which
no `finally` of the run can do. It is a small process the kernel tells when the run dies
(PR_SET_PDEATHSIG); it then runs the commands it was given (stop a network's Slurm
daemons, cancel the run's Slurm jobs). When the run ends normally it stops its keepers
itself (SIGTERM while it lives): they just end.

    python -m isthmus.emulate.keeper OWNER_PID LOG COMMAND_JSON...
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(owner_pid: int, commands: list[list[str]], log: Path) -> int:
    """Start a keeper for the calling process (owner_pid: its pid); returns the keeper's."""
    argv = [sys.executable, "-m", "isthmus.emulate.keeper", str(owner_pid), str(log)]
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv + [json.dumps(c) for c in commands],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True,  # a Ctrl-C at the terminal is the run's to handle
            preexec_fn=_die_with_parent,
        ).pid  # fmt: skip


def alive(pid: int) -> bool:
    """True while pid runs (a zombie has stopped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return False
    return True


def main(argv: list[str]) -> None:
    owner = int(argv[0])
    commands = [json.loads(c) for c in argv[2:]]
    received: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not alive(owner):  # it died before the kernel was told to tell us
        received.append(0)
    while not received:
        signal.pause()
    if alive(owner):
        return  # the run stops what it started itself
    for c in commands:
        subprocess.run(c, stdin=subprocess.DEVNULL, timeout=60)


if __name__ == "__main__":
    main(sys.argv[1:])
