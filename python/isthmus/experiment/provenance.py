"""What produced a results file: the header every `results/**/*.json` starts with.

The header names the code (a commit of this repository's history and whether the tree
was clean), the machine (cores, CPU model, kernel), the MPI libraries, the platform
files (by content hash), the experiment file, the exact command and the repetitions.
`isthmus experiment render --check` refuses a results file whose header is missing,
whose revision is not in the history, or which was made from a dirty tree.
"""

from __future__ import annotations

import hashlib
import os
import platform as host
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.records import RESULT_SCHEMA

# Files under these folders are what experiments write: they do not make the code dirty.
OUTPUT_DIRS = ("results/",)


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(paths.ROOT), *args], capture_output=True, text=True, timeout=30
    )


def revision() -> str:
    """The full commit hash of the checkout's HEAD."""
    done = _git("rev-parse", "HEAD")
    if done.returncode != 0:
        raise UserError(f"{paths.ROOT}: not a git checkout: a results file must name its commit")
    return done.stdout.strip()


def changed_files() -> list[str]:
    """Tracked or untracked, not ignored files that differ from HEAD, outside results/."""
    out = _git("status", "--porcelain").stdout.splitlines()
    names = [line[3:].split(" -> ")[-1] for line in out]
    return [n for n in names if not n.startswith(OUTPUT_DIRS)]


def is_ancestor(rev: str) -> bool:
    """Whether `rev` is a commit of HEAD's history (HEAD itself included)."""
    return _git("merge-base", "--is-ancestor", rev, "HEAD").returncode == 0


def file_at(rev: str, rel: str) -> str | None:
    """The text of the checkout-relative file `rel` at commit `rev`; None if not there."""
    done = _git("show", f"{rev}:{rel}")
    return done.stdout if done.returncode == 0 else None


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def relative(path: Path) -> str:
    """A path as written in headers: relative to the checkout when inside it."""
    try:
        return str(path.resolve().relative_to(paths.ROOT))
    except ValueError:
        return str(path)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return host.processor() or "unknown"


def machine() -> dict[str, Any]:
    return {
        "cores": os.cpu_count() or 0,
        "cpu": _cpu_model(),
        "kernel": host.release(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
    }


def mpi_versions(mpis: list[str]) -> dict[str, str]:
    """Each MPI library's own version line (what its mpirun/mpiexec says)."""
    from isthmus.launch import mpi as mpi_mod

    out = {}
    for name in mpis:
        impl = mpi_mod.get(name)
        try:
            done = subprocess.run(
                [impl.launcher, "--version"], capture_output=True, text=True, timeout=30
            )
            found = re.search(r"\d+\.\d+(\.\d+)?", done.stdout + done.stderr)
        except (OSError, subprocess.SubprocessError):
            found = None
        out[name] = f"{impl.title} {found[0] if found else 'unknown'}"
    return out


def header(
    experiment: str,
    experiment_file: Path,
    platforms: list[Path],
    mpis: list[str],
    command: str,
    repetitions: int,
    quick: bool,
    dirty: list[str],
    extends_file: Path | None = None,
) -> dict[str, Any]:
    head: dict[str, Any] = {
        "schema": RESULT_SCHEMA,
        "experiment": experiment,
        "revision": revision(),
        "clean": not dirty,
        "dirty_files": dirty,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "mpi": mpi_versions(mpis),
        "experiment_file": {
            "path": relative(experiment_file),
            "sha256": sha256(experiment_file),
        },
        "platforms": {relative(p): sha256(p) for p in platforms},
        "command": command,
        "repetitions": repetitions,
        "quick": quick,
    }
    if extends_file:  # the file the experiment's file builds on (experiment.py: extends)
        head["extends_file"] = {"path": relative(extends_file), "sha256": sha256(extends_file)}
    return head
