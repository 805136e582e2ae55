"""Zipper forwarding, the plan of a run (docs/zipper.md): which clusters one launcher
reaches (a site), which world ranks each site's job holds, and where the forwarders are.

A site is a set of clusters joined by wide-area links: one native MPI job runs there,
started by its own launcher inside the site's network. Sites reach each other only
through zipper hosts, where `isthmus-forward` runs; the layer in every rank joins the
sites' jobs into one MPI_COMM_WORLD (src/world/zip). A platform whose clusters are all joined
by links is one site and runs as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from isthmus.config.platform import Platform
from isthmus.errors import UserError

FORWARDER_PORT = 7300  # src/forward/wire.h IST_ZIP_DEFAULT_PORT


def sites(platform: Platform) -> list[list[str]]:
    """The clusters of each site, in file order (Platform.sites)."""
    return platform.sites()


def zipped(platform: Platform) -> bool:
    """True when the clusters form more than one site: the run needs forwarders."""
    return len(sites(platform)) > 1


@dataclass(frozen=True)
class Forwarder:
    host: str  # the zipper host it runs on, "gate0"
    address: str  # where ranks reach it, "198.18.3.1:7300"


@dataclass(frozen=True)
class ZipPlan:
    site_clusters: list[list[str]]
    site_of_rank: list[int]  # world rank -> site
    forwarders: list[Forwarder]
    # world rank -> the forwarder on its own host (a rank on a zipper host), or -1
    hosted_by: list[int] | None = None

    def site_ranks(self, site: int) -> list[int]:
        """The world ranks of a site's job, in the order of its own ranks."""
        return [r for r, s in enumerate(self.site_of_rank) if s == site]

    def environment(self, site: int) -> dict[str, str]:
        """What the layer in a rank of this site's job reads (src/world/zip/zip.h)."""
        env = {
            "ISTHMUS_ZIP_SITES": ",".join(map(str, self.site_of_rank)),
            "ISTHMUS_ZIP_SITE": str(site),
            "ISTHMUS_ZIP_FORWARDERS": ",".join(f.address for f in self.forwarders),
        }
        if self.hosted_by and any(f >= 0 for f in self.hosted_by):
            env["ISTHMUS_ZIP_AT"] = ",".join(map(str, self.hosted_by))
        return env


def plan(
    platform: Platform,
    addresses: dict[str, str],
    groups: list[list[str]] | None = None,
    hosts: list[str] | None = None,
) -> ZipPlan:
    """The sites, their ranks and the forwarders of a zipped platform; addresses: the
    emulated address of every forwarder's host. groups: the clusters of each site's job
    (default: sites()); hosts: where forwarders run (default: every zipper host, which
    must join every site). A one-line error for what is not carried yet."""
    groups = sites(platform) if groups is None else groups
    where = {name: i for i, g in enumerate(groups) for name in g}
    if hosts is None:
        for z in platform.zippers:
            joined = {where[c] for c in z.clusters}
            if len(joined) != len(groups):
                raise UserError(
                    f"{platform.path}: zippers.{z.name} joins {', '.join(z.clusters)}, not "
                    f"every site ({'; '.join(', '.join(g) for g in groups)}): forwarding over "
                    "more than one zipper hop is not supported yet"
                )
        hosts = [f"{z.name}{i}" for z in platform.zippers for i in range(z.hosts)]
        on_zippers = True
    else:
        on_zippers = False
    if platform.io is not None:
        raise UserError(f"{platform.path}: [io] with zipper forwarding is not supported yet")
    forwarders = [Forwarder(h, f"{addresses[h]}:{FORWARDER_PORT}") for h in hosts]
    index = {f.host: i for i, f in enumerate(forwarders)}
    slots = platform.rank_slots()
    return ZipPlan(
        groups,
        [where[s.cluster] for s in slots],
        forwarders,
        # a rank on a zipper host reaches the other sites through the forwarder there
        [index.get(s.host, -1) for s in slots] if on_zippers else None,
    )


def check_address(spec: str, option: str) -> None:
    """A forwarder's ADDRESS:PORT as an option gives it, or a one-line error."""
    host, _, port = spec.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"{option} {spec}: expected ADDRESS:PORT, for example 10.1.0.5:7300")


def real_site_plan(
    platform: Platform, site: str, site_ranks: dict[str, int], forwarders: list[str]
) -> tuple[ZipPlan, int]:
    """The plan of one site's job on real machines (docs/zipper.md, "On real sites"): the
    site named by one of its clusters, every site's rank count (by one of its clusters'
    names), and the forwarders' ADDRESS:PORT as this site reaches them. World ranks are
    the sites' ranks in blocks in file order, or taking turns with layer.placement =
    "round-robin"."""
    groups = sites(platform)

    def group_of(name: str, what: str) -> int:
        for i, g in enumerate(groups):
            if name in g or name == "+".join(g):
                return i
        raise UserError(
            f"{what} {name!r}: expected a cluster of the platform "
            f"({', '.join(c.name for c in platform.clusters)})"
        )

    counts = [0] * len(groups)
    for name, n in site_ranks.items():
        if n < 1:
            raise UserError(f"--site-ranks {name}={n}: expected a positive number of ranks")
        counts[group_of(name, "--site-ranks")] = n
    missing = ["+".join(g) for g, n in zip(groups, counts, strict=True) if n == 0]
    if missing:
        raise UserError(
            f"--site-ranks: no count for {', '.join(missing)}: expected NAME=N for every site"
        )
    for f in forwarders:
        check_address(f, "--forwarders")
    if not forwarders:
        raise UserError("--forwarders: expected one ADDRESS:PORT or more")
    if platform.layer.placement == "block":
        site_of_rank = [i for i, n in enumerate(counts) for _ in range(n)]
    else:
        site_of_rank = [i for k in range(max(counts)) for i, n in enumerate(counts) if k < n]
    plan_ = ZipPlan(groups, site_of_rank, [Forwarder(f, f) for f in forwarders])
    return plan_, group_of(site, "--site")
