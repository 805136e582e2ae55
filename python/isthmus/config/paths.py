"""Where the native parts are: the CMake build tree of this checkout (or $ISTHMUS_BUILD)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from isthmus.errors import UserError

ROOT = Path(__file__).resolve().parents[3]


def build_dir() -> Path:
    return Path(os.environ.get("ISTHMUS_BUILD", ROOT / "build"))


def _built(path: Path) -> Path:
    if not path.exists():
        raise UserError(f"{path} is missing: run 'make build' in {ROOT}")
    return path


def layer_library(mpi: str) -> Path:
    """libisthmus built for one MPI implementation."""
    return _built(build_dir() / "lib" / mpi / "libisthmus.so")


def exec_wrapper() -> Path:
    return _built(build_dir() / "bin" / "isthmus-exec")


def forwarder() -> Path:
    return _built(build_dir() / "bin" / "isthmus-forward")


def router() -> Path:
    return _built(build_dir() / "bin" / "isthmus-router")


def probe() -> Path:
    return _built(build_dir() / "bin" / "isthmus-probe")


def program(mpi: str, name: str) -> Path:
    """A benchmark program built for one MPI implementation."""
    return _built(build_dir() / "bin" / mpi / name)


def bench_dir(mpi: str) -> Path:
    """Where the benchmark programs built for one MPI implementation are."""
    return build_dir() / "bin" / mpi


def isthmus_command() -> Path:
    """The isthmus command of this checkout (sweeps run each point through it)."""
    return ROOT / "bin" / "isthmus"


def git_revision() -> str:
    """The checkout's revision, with '-dirty' when it has uncommitted changes."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              timeout=10)  # fmt: skip
        return done.stdout.strip()

    try:
        rev, dirty = git("rev-parse", "--short=12", "HEAD"), git("status", "--porcelain", "-uno")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (rev or "unknown") + ("-dirty" if dirty else "")
