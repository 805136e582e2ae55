"""The platform file: clusters, LANs, WAN links, zipper hosts, I/O servers, layer settings.

This is the one parser of platform files (docs/platform.md is the reference). Everything
else reads a Platform from load(); nothing else parses the TOML. Errors name the file,
the key, the bad value and what is expected.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import collectives as coll_registry
from .errors import UserError
from .units import UnitError, parse_duration, parse_rate, parse_size

JITTER_DISTRIBUTIONS = ("uniform", "normal")
COLLECTIVES_MODES = ("native", "isthmus")
COLLECTIVE_SELECTIONS = ("model", "always")
WAIT_MODES = ("auto", "spin", "sleep")
PLACEMENTS = ("block", "round-robin")
LINK_KEYS = (
    "latency", "bandwidth", "jitter", "jitter_distribution", "loss", "loss_burst", "queue", "mtu",
)  # fmt: skip
MTU_RANGE = (1280, 65535)  # what the emulated devices take (isthmus net up --mtu)


@dataclass(frozen=True)
class LinkModel:
    """One direction of a link. bandwidth None means no rate limit."""

    latency: float = 0.0  # one-way, seconds
    bandwidth: float | None = None  # bytes per second
    jitter: float = 0.0  # seconds
    jitter_distribution: str = "uniform"
    loss: float = 0.0  # probability that a packet is lost
    loss_burst: float = 1.0  # mean length of a loss burst (1: independent losses)
    queue: int = 1 << 20  # drop-tail queue, bytes
    # Largest packet on the link, bytes; None: the emulated devices' MTU. Hosts send
    # packets no larger than the smallest MTU on their route (net.py).
    mtu: int | None = None
    # A packet goes on to the next link when its serialization starts, not when it ends:
    # a host's own port (net.py), which limits its sending rate without a second
    # store-and-forward delay. Not a platform key.
    cut_through: bool = False


@dataclass(frozen=True)
class Cluster:
    name: str
    hosts: int  # emulated hosts (0 on a real site, where patterns place ranks)
    ranks_per_host: int
    lan: LinkModel
    lan_emulated: bool
    host_patterns: tuple[str, ...]
    uplink: LinkModel | None

    @property
    def ranks(self) -> int:
        return self.hosts * self.ranks_per_host


@dataclass(frozen=True)
class Zipper:
    name: str
    clusters: tuple[str, ...]
    hosts: int
    ranks_per_host: int
    link: LinkModel | None  # the forwarding path between the zipper's two sides


@dataclass(frozen=True)
class IoServers:
    servers: int
    cluster: str | None
    directory: str
    stripe: int


@dataclass(frozen=True)
class LayerSettings:
    collectives: str = "native"
    wait: str = "auto"
    profile: bool = False
    placement: str = "block"  # how world ranks map onto clusters


# The WAN-aware collectives by their selector names (src/coll/registry.toml).
COLLECTIVE_NAMES = coll_registry.names()


@dataclass(frozen=True)
class CollectiveSettings:
    """The [collectives] table: the selector of the WAN-aware collectives (docs/collectives.md)."""

    disable: tuple[str, ...] = ()
    algorithm: tuple[tuple[str, str], ...] = ()  # (collective, algorithm) forced
    # forced wide-area segment sizes in bytes: ("", bytes) for every collective with one,
    # then (collective, bytes) for one collective
    segment: tuple[tuple[str, int], ...] = ()
    log: bool = False
    params: Path | None = None  # a P-LogP parameter file; default: derived from the platform
    # "model": ours only where predicted faster than the MPI's own; "always": wherever it applies
    select: str = "model"
    tuning: Path | None = None  # measured choices (isthmus coll tune); they win over the model


@dataclass(frozen=True)
class TcpSettings:
    """The [tcp] table: the emulated hosts' TCP (per-namespace sysctls, docs/net.md). None:
    the machine's own setting."""

    congestion_control: str | None = None
    slow_start_after_idle: bool | None = None


