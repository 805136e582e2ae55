"""What bench_model.py and bench_repeat.py share: their command line (which MPI, where the
results go, results/model by default) and the revision their results record."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mpi_and_output(description: str) -> tuple[str, Path]:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("out", nargs="?", type=Path, default=ROOT / "results" / "model")
    ap.add_argument("--mpi", choices=("mpich", "openmpi"), default="mpich")
    opts = ap.parse_args()
    return opts.mpi, opts.out


def revision() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
