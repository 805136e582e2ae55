"""Emulation without root: the run moves into a user namespace of its own.

`isthmus run` as a normal user re-executes itself under
`unshare --user --map-root-user --mount`: inside, it is root over a new user namespace and
a private mount namespace, mounts a tmpfs on /run (where `ip netns` and the router keep
their state), and goes on as root would. The namespaces, the router and the mounts exist
only as long as the run's processes: when the run ends, the kernel removes them all.

What it needs: unprivileged user namespaces (user.max_user_namespaces > 0; on Debian
before 11 also kernel.unprivileged_userns_clone = 1), and a /dev/net/tun the user may
open (mode 0666, Debian's default). `isthmus net up` keeps a network after it returns and
so still needs real root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import NoReturn

from isthmus.errors import UserError

MARKER = "ISTHMUS_ROOTLESS"


def inside() -> bool:
    return os.environ.get(MARKER) == "1"


def reexec() -> NoReturn:
    """Re-run this command inside a new user and mount namespace (never returns)."""
    if inside():
        raise UserError("emulation inside the user namespace failed: isthmus is not root there")
    if not os.access("/dev/net/tun", os.R_OK | os.W_OK):
        raise UserError(
            "emulation without root needs a /dev/net/tun you may open (here it is "
            f"mode {oct(os.stat('/dev/net/tun').st_mode & 0o777)}): run as root, make "
            "it 0666, or add --no-emulation to run on the machine's own network"
        )
    unshare = shutil.which("unshare")
    if unshare is None:
        raise UserError("emulation without root needs unshare (util-linux)")
    probe = subprocess.run(
        [unshare, "--user", "--map-root-user", "--mount", "true"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        raise UserError(
            "emulation without root needs unprivileged user namespaces, which this "
            f"kernel refuses ({probe.stderr.strip()}): run as root or add --no-emulation"
        )
    os.environ[MARKER] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(
        unshare,
        [
            unshare,
            "--user",
            "--map-root-user",
            "--mount",
            "--net",
            "--propagation",
            "private",
            "--",
            sys.executable,
            "-m",
            "isthmus",
            *sys.argv[1:],
        ],
    )


def prepare() -> None:
    """Inside the namespaces: a private, writable /run for namespaces and state, and a
    private TMPDIR (Open MPI's session directory is named after the uid, 0 in here, and
    would collide with root's)."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "isthmus-run", "/run"], check=True)
    for d in ("/run/netns", "/run/isthmus", "/run/isthmus-tmp"):
        os.makedirs(d, exist_ok=True)
    os.environ["TMPDIR"] = "/run/isthmus-tmp"