@dataclass(frozen=True)
class Platform:
    name: str
    path: Path
    description: str
    clusters: tuple[Cluster, ...]
    wan: dict[tuple[str, str], LinkModel]  # ordered (from, to) pairs with a direct link
    zippers: tuple[Zipper, ...] = ()
    io: IoServers | None = None
    layer: LayerSettings = field(default_factory=LayerSettings)
    collectives: CollectiveSettings = field(default_factory=CollectiveSettings)
    tcp: TcpSettings = field(default_factory=TcpSettings)

    @property
    def total_ranks(self) -> int:
        return sum(c.ranks for c in self.clusters) + sum(
            z.hosts * z.ranks_per_host for z in self.zippers
        )

    @property
    def emulated(self) -> bool:
        """True when every cluster gives its hosts (not host-name patterns)."""
        return all(c.hosts > 0 for c in self.clusters)

    def cluster(self, name: str) -> Cluster:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(name)

    def route(self, src: str, dst: str) -> list[LinkModel] | None:
        """The links a packet crosses from a host of cluster src to a host of dst, as isthmus
        net routes it: src's uplink, the wide-area link and dst's uplink, then the port into
        the host (none when dst's LAN is not emulated); None when no wide-area link joins
        them (only zipper hosts do)."""
        dst_cluster = self.cluster(dst)
        # a real site's LAN (host patterns) is what the model has of it
        into = dst_cluster.lan if dst_cluster.lan_emulated or dst_cluster.hosts == 0 else None
        links: list[LinkModel | None] = [into]
        if src != dst:
            wan = self.wan.get((src, dst))
            if wan is None:
                return None
            links = [self.cluster(src).uplink, wan, dst_cluster.uplink, into]
        return [lk for lk in links if lk is not None]

    def forwarded_route(self, src: str, dst: str) -> list[LinkModel] | None:
        """The links a message crosses from a host of src to one of dst through the first
        zipper host joining them (docs/zipper.md): into the zipper host, then into the
        destination host; None when no zipper joins them."""
        for z in self.zippers:
            if src in z.clusters and dst in z.clusters:
                dst_cluster = self.cluster(dst)
                into = dst_cluster.lan if dst_cluster.lan_emulated else None
                return [lk for lk in (z.link, into) if lk is not None]
        return None

    def rank_clusters(self) -> list[str]:
        """The cluster of every world rank of the clusters (zipper ranks come after):
        in blocks in file order, or with layer.placement = "round-robin" one rank of each
        cluster in turn (a cluster that has no ranks left is skipped)."""
        if self.layer.placement == "block":
            return [c.name for c in self.clusters for _ in range(c.ranks)]
        out = []
        for i in range(max((c.ranks for c in self.clusters), default=0)):
            out += [c.name for c in self.clusters if i < c.ranks]
        return out

    def io_server_ranks(self, nranks: int) -> list[int]:
        """The world ranks of pio's I/O servers in a job of nranks (docs/pio.md): the first
        io.servers ranks of io.cluster, or else the job's last io.servers ranks."""
        if self.io is None:
            return []
        if self.io.cluster is not None and self.emulated:
            ranks = [r for r, c in enumerate(self.rank_clusters()) if c == self.io.cluster]
            return ranks[: self.io.servers]
        if self.io.servers >= nranks:
            raise UserError(
                f"{self.path}: io.servers: {self.io.servers} I/O servers in a job of {nranks} "
                "ranks leave no client: expected fewer servers than ranks"
            )
        return list(range(nranks - self.io.servers, nranks))

    def rank_blocks(self) -> list[tuple[str, int]]:
        """rank_clusters as runs of consecutive ranks: (cluster, count), in rank order."""
        runs: list[tuple[str, int]] = []
        for name in self.rank_clusters():
            if runs and runs[-1][0] == name:
                runs[-1] = (name, runs[-1][1] + 1)
            else:
                runs.append((name, 1))
        return runs


# ---------------------------------------------------------------------------------------
# Reading and checking


