"""What killed runs leave behind, and removing it: a run killed outright (SIGKILL) cannot
take its network down; its router and ranks die with it, its namespaces stay. The next
`isthmus run` removes the networks of runs that no longer exist, `isthmus net down --all`
every network isthmus made and what is left of networks whose state is gone (namespaces
and whatever runs in them, Slurm and munge daemons, CPU cgroups); both say what they
removed and whose it was."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path

from isthmus.emulate import dilation, net
from isthmus.emulate.plan import NAME_RE


def owner(name: str) -> int:
    """The pid of the `isthmus run` that made network NAME for itself, 0 for `net up`. A
    run killed while bringing its network up left no state file: its name says it."""
    st = net.load_state(name)
    if st is not None:
        return st.owner_pid
    m = re.fullmatch(r"run(\d+)", name)
    return int(m.group(1)) if m else 0


def killed_owner(name: str) -> int:
    """The pid of the `isthmus run` that made network NAME and no longer exists (it was
    killed before it could clean up); 0 when the network's owner lives or it has none."""
    pid = owner(name)
    return pid if pid and not Path(f"/proc/{pid}").exists() else 0


def remove_orphans() -> list[tuple[str, int]]:
    """Remove the networks of killed runs. Returns (name, pid of that run) of each."""
    removed: list[tuple[str, int]] = []
    for name in networks():
        if pid := killed_owner(name):
            net.down(name)
            removed.append((name, pid))
    return removed


def networks() -> list[str]:
    """The names of the networks isthmus keeps a state for."""
    if not net.STATE_ROOT.is_dir():
        return []
    return sorted(d.name for d in net.STATE_ROOT.iterdir() if NAME_RE.fullmatch(d.name))


def down_all() -> dict[str, list[str]]:
    """Remove every network isthmus made on this machine (`net down --all`), then any other
    ist-* namespace. Returns what was removed, by network ("" for stray namespaces)."""
    removed = {name: net.down(name) for name in networks()}
    stray: list[str] = []
    if namespaces := net.existing_namespaces(""):
        for ns in namespaces:
            done = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for word in done.stdout.split():  # a daemon or rank of a network whose state is gone
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(word), signal.SIGKILL)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        stray += namespaces
    if daemons := stray_daemons():
        for pid in daemons:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        stray.append(f"routers and Slurm daemons of removed networks (pids {daemons})")
    for name in dilation.leftover_cgroups():  # CPU caps of a network whose state is gone
        stray += dilation.remove_cgroups(name)
    if stray:
        removed[""] = stray
    return removed


def stray_daemons() -> list[int]:
    """The router, munged, slurmctld and slurmd processes whose files are under the state
    directory of a network that no longer has one (it was removed while they ran)."""
    where = re.compile(re.escape(str(net.STATE_ROOT)) + r"/([a-z0-9-]+)/")
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        m = where.search(args)
        if m and not net.state_dir(m.group(1)).exists():
            out.append(int(proc.name))
    return out
