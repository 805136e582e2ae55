"""What a run is (its request), how it ended (its outcome), and what the profile keeps of
both: the "run" table `isthmus run` adds to the profile the layer wrote."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from isthmus import __version__, records
from isthmus.config import paths
from isthmus.config.platform import Platform
from isthmus.emulate.dilation import Dilation
from isthmus.launch.status import RankFailure


@dataclass
class RunRequest:
    platform: Platform
    app: list[str]
    nranks: int | None = None
    mpi: str | None = None
    overrides: tuple[str, ...] = ()
    profile: Path | None = None
    timeout: float | None = None
    coallocate_timeout: float | None = None  # Slurm sites: every job running within (docs/slurm.md)
    net: str | None = None  # an emulated network that is already up
    emulate: bool = True
    stdout: Path | None = None  # where the application's standard output goes (default: ours)
    environment: tuple[tuple[str, str], ...] = ()  # more variables for every rank (they win)
    # one site's job of a zipped platform on real machines (docs/zipper.md)
    site: str | None = None
    site_ranks: tuple[tuple[str, int], ...] = ()
    forwarders: tuple[str, ...] = ()
    slurm_job: str | None = None  # start the ranks with srun in this Slurm job (docs/sites.md)


@dataclass
class Outcome:
    """How a run ended, and what the profile keeps of it."""

    rc: int
    stopped: str | None  # why isthmus stopped it (launch_all's values), or None
    failure: RankFailure | None  # the rank that failed first, when one did
    cmd: list[str]  # the (first) launcher's command
    wall: float  # seconds, from the first submission or launch to the end
    forwarded: list[dict[str, Any]]  # what each forwarder carried
    batch: list[dict[str, Any]]  # each Slurm site's job
    started_unix: float = 0.0  # when the first submission or launch began (time.time())
    wide_area: tuple[dict[str, Any], ...] = ()  # what each emulated WAN link carried


def describe(
    req: RunRequest, mpi_name: str, nranks: int, o: Outcome, dilation: Dilation
) -> dict[str, Any]:
    """How the run was made, for the profile's "run" table."""
    emulated = req.platform.emulated
    slots = req.platform.rank_slots() if emulated else []
    return {
        "isthmus_version": __version__,
        "git_revision": paths.git_revision(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "platform": {
            "name": req.platform.name,
            "path": str(req.platform.path),
            "overrides": list(req.overrides),
            # what discovery (layer.clusters = "auto") is checked against
            "rank_clusters": req.platform.rank_clusters()[:nranks] if emulated else None,
            # where every rank ran (isthmus profile advise starts from it)
            "placement": {"hosts": [s.host for s in slots], "clusters": [s.cluster for s in slots]}
            if emulated
            else None,
        },
        "mpi": mpi_name,
        "nranks": nranks,
        "cores": os.cpu_count() or 1,  # ranks per core: what the report's model gap rests on
        "app": req.app,
        "launcher": o.cmd,
        "exit_code": o.rc,
        "wall_seconds": round(o.wall, 6),
        # the profile's times are virtual: real time / dilation
        "dilation": dilation.factor,
        "dilation_why": dilation.why,
        "started_unix": round(o.started_unix, 6),
        "batch": o.batch,  # each Slurm site's job and how long it queued (docs/slurm.md)
        # the bytes and packets each emulated wide-area link carried in the run (the
        # router's counters: every byte of the job, its MPI's own traffic too)
        "wide_area": list(o.wide_area),
    }


def annotate_profile(path: Path, run_info: dict[str, Any], forwarded: list[dict[str, Any]]) -> None:
    """Add how the run was made, and what the forwarders carried, to the profile the layer
    wrote (atomically)."""
    data = records.read_json(path, "profile", "profile")
    _startup(run_info, data.get("ranks", []))
    data["run"] = run_info
    if forwarded:
        data["forwarders"] = forwarded
    records.write_json(path, data, "profile")


def _startup(run_info: dict[str, Any], ranks: list[dict[str, Any]]) -> None:
    """How long the job took to start, from the ranks' MPI_Init returns (in the run's time:
    only undilated runs, whose clocks are the machine's): from the first submission or
    launch to the last rank's (init_seconds), and per Slurm site from its submission to its
    last rank's (submit_to_init_seconds)."""
    init = {r["rank"]: r["init_unix"] for r in ranks if "init_unix" in r}
    if run_info.get("dilation", 1.0) != 1.0 or not init:
        return
    run_info["init_seconds"] = round(max(init.values()) - run_info["started_unix"], 6)
    for b in run_info.get("batch", []):
        mine = [init[r] for r in b["ranks"] if r in init]
        if mine:
            b["submit_to_init_seconds"] = round(max(mine) - b["submitted_unix"], 6)