class _Reader:
    """Walks the raw TOML with the path of each key, so every error can name it."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, message: str) -> UserError:
        return UserError(f"{self.source}: {key}: {message}")

    def table(self, value: Any, key: str, allowed: Iterable[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table, got {value!r}")
        allowed = tuple(allowed)
        for k in value:
            if k not in allowed:
                raise self.fail(
                    f"{key}.{k}" if key else k,
                    f"unknown key (expected one of: {', '.join(allowed)})",
                )
        return value

    def unit(
        self, table: dict[str, Any], key: str, name: str, parse: Callable[[Any], Any], default: Any
    ) -> Any:
        if name not in table:
            return default
        try:
            return parse(table[name])
        except UnitError as e:
            raise self.fail(f"{key}.{name}", str(e)) from None

    def integer(
        self, table: dict[str, Any], key: str, name: str, default: int, minimum: int
    ) -> int:
        value = table.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(f"{key}.{name}", f"expected a whole number >= {minimum}, got {value!r}")
        return value

    def number(
        self, table: dict[str, Any], key: str, name: str, default: float, lo: float, hi: float
    ) -> float:
        value = table.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            raise self.fail(
                f"{key}.{name}", f"expected a number from {lo:g} to {hi:g}, got {value!r}"
            )
        return float(value)

    def choice(
        self, table: dict[str, Any], key: str, name: str, default: str, choices: tuple[str, ...]
    ) -> str:
        value = table.get(name, default)
        if value not in choices:
            raise self.fail(f"{key}.{name}", f"expected one of {', '.join(choices)}, got {value!r}")
        return str(value)

    def boolean(self, table: dict[str, Any], key: str, name: str, default: bool) -> bool:
        value = table.get(name, default)
        if not isinstance(value, bool):
            raise self.fail(f"{key}.{name}", f"expected true or false, got {value!r}")
        return value

    def optional_link(self, table: dict[str, Any], key: str, name: str) -> LinkModel | None:
        return self.link(table[name], f"{key}.{name}", LinkModel()) if name in table else None

    def string_list(self, table: dict[str, Any], key: str, name: str) -> tuple[str, ...]:
        value = table.get(name, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(f"{key}.{name}", f"expected a list of names, got {value!r}")
        return tuple(value)

    def link(self, value: Any, key: str, base: LinkModel, extra: Iterable[str] = ()) -> LinkModel:
        t = self.table(value, key, (*LINK_KEYS, *extra))
        bandwidth = base.bandwidth
        if "bandwidth" in t:
            bw = t["bandwidth"]
            bandwidth = (
                None if bw in ("unlimited", 0) else self.unit(t, key, "bandwidth", parse_rate, None)
            )
            if bandwidth is not None and bandwidth <= 0:
                raise self.fail(f"{key}.bandwidth", f"expected a positive rate, got {bw!r}")
        return LinkModel(
            latency=self.unit(t, key, "latency", parse_duration, base.latency),
            bandwidth=bandwidth,
            jitter=self.unit(t, key, "jitter", parse_duration, base.jitter),
            jitter_distribution=self.choice(
                t, key, "jitter_distribution", base.jitter_distribution, JITTER_DISTRIBUTIONS
            ),
            loss=self.number(t, key, "loss", base.loss, 0.0, 1.0),
            loss_burst=self.number(t, key, "loss_burst", base.loss_burst, 1.0, 1e9),
            queue=self.unit(t, key, "queue", parse_size, base.queue),
            mtu=self.mtu(t, key, base.mtu),
        )

    def mtu(self, t: dict[str, Any], key: str, default: int | None) -> int | None:
        if "mtu" not in t:
            return default
        value: int = self.unit(t, key, "mtu", parse_size, 0)
        if not MTU_RANGE[0] <= value <= MTU_RANGE[1]:
            raise self.fail(
                f"{key}.mtu", f"expected {MTU_RANGE[0]} to {MTU_RANGE[1]} bytes, got {t['mtu']!r}"
            )
        return value


def parse_link(values: dict[str, Any], source: str) -> LinkModel:
    """Link settings given outside a platform file (such as `isthmus net set`), with the
    platform's keys, units and checks; keys not given keep their defaults."""
    return _Reader(source).link(values, "link", LinkModel())


