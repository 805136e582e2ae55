"""One run of the series program (src/bench/series.c) on a network of its own that
changes while it runs: runner `live`'s step, and tests/python/test_adaptation.py's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import zlib
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.errors import UserError
from isthmus.experiment.runners import dilate_args


def run_series(
    platform: str,
    sets: list[str],
    way_sets: list[str],
    mpi: str,
    plan: dict[int, list[str]],
    args: list[str],
    work: Path,
    key: str,
    timeout: float,
) -> dict[str, Any]:
    """One run of the series program on a network of its own (`sets` bring it up and go
    to the run too, `way_sets` only to the run), `isthmus net set` at each iteration of
    `plan`; its status, last line of standard error when it failed, the iterations the
    network changed at, its standard output and its profile (test_adaptation uses it too)."""
    name = f"lv{os.getpid() % 1000}{zlib.crc32(key.encode()) % 1000}"
    program = paths.build_dir() / "bin" / mpi / "series"
    if not program.exists():
        raise UserError(f"{program} is missing: run 'make build'")
    profile, go = work / f"{key}.profile.json", work / f"{key}.go"
    if plan:
        args = [*args, "--pause-at", ",".join(map(str, plan)), "--go-file", str(go)]
    isthmus = str(paths.isthmus_command())
    set_args = [x for s in sets for x in ("--set", s)]
    up = subprocess.run(
        [isthmus, "net", "up", "-p", platform, "--name", name, *dilate_args(), *set_args],
        capture_output=True,
        text=True,
    )
    if up.returncode != 0:
        raise UserError(f"{key}: net up failed: {up.stderr.strip()[-300:]}")
    cmd = [
        isthmus,
        "run",
        *dilate_args(),
        "-p",
        platform,
        "--net",
        name,
        *set_args,
        *(x for s in way_sets for x in ("--set", s)),
        "--mpi",
        mpi,
        "--profile",
        str(profile),
        "--timeout",
        f"{timeout:g}s",
        "--",
        str(program),
        *args,
    ]
    # stdout to a file: read only after stderr ends, a pipe would fill (a run prints
    # about 100 KiB) and hold the launcher in its write
    out_file = work / f"{key}.out"
    with out_file.open("w") as out_w:
        child = subprocess.Popen(
            cmd, stdout=out_w, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
    changed_at: list[int] = []
    tail: list[str] = []
    try:
        assert child.stderr is not None
        for line in child.stderr:
            tail = [*tail[-20:], line.rstrip()]
            if line.startswith("series: paused at "):  # the program waits for go.IT
                it = int(line.split()[-1])
                subprocess.run(
                    [isthmus, "net", "set", "--name", name, "wan:*", *plan[it]],
                    capture_output=True,
                    check=True,
                )
                Path(f"{go}.{it}").touch()
                changed_at.append(it)
        child.wait()
    except BaseException:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(60)
        raise
    finally:
        subprocess.run([isthmus, "net", "down", "--name", name], capture_output=True)
    return {
        "status": child.returncode,
        "last": "" if child.returncode == 0 else (tail or [""])[-1],
        "stderr": "\n".join(tail),
        "changed_at": changed_at,
        "out": out_file.read_text(),
        "profile": json.loads(profile.read_text()) if profile.exists() else {},
    }
