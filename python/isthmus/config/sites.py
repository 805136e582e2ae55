"""The site file (docs/sites.md): how `isthmus run --sites` reaches real Slurm clusters and
the hosts that forward between them. The topology stays the platform file's (its
clusters, by host patterns, and its zippers); the site file says, per cluster, how to run
a command on its login node, what to ask its Slurm for, and, per forwarder, where it
listens and how each site's ranks reach it. This is the one parser of site files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config.batch import PARTITION_CHARS
from isthmus.config.reader import Reader

SITE_KEYS = (
    "login", "partition", "nodes", "ranks", "isthmus", "workdir", "platform", "environment",
)  # fmt: skip


@dataclass(frozen=True)
class RealSite:
    name: str  # a cluster of the platform
    login: tuple[str, ...]  # a command that runs its last argument, one command line, there
    partition: str
    nodes: int
    ranks: int
    isthmus: str  # the isthmus command at the site
    workdir: str  # where the site's part runs (the application's paths are relative to it)
    platform: str  # the platform file's path at the site
    environment: tuple[tuple[str, str], ...]  # for the site's ranks (its network device...)


@dataclass(frozen=True)
class RealForwarder:
    name: str
    login: tuple[str, ...]
    listen: tuple[str, ...]  # ADDRESS:PORT, one per network it serves
    reach: tuple[tuple[str, str], ...]  # (site, ADDRESS:PORT as that site's ranks reach it)
    isthmus: str


@dataclass(frozen=True)
class SiteFile:
    path: Path
    sites: tuple[RealSite, ...]
    forwarders: tuple[RealForwarder, ...]


def _command(r: Reader, t: dict[str, Any], key: str) -> tuple[str, ...]:
    value = t.get("login")
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise r.fail(
            f"{key}.login",
            "expected a command as a list of strings, which runs its last argument (one "
            'command line) on the login node: ["ssh", "login.example.org"]',
        )
    return tuple(value)


def _address(r: Reader, key: str, spec: Any) -> str:
    host, _, port = str(spec).rpartition(":")
    if not isinstance(spec, str) or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise r.fail(key, f"expected ADDRESS:PORT, for example 10.1.0.5:7300, got {spec!r}")
    return spec


def parse(raw: dict[str, Any], path: Path, clusters: list[str], here: str) -> SiteFile:
    """Check a site file against the platform's clusters; `here`: this isthmus's path (a
    site's default)."""
    r = Reader(str(path))
    top = r.table(raw, "", ("sites", "forwarders"))
    raw_sites = r.table(top.get("sites", {}), "sites", clusters)
    if len(raw_sites) < 2:
        raise r.fail(
            "sites", f"expected a [sites.NAME] table for two or more of: {', '.join(clusters)}"
        )
    sites = []
    for name, value in raw_sites.items():
        key = f"sites.{name}"
        t = r.table(
            value,
            key,
            (
                "login",
                "partition",
                "nodes",
                "ranks",
                "isthmus",
                "workdir",
                "platform",
                "environment",
            ),
        )
        partition = t.get("partition", "batch")
        if not isinstance(partition, str) or not partition or set(partition) - PARTITION_CHARS:
            raise r.fail(f"{key}.partition", f"expected a partition name, got {partition!r}")
        nodes = r.integer(t, key, "nodes", 1, 1, 1 << 16)
        env = t.get("environment", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise r.fail(f"{key}.environment", 'expected a table of NAME = "value" strings')
        strings = {}
        for k in ("isthmus", "workdir", "platform"):
            v = t.get(k, "")
            if not isinstance(v, str):
                raise r.fail(f"{key}.{k}", f"expected a path, got {v!r}")
            strings[k] = v
        sites.append(
            RealSite(
                name,
                _command(r, t, key),
                partition,
                nodes,
                r.integer(t, key, "ranks", nodes, 1, 1 << 22),
                strings["isthmus"] or here,
                strings["workdir"] or str(Path.cwd()),
                strings["platform"],
                tuple(sorted(env.items())),
            )
        )
    names = [s.name for s in sites]
    forwarders = []
    raw_forwarders = top.get("forwarders", {})
    known = raw_forwarders.keys() if isinstance(raw_forwarders, dict) else ()
    for fname, value in r.table(raw_forwarders, "forwarders", known).items():
        key = f"forwarders.{fname}"
        t = r.table(value, key, ("login", "listen", "reach", "isthmus"))
        listen = t.get("listen")
        if not isinstance(listen, list) or not listen:
            raise r.fail(f"{key}.listen", "expected a list of ADDRESS:PORT, one per network")
        reach = r.table(t.get("reach", {}), f"{key}.reach", names)
        missing = [n for n in names if n not in reach]
        if missing:
            raise r.fail(f"{key}.reach", f"no address for site {missing[0]}: expected every site's")
        isthmus = t.get("isthmus", here)
        if not isinstance(isthmus, str) or not isthmus:
            raise r.fail(f"{key}.isthmus", f"expected a path, got {isthmus!r}")
        forwarders.append(
            RealForwarder(
                fname,
                _command(r, t, key),
                tuple(_address(r, f"{key}.listen", a) for a in listen),
                tuple((n, _address(r, f"{key}.reach.{n}", reach[n])) for n in names),
                isthmus,
            )
        )
    if not forwarders:
        raise r.fail(
            "forwarders",
            "expected at least one [forwarders.NAME]: the sites reach each other through them",
        )
    return SiteFile(path, tuple(sites), tuple(forwarders))


def load(path: Path, clusters: list[str], here: str) -> SiteFile:
    return parse(records.read_toml(path, "site file"), path, clusters, here)