def _name_ok(name: str) -> bool:
    return bool(name) and len(name) <= 32 and name.replace("-", "").replace("_", "").isalnum()


def parse(raw: dict[str, Any], source: str, path: Path) -> Platform:
    """Check a platform given as parsed TOML; raise UserError naming the first problem."""
    r = _Reader(source)
    top = r.table(
        raw,
        "",
        ("name", "description", "clusters", "wan", "zippers", "io", "layer", "collectives", "tcp"),
    )
    name = top.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise r.fail("name", f"expected a non-empty string, got {name!r}")

    raw_clusters = r.table(
        top.get("clusters", {}),
        "clusters",
        top.get("clusters", {}).keys() if isinstance(top.get("clusters"), dict) else (),
    )
    if not raw_clusters:
        raise r.fail("clusters", "expected at least one [clusters.NAME] table")
    clusters = []
    for cname, value in raw_clusters.items():
        key = f"clusters.{cname}"
        if not _name_ok(cname):
            raise r.fail(
                key, "a cluster name is letters, digits, '-' and '_', at most 32 characters"
            )
        t = r.table(value, key, ("hosts", "ranks_per_host", "lan", "host_patterns", "uplink"))
        patterns = r.string_list(t, key, "host_patterns")
        hosts = r.integer(t, key, "hosts", 0 if patterns else 1, 0 if patterns else 1)
        lan_raw = t.get("lan", {})
        lan = r.link(lan_raw, f"{key}.lan", LinkModel(), extra=("emulate",))
        emulate = r.boolean(lan_raw, f"{key}.lan", "emulate", True)
        uplink = r.optional_link(t, key, "uplink")
        clusters.append(
            Cluster(
                cname,
                hosts,
                r.integer(t, key, "ranks_per_host", 1, 1),
                lan,
                emulate,
                patterns,
                uplink,
            )
        )
    names = [c.name for c in clusters]

    wan_raw = r.table(top.get("wan", {}), "wan", (*LINK_KEYS, "link"))
    has_default = any(k in wan_raw for k in LINK_KEYS)
    default = r.link({k: v for k, v in wan_raw.items() if k != "link"}, "wan", LinkModel())
    wan: dict[tuple[str, str], LinkModel] = {}
    if has_default:
        wan = {(a, b): default for a in names for b in names if a != b}
    links = wan_raw.get("link", [])
    if not isinstance(links, list):
        raise r.fail("wan.link", "expected an array of tables: [[wan.link]]")
    for i, link in enumerate(links):
        key = f"wan.link[{i}]"
        t = r.table(link, key, (*LINK_KEYS, "between", "from", "to"))
        if "between" in t:
            pair = r.string_list(t, key, "between")
            if len(pair) != 2 or "from" in t or "to" in t:
                raise r.fail(f"{key}.between", "expected two cluster names (and no from/to)")
            directions = [(pair[0], pair[1]), (pair[1], pair[0])]
        elif "from" in t and "to" in t:
            directions = [(str(t["from"]), str(t["to"]))]
        else:
            raise r.fail(key, "expected 'between = [A, B]' or 'from = A' and 'to = B'")
        for a, b in directions:
            for end in (a, b):
                if end not in names:
                    raise r.fail(key, f"unknown cluster {end!r} (clusters: {', '.join(names)})")
            if a == b:
                raise r.fail(key, f"a WAN link joins two different clusters, got {a!r} twice")
        model = r.link({k: v for k, v in t.items() if k in LINK_KEYS}, key, default)
        for pair_ in directions:
            wan[pair_] = model

    zippers = []
    raw_zippers = top.get("zippers", {})
    if not isinstance(raw_zippers, dict):
        raise r.fail("zippers", "expected [zippers.NAME] tables")
    for zname, value in raw_zippers.items():
        key = f"zippers.{zname}"
        if not _name_ok(zname) or zname in names:
            raise r.fail(key, "expected a name of letters, digits, '-', '_' that no cluster has")
        t = r.table(value, key, ("clusters", "hosts", "ranks_per_host", "link"))
        joined = r.string_list(t, key, "clusters")
        if len(joined) < 2 or any(c not in names for c in joined):
            raise r.fail(f"{key}.clusters", f"expected two or more of: {', '.join(names)}")
        zlink = r.optional_link(t, key, "link")
        zippers.append(
            Zipper(
                zname,
                joined,
                r.integer(t, key, "hosts", 1, 1),
                r.integer(t, key, "ranks_per_host", 0, 0),  # the hosts forward; ranks: issue 20
                zlink,
            )
        )

    # Every pair of clusters must be joined: directly, or through a zipper host.
    for a in names:
        for b in names:
            if (
                a < b
                and (a, b) not in wan
                and (b, a) not in wan
                and not any(a in z.clusters and b in z.clusters for z in zippers)
            ):
                raise r.fail(
                    "wan",
                    f"clusters {a!r} and {b!r} are not joined: give [wan] defaults, "
                    "a [[wan.link]] between them, or a zipper host",
                )

    io = None
    if "io" in top:
        t = r.table(top["io"], "io", ("servers", "cluster", "directory", "stripe"))
        cluster = t.get("cluster")
        if cluster is not None and cluster not in names:
            raise r.fail(
                "io.cluster", f"unknown cluster {cluster!r} (clusters: {', '.join(names)})"
            )
        directory = t.get("directory", "/tmp/isthmus-pio")
        if not isinstance(directory, str) or not directory:
            raise r.fail("io.directory", f"expected a directory path, got {directory!r}")
        io = IoServers(
            r.integer(t, "io", "servers", 1, 1),
            cluster,
            directory,
            r.unit(t, "io", "stripe", parse_size, 64 * 1024),
        )
        if io.stripe < 1 or io.stripe > 1 << 30:
            raise r.fail("io.stripe", f"{io.stripe} bytes: expected 1 byte to 1GiB")
        if cluster is not None:
            home = next(c for c in clusters if c.name == cluster)
            if home.hosts > 0 and io.servers > home.ranks:
                raise r.fail(
                    "io.servers",
                    f"{io.servers} servers, but cluster {cluster!r} has {home.ranks} ranks: "
                    "expected at most that many",
                )

    lt = r.table(top.get("layer", {}), "layer", ("collectives", "wait", "profile", "placement"))
    profile = r.boolean(lt, "layer", "profile", False)
    layer = LayerSettings(
        collectives=r.choice(lt, "layer", "collectives", "native", COLLECTIVES_MODES),
        wait=r.choice(lt, "layer", "wait", "auto", WAIT_MODES),
        placement=r.choice(lt, "layer", "placement", "block", PLACEMENTS),
        profile=profile,
    )
    description = top.get("description", "")
    if not isinstance(description, str):
        raise r.fail("description", f"expected a string, got {description!r}")
    colls = _collective_settings(r, top.get("collectives", {}), path)
    tcp = _tcp_settings(r, top.get("tcp", {}))
    return Platform(
        name, path, description, tuple(clusters), wan, tuple(zippers), io, layer, colls, tcp
    )


