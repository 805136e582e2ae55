"""test_net.py again, as a normal user inside a user namespace of its own, the way `isthmus
run` emulates without root (docs/net.md, "Privileges"): namespaces, the router with its TUN
devices, and MPI runs over them need no privilege where the kernel allows unprivileged user
namespaces and /dev/net/tun may be opened. As root the test drops to `nobody` and opens
/dev/net/tun for its duration; as a normal user it runs as that user, and where it cannot
it skips saying why."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import AS_NOBODY, MACHINE_ROOT, ROOT

# serial (make test runs it alone): it runs test_net.py, which times the network
pytestmark = pytest.mark.serial

TUN = "/dev/net/tun"
# Measurements of the link model: the same with or without root, and long (test_net.py
# runs them as root).
TIMING_ONLY = ("selftest", "disjoint", "jitter", "ports_rate", "gilbert")
USER_NAMESPACE = ["unshare", "--user", "--map-root-user", "--mount", "--net",
                  "--propagation", "private", "--"]  # fmt: skip


def why_not_here() -> str | None:
    """Why a normal user cannot emulate on this machine, or None."""
    if os.geteuid() == 0 and not MACHINE_ROOT:
        return "already inside a user namespace"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run([*USER_NAMESPACE, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"this kernel refuses unprivileged user namespaces: {probe.stderr.strip()}"
    if not MACHINE_ROOT and not os.access(TUN, os.R_OK | os.W_OK):
        mode = stat.S_IMODE(os.stat(TUN).st_mode)
        return f"{TUN} is mode {mode:04o} here: a normal user may not open it (Debian's is 0666)"
    return None


def test_net_as_a_normal_user() -> None:
    reason = why_not_here()
    if reason is not None:
        pytest.skip(reason)
    inside = (
        "mount -t tmpfs -o mode=755 isthmus-test /run && mkdir -p /run/netns /run/tmp && "
        f"TMPDIR=/run/tmp exec {sys.executable} -m pytest -q -p no:cacheprovider "
        f"tests/python/test_net.py -k 'not ({' or '.join(TIMING_ONLY)})'"
    )
    mode = stat.S_IMODE(os.stat(TUN).st_mode)
    before = _namespaces()
    with tempfile.TemporaryDirectory(prefix="isthmus-rootless-") as home:
        os.chmod(home, 0o777)
        user = AS_NOBODY if MACHINE_ROOT else []
        try:
            if MACHINE_ROOT:
                os.chmod(TUN, 0o666)
            done = subprocess.run(
                [*user, "env", f"HOME={home}", *USER_NAMESPACE, "sh", "-c", inside],
                capture_output=True,
                text=True,
                timeout=600,
                cwd=ROOT,
            )
        finally:
            if MACHINE_ROOT:
                os.chmod(TUN, mode)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
    # The user's namespaces lived in its own /run: none may appear in the machine's.
    assert _namespaces() == before


def _namespaces() -> set[str]:
    d = Path("/var/run/netns")
    return set(os.listdir(d)) if d.is_dir() else set()
