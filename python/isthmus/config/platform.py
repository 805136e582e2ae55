"""The platform file: clusters, LANs, WAN links, zipper hosts, I/O servers, layer settings.

This is the one parser of platform files (docs/platform.md is the reference). Everything
else reads a Platform from load(); nothing else parses the TOML. Errors name the file,
the key, the bad value and what is expected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config import collectives as coll_registry
from isthmus.config.batch import BATCH_KEYS, check_logins, parse_batch
from isthmus.config.overrides import apply_override
from isthmus.config.reader import Reader, parse_link
from isthmus.config.topology import (
    CLUSTER_SOURCES,
    COLLECTIVE_NAMES,
    COLLECTIVE_SELECTIONS,
    COLLECTIVES_MODES,
    JITTER_DISTRIBUTIONS,
    LINK_KEYS,
    MAX_DILATION,
    MTU_RANGE,
    PLACEMENTS,
    WAIT_MODES,
    Cluster,
    CollectiveSettings,
    EmulationSettings,
    IoServers,
    LayerSettings,
    LinkModel,
    Platform,
    TcpSettings,
    Zipper,
)
from isthmus.config.units import UnitError, parse_size

# The model of a platform is topology.py's; callers take it from here with the parser.
__all__ = [
    "CLUSTER_SOURCES",
    "COLLECTIVES_MODES",
    "COLLECTIVE_NAMES",
    "COLLECTIVE_SELECTIONS",
    "JITTER_DISTRIBUTIONS",
    "LINK_KEYS",
    "MTU_RANGE",
    "PLACEMENTS",
    "WAIT_MODES",
    "Cluster",
    "CollectiveSettings",
    "EmulationSettings",
    "IoServers",
    "LayerSettings",
    "LinkModel",
    "Platform",
    "TcpSettings",
    "Zipper",
    "apply_override",
    "load",
    "parse",
    "parse_link",
]


# Beyond these a platform is a typo: the emulator has addresses for about 130 000 hosts.
MAX_HOSTS = 65536
MAX_RANKS_PER_HOST = 4096


TOP_KEYS = (
    "name", "description", "clusters", "wan", "zippers", "io", "layer", "collectives", "tcp",
    "emulation",
)  # fmt: skip


def _name_ok(name: str) -> bool:
    return bool(name) and len(name) <= 32 and name.replace("-", "").replace("_", "").isalnum()


def parse(raw: dict[str, Any], source: str, path: Path) -> Platform:
    """Check a platform given as parsed TOML; raise UserError naming the first problem."""
    r = Reader(source)
    top = r.table(raw, "", TOP_KEYS)
    name = top.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise r.fail("name", f"expected a non-empty string, got {name!r}")

    raw_clusters = r.table(
        top.get("clusters", {}),
        "clusters",
        top.get("clusters", {}).keys() if isinstance(top.get("clusters"), dict) else (),
    )
    layer_raw = top.get("layer", {})
    finds_clusters = isinstance(layer_raw, dict) and layer_raw.get("clusters") == "auto"
    if not raw_clusters and not finds_clusters:  # a real site's layer may find them all
        raise r.fail(
            "clusters",
            "expected at least one [clusters.NAME] table "
            '(or, on a real site, layer.clusters = "auto")',
        )
    clusters = []
    lowered: dict[str, str] = {}
    for cname, value in raw_clusters.items():
        key = f"clusters.{cname}"
        if cname.lower() in lowered:  # host names and namespaces ignore case
            raise r.fail(key, f"the name of clusters.{lowered[cname.lower()]} but for case")
        lowered[cname.lower()] = cname
        if not _name_ok(cname):
            raise r.fail(
                key, "a cluster name is letters, digits, '-' and '_', at most 32 characters"
            )
        t = r.table(
            value,
            key,
            ("hosts", "ranks_per_host", "lan", "host_patterns", "uplink", "cores", *BATCH_KEYS),
        )
        patterns = r.string_list(t, key, "host_patterns")
        hosts = r.integer(t, key, "hosts", 0 if patterns else 1, 0 if patterns else 1, MAX_HOSTS)
        lan_raw = t.get("lan", {})
        lan = r.link(lan_raw, f"{key}.lan", LinkModel(), extra=("emulate",))
        emulate = r.boolean(lan_raw, f"{key}.lan", "emulate", True)
        uplink = r.optional_link(t, key, "uplink")
        clusters.append(
            Cluster(
                cname,
                hosts,
                r.integer(t, key, "ranks_per_host", 1, 1, MAX_RANKS_PER_HOST),
                lan,
                emulate,
                patterns,
                uplink,
                r.integer(t, key, "cores", 1, 1, 4096),
                parse_batch(r, t, key),
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
        unknown = [c for c in joined if c not in names]
        if len(joined) < 2 or unknown:
            what = f"{unknown[0]!r} is no cluster; " if unknown else ""
            raise r.fail(f"{key}.clusters", f"{what}expected two or more of: {', '.join(names)}")
        zlink = r.optional_link(t, key, "link")
        zippers.append(
            Zipper(
                zname,
                joined,
                r.integer(t, key, "hosts", 1, 1, MAX_HOSTS),
                r.integer(
                    t, key, "ranks_per_host", 0, 0, MAX_RANKS_PER_HOST
                ),  # the hosts forward; ranks: issue 20
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

    check_logins(r, clusters, zippers)
    io = None
    if "io" in top:
        io_keys = ("servers", "cluster", "directory", "stripe", "mpiio", "two_phase", "strategy")
        t = r.table(top["io"], "io", io_keys)
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
            r.boolean(t, "io", "mpiio", False),
            r.choice(t, "io", "two_phase", "auto", ("auto", "on", "off")),
            r.choice(t, "io", "strategy", "", ("", "first", "random", "hash", "window")),
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

    lt = r.table(
        top.get("layer", {}), "layer", ("collectives", "wait", "profile", "placement", "clusters")
    )
    profile = r.boolean(lt, "layer", "profile", False)
    layer = LayerSettings(
        collectives=r.choice(lt, "layer", "collectives", "native", COLLECTIVES_MODES),
        wait=r.choice(lt, "layer", "wait", "auto", WAIT_MODES),
        placement=r.choice(lt, "layer", "placement", "block", PLACEMENTS),
        clusters=r.choice(lt, "layer", "clusters", "platform", CLUSTER_SOURCES),
        profile=profile,
    )
    if layer.clusters == "auto" and zippers:
        # Discovery and the P-LogP measurement reach only the site's own ranks.
        raise r.fail(
            "layer.clusters",
            '"auto" cannot discover clusters across zipper hosts: expected "platform"',
        )
    description = top.get("description", "")
    if not isinstance(description, str):
        raise r.fail("description", f"expected a string, got {description!r}")
    colls = _collective_settings(r, top.get("collectives", {}), path)
    tcp = _tcp_settings(r, top.get("tcp", {}))
    emulation = _emulation_settings(r, top.get("emulation", {}))
    return Platform(
        name,
        path,
        description,
        tuple(clusters),
        wan,
        tuple(zippers),
        io,
        layer,
        colls,
        tcp,
        emulation,
    )


AUTO_DILATION = re.compile(r"auto(\*(\d+(\.\d*)?))?")


def _emulation_settings(r: Reader, value: Any) -> EmulationSettings:
    """emulation.dilation: K >= 1, "auto", or "auto*M" (M times auto: the convergence
    experiments' 2 x auto)."""
    t = r.table(value, "emulation", ("dilation",))
    k = t.get("dilation", 1.0)
    if isinstance(k, str) and (m := AUTO_DILATION.fullmatch(k)) and float(m.group(2) or 1) >= 1:
        return EmulationSettings(k)
    if isinstance(k, bool) or not isinstance(k, int | float) or not 1 <= k <= MAX_DILATION:
        raise r.fail(
            "emulation.dilation",
            f"expected a number from 1 to {MAX_DILATION:g}, 'auto' or 'auto*M', got {k!r}",
        )
    return EmulationSettings(float(k))


def _tcp_settings(r: Reader, value: Any) -> TcpSettings:
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


def _collective_settings(r: Reader, value: Any, path: Path) -> CollectiveSettings:
    t = r.table(
        value,
        "collectives",
        (
            "disable",
            "algorithm",
            "segment",
            "log",
            "params",
            "select",
            "tuning",
            "adapt",
            "adapt_every",
        ),
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
        adapt=r.boolean(t, "collectives", "adapt", False),
        adapt_every=r.integer(t, "collectives", "adapt_every", 8, 1, 1000),
    )


def _segments(r: Reader, value: Any, reg: coll_registry.Registry) -> tuple[tuple[str, int], ...]:
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
    raw = records.read_toml(path, "platform file")
    overrides = list(overrides)
    for setting in overrides:
        apply_override(raw, setting)
    shown = ", ".join(s.encode("unicode_escape").decode() for s in overrides)  # one line
    source = str(path) + (f" (with --set {shown})" if overrides else "")
    return parse(raw, source, path)