def _tcp_settings(r: _Reader, value: Any) -> TcpSettings:
    t = r.table(value, "tcp", ("congestion_control", "slow_start_after_idle"))
    cc = t.get("congestion_control")
    # a kernel module's name; whether this kernel has it and allows it is net.up's question
    if cc is not None and not (isinstance(cc, str) and cc.isidentifier() and len(cc) <= 16):
        raise r.fail(
            "tcp.congestion_control", f"expected an algorithm's name such as reno, got {cc!r}"
        )
    idle = (
        r.boolean(t, "tcp", "slow_start_after_idle", True) if "slow_start_after_idle" in t else None
    )
    return TcpSettings(cc, idle)


def _collective_settings(r: _Reader, value: Any, path: Path) -> CollectiveSettings:
    t = r.table(
        value,
        "collectives",
        ("disable", "algorithm", "segment", "log", "params", "select", "tuning"),
    )
    disable = r.string_list(t, "collectives", "disable")
    for d in disable:
        if d not in COLLECTIVE_NAMES:
            raise r.fail(
                "collectives.disable",
                f"unknown collective {d!r} (expected one of {', '.join(COLLECTIVE_NAMES)})",
            )
    reg = coll_registry.registry()
    algo = r.table(t.get("algorithm", {}), "collectives.algorithm", COLLECTIVE_NAMES)
    for k, v in algo.items():
        if not isinstance(v, str):
            raise r.fail(f"collectives.algorithm.{k}", f"expected an algorithm name, got {v!r}")
        why = reg.algorithm_problem(k, v)
        if why:
            raise r.fail(f"collectives.algorithm.{k}", why)
    segment = _segments(r, t.get("segment"), reg)
    params, tuning = t.get("params"), t.get("tuning")
    for key, name in (("params", params), ("tuning", tuning)):
        if name is not None and (not isinstance(name, str) or not name):
            raise r.fail(f"collectives.{key}", f"expected a file name, got {name!r}")
    return CollectiveSettings(
        disable=disable,
        algorithm=tuple(sorted(algo.items())),
        segment=segment,
        log=r.boolean(t, "collectives", "log", False),
        params=(path.parent / params) if params else None,
        select=r.choice(t, "collectives", "select", "model", COLLECTIVE_SELECTIONS),
        tuning=(path.parent / tuning) if tuning else None,
    )


