"""A cluster's batch system in the platform file (docs/slurm.md): `launcher` and the
[clusters.NAME.slurm] table. Part of the platform parser (platform.py calls it), kept here
so that one file holds what a launcher key may say."""

from __future__ import annotations

from typing import Any

from isthmus.config.reader import Reader
from isthmus.config.topology import LAUNCHERS, BatchSystem, Cluster, Zipper

BATCH_KEYS = ("launcher", "slurm")  # a cluster's keys read here
PARTITION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def parse_batch(r: Reader, t: dict[str, Any], key: str) -> BatchSystem:
    """clusters.NAME.launcher and clusters.NAME.slurm = { login, partition }."""
    launcher = r.choice(t, key, "launcher", "mpi", LAUNCHERS)
    if "slurm" not in t:
        return BatchSystem(launcher)
    if launcher != "slurm":
        raise r.fail(f"{key}.slurm", 'only with launcher = "slurm"')
    s = r.table(t["slurm"], f"{key}.slurm", ("login", "partition"))
    login = s.get("login")
    if login is not None and (not isinstance(login, str) or not login):
        raise r.fail(f"{key}.slurm.login", f"expected a host name, got {login!r}")
    partition = s.get("partition", "batch")
    if not isinstance(partition, str) or not partition or set(partition) - PARTITION_CHARS:
        raise r.fail(
            f"{key}.slurm.partition",
            f"expected a partition name of letters, digits, '-' and '_', got {partition!r}",
        )
    return BatchSystem(launcher, login, partition)


def check_logins(r: Reader, clusters: list[Cluster], zippers: list[Zipper]) -> None:
    """A Slurm cluster's login host is one of its hosts or a host of a zipper joining it
    (the login node of a cluster reachable only through it); a host of a Slurm cluster
    is a Slurm node, so no zipper host of a Slurm cluster runs ranks."""
    for c in clusters:
        if c.batch.launcher != "slurm":
            continue
        key = f"clusters.{c.name}.slurm.login"
        if c.hosts == 0:
            raise r.fail(
                f"clusters.{c.name}.launcher",
                '"slurm" on the emulated platform only (a real site: docs/sites.md)',
            )
        own = [f"{c.name}{i}" for i in range(c.hosts)]
        joining = [z for z in zippers if c.name in z.clusters]
        gates = [f"{z.name}{i}" for z in joining for i in range(z.hosts)]
        if c.batch.login is not None and c.batch.login not in own + gates:
            raise r.fail(
                key,
                f"{c.batch.login!r} is no host of the cluster or of a zipper joining it "
                f"(expected one of: {', '.join((own + gates)[:8])})",
            )
        for z in joining:
            if z.ranks_per_host:
                raise r.fail(
                    f"zippers.{z.name}.ranks_per_host",
                    f"ranks on a zipper host of the Slurm cluster {c.name!r} are not "
                    "supported: expected 0",
                )
