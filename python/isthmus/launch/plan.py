"""The launch plan of an emulated run, built once and then carried out (run.py): the sites,
each one native MPI job with its world ranks, the hosts they run on, and the launcher
that starts it, and the forwarders that join several sites into one MPI_COMM_WORLD.

A site is the set of clusters one launcher starts. The MPI's own launcher (mpirun,
mpiexec) reaches every cluster joined to its own by wide-area links, so those clusters
are one site; a cluster with launcher = "slurm" is a site by itself (its Slurm allocates
its own nodes only: docs/slurm.md). A plan of one site is a direct run. Several sites
reach each other through forwarders (docs/zipper.md): on the zipper hosts when zippers
join them, else (clusters joined by wide-area links, each with its own batch system) on
the first Slurm cluster's login host, which every rank reaches over the emulated WAN.
"""

from __future__ import annotations

from dataclasses import dataclass

from isthmus.config.platform import Platform
from isthmus.emulate.plan import CONTROL_HOST, make_plan
from isthmus.launch import zipper

LAUNCHER_KINDS = ("mpi", "slurm")  # the MPI's own launcher, or the cluster's Slurm


@dataclass(frozen=True)
class Site:
    clusters: tuple[str, ...]
    ranks: tuple[int, ...]  # its world ranks, in the order of its job's ranks
    hosts: tuple[str, ...]  # the host of each of those ranks
    launcher: str  # one of LAUNCHER_KINDS
    login: str  # the host whose namespace its launcher runs in
    partition: str = ""  # a Slurm site's

    @property
    def name(self) -> str:
        return "+".join(self.clusters)


@dataclass(frozen=True)
class LaunchPlan:
    sites: tuple[Site, ...]
    zip: zipper.ZipPlan | None  # how the sites are joined; None for a direct run

    @property
    def slurm_sites(self) -> list[Site]:
        return [s for s in self.sites if s.launcher == "slurm"]


def site_groups(platform: Platform) -> list[list[str]]:
    """The clusters of each site, in file order: the groups wide-area links join, with
    every Slurm cluster split off as a site of its own."""
    groups: list[list[str]] = []
    for g in platform.sites():
        own = [c for c in g if platform.cluster(c).batch.launcher == "mpi"]
        groups += [own] if own else []
        groups += [[c] for c in g if platform.cluster(c).batch.launcher == "slurm"]
    order = [c.name for c in platform.clusters]
    return sorted(groups, key=lambda g: order.index(g[0]))


def _joins_all(clusters: tuple[str, ...], groups: list[list[str]]) -> bool:
    """True when a zipper joining these clusters reaches every site."""
    return all(set(g) & set(clusters) for g in groups)


def make(
    platform: Platform, nranks: int, emulated: bool = True, slurm_job: str | None = None
) -> LaunchPlan:
    """The plan of a run of nranks. On real machines (not emulated): one site, started
    where isthmus runs (with --site, one site's job of several) by the MPI's own
    launcher, or by srun in the Slurm job slurm_job (--slurm-job: docs/sites.md)."""
    if not emulated:
        names = tuple(c.name for c in platform.clusters)
        kind = "slurm" if slurm_job else "mpi"
        return LaunchPlan((Site(names, tuple(range(nranks)), (), kind, ""),), None)
    groups = site_groups(platform)
    slots = platform.rank_slots()
    if len(groups) == 1:
        c = platform.cluster(groups[0][0])
        slurm = c.batch.launcher == "slurm"
        return LaunchPlan(
            (
                Site(
                    tuple(groups[0]),
                    tuple(range(nranks)),
                    tuple(s.host for s in slots[:nranks]),
                    c.batch.launcher,
                    platform.login_host(c) if slurm else CONTROL_HOST,
                    c.batch.partition if slurm else "",
                ),
            ),
            None,
        )
    addresses = {h.name: h.address for h in make_plan(platform).hosts}
    hosts = None
    joined = any(_joins_all(z.clusters, groups) for z in platform.zippers)
    if platform.slurm_clusters() and not joined:
        first = platform.slurm_clusters()[0]  # sites of routed clusters: Slurm's split them
        hosts = [platform.login_host(first)]
    zplan = zipper.plan(platform, addresses, groups, hosts)
    sites = []
    for i, g in enumerate(groups):
        ranks = tuple(zplan.site_ranks(i))
        c = platform.cluster(g[0])
        slurm = c.batch.launcher == "slurm"
        sites.append(
            Site(
                tuple(g),
                ranks,
                tuple(slots[r].host for r in ranks),
                c.batch.launcher,
                # the MPI's own launcher runs where the site's first rank does
                platform.login_host(c) if slurm else slots[ranks[0]].host,
                c.batch.partition if slurm else "",
            )
        )
    return LaunchPlan(tuple(sites), zplan)