def _segments(r: _Reader, value: Any, reg: coll_registry.Registry) -> tuple[tuple[str, int], ...]:
    """collectives.segment: one size for every collective with a segment, or a table of
    sizes by collective."""
    if value is None:
        return ()
    items = value.items() if isinstance(value, dict) else [("", value)]
    out = []
    for name, size in items:
        key = f"collectives.segment.{name}" if name else "collectives.segment"
        why = reg.setting_problem(name, "segment") if name else None
        if why:
            raise r.fail(key, why)
        try:
            nbytes = parse_size(size)
        except UnitError as e:
            raise r.fail(key, str(e)) from None
        if nbytes <= 0:
            raise r.fail(key, f"expected a positive size such as '16KiB', got {size!r}")
        out.append((name, nbytes))
    return tuple(out)


def load(path: str | Path, overrides: Iterable[str] = ()) -> Platform:
    """Read, override (KEY=VALUE strings, as given to --set) and check a platform file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such platform file") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML: {e}") from None
    overrides = list(overrides)
    for setting in overrides:
        apply_override(raw, setting)
    source = str(path) + (" (with --set " + ", ".join(overrides) + ")" if overrides else "")
    return parse(raw, source, path)


def _parse_value(text: str) -> Any:
    """A --set value: a TOML value when it is one (2, 0.1, true, ["a","b"]), else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(raw: dict[str, Any], setting: str) -> None:
    """Apply KEY=VALUE to the raw platform. wan.X sets X on the defaults and every link."""
    key, sep, text = setting.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UserError(f"--set {setting!r}: expected KEY=VALUE, such as wan.latency=2ms")
    value = _parse_value(text.strip())
    parts = key.split(".")
    if parts[0] == "wan" and len(parts) == 2 and parts[1] in LINK_KEYS:
        wan = raw.setdefault("wan", {})
        wan[parts[1]] = value
        for link in wan.get("link", []):
            if isinstance(link, dict):
                link[parts[1]] = value
        return
    node: Any = raw
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise UserError(
                    f"--set {key}: {'.'.join(parts[: i + 1])} is not an index of the list"
                )
            node = node[int(part)]
        else:
            node = node.setdefault(part, {})
        if not isinstance(node, dict | list):
            raise UserError(f"--set {key}: {'.'.join(parts[: i + 1])} is a value, not a table")
    if isinstance(node, list):
        raise UserError(f"--set {key}: cannot replace a list element; set one of its keys")
    node[parts[-1]] = value
