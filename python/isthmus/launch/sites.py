"""`isthmus run --sites FILE`: one MPI job across real Slurm clusters (docs/sites.md).

From the machine the user works on, every step goes through the login commands the site
file names (ssh, typically): one allocation per site (coallocation.py, the code the
emulated Slurm clusters use, all or none), the forwarders, then each site's part as
`isthmus run --site NAME --slurm-job J` on its login node, which starts the site's ranks
with that site's srun in that job (the same srun command as an emulated Slurm site).
The layer joins the parts into one MPI_COMM_WORLD through the forwarders
(docs/zipper.md). Ctrl-C, a failure or the end cancel every site's job.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from isthmus.config.platform import Platform
from isthmus.config.sites import RealForwarder, RealSite, SiteFile
from isthmus.launch import coallocation
from isthmus.launch.processes import Process, launch_all


@dataclass(frozen=True)
class RemoteCommand:
    """Runs a command on a site's login node: the site's login command, given the
    command as one shell command line (what ssh takes)."""

    login: tuple[str, ...]

    def __call__(self, argv: list[str]) -> list[str]:
        return [*self.login, shlex.join(argv)]


@dataclass(frozen=True)
class SitesRequest:
    platform: Platform
    sites: SiteFile
    app: list[str]
    mpi: str | None = None
    overrides: tuple[str, ...] = ()
    profile: Path | None = None
    timeout: float | None = None  # each site's part: isthmus run --timeout
    coallocate_timeout: float = 120.0


def _site_part(req: SitesRequest, site: RealSite, job: str, first: bool) -> list[str]:
    """The command line of a site's part, as its login node runs it."""
    counts = ",".join(f"{s.name}={s.ranks}" for s in req.sites.sites)
    reach = ",".join(dict(f.reach)[site.name] for f in req.sites.forwarders)
    argv = [
        site.isthmus, "run", "-p", site.platform or str(req.platform.path), "--no-emulation",
        "--site", site.name, "--site-ranks", counts, "--forwarders", reach, "--slurm-job", job,
    ]  # fmt: skip
    argv += ["--mpi", req.mpi] if req.mpi else []
    argv += ["--timeout", f"{req.timeout:g}s"] if req.timeout else []
    argv += [x for o in req.overrides for x in ("--set", o)]
    if req.profile is not None and first:  # world rank 0's site writes it
        argv += ["--profile", str(req.profile)]
    env = [f"{k}={v}" for k, v in site.environment]
    line = f"cd {shlex.quote(site.workdir)} && exec " + shlex.join(
        ["env", *env, *argv, "--", *req.app]
    )
    return [*site.login, line]


def _forwarder(f: RealForwarder, nranks: int) -> list[str]:
    argv = [f.isthmus, "forward", "--ranks", str(nranks), "--name", f.name]
    for spec in f.listen:
        argv += ["--listen", spec]
    return [*f.login, shlex.join(argv)]


def allocations(req: SitesRequest) -> list[coallocation.Allocation]:
    return [
        coallocation.Allocation(
            s.name,
            RemoteCommand(s.login),
            [
                f"--job-name={coallocation.job_name()}",
                f"--partition={s.partition}",
                f"--nodes={s.nodes}",
                f"--ntasks={s.ranks}",
            ],
        )
        for s in req.sites.sites
    ]


def run_sites(req: SitesRequest) -> int:
    """Allocate every site, start the forwarders and every site's part, wait for all."""
    nranks = sum(s.ranks for s in req.sites.sites)
    order = [c.name for c in req.platform.clusters]
    sites = sorted(req.sites.sites, key=lambda s: order.index(s.name))
    progress = coallocation.Progress()
    with coallocation.coallocated(allocations(req), req.coallocate_timeout, progress) as jobs:
        progress.end()
        job = {a.site: a.job for a in jobs}
        forwarders = [
            Process(f"the forwarder {f.name}", _forwarder(f, nranks), dict(os.environ))
            for f in req.sites.forwarders
        ]
        launchers = [
            Process(
                f"the job of site {s.name}",
                _site_part(req, s, job[s.name], i == 0),
                dict(os.environ),
            )
            for i, s in enumerate(sites)
        ]
        rc, stopped = launch_all(launchers, forwarders, None, None, None)
    if stopped is not None:
        print(f"isthmus: {stopped}; the other sites' jobs were stopped", file=sys.stderr)
    return rc
