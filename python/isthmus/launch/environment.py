"""What each rank's environment says: the ranks' count, pio's servers and window, the
layer's settings and the WAN-aware collectives' (from the platform, the caller's
environment winning), and the waiting mode for the cores there are."""

from __future__ import annotations

import os
from pathlib import Path

from isthmus.config import paths
from isthmus.config.platform import Platform
from isthmus.errors import UserError
from isthmus.launch import mpi


def rank_count(platform: Platform, requested: int | None) -> int:
    if platform.emulated:
        if requested is not None and requested != platform.total_ranks:
            raise UserError(
                f"-n {requested}: the platform {platform.name} has {platform.total_ranks} ranks "
                f"({', '.join(f'{n}: {k}' for n, k in platform.rank_blocks())}); change the "
                "platform (for example --set clusters.NAME.hosts=N) or leave -n out"
            )
        return platform.total_ranks
    if requested is None:
        raise UserError(f"-n is needed: the platform {platform.name} places ranks by host name")
    if requested < 1:
        raise UserError(f"-n {requested}: expected a positive number of ranks")
    return requested


def pio_environment(platform: Platform, nranks: int) -> dict[str, str]:
    """The platform's [io] table for the pio library (src/pio/pio.h), and every
    ISTHMUS_PIO_* variable of the caller's environment (they win), for the ranks."""
    env = {}
    if platform.io is not None:
        servers = platform.io_server_ranks(nranks)
        env = {
            "ISTHMUS_PIO_SERVERS": ",".join(map(str, servers)),
            "ISTHMUS_PIO_DIR": platform.io.directory,
            "ISTHMUS_PIO_STRIPE": str(platform.io.stripe),
        }
        if platform.io.mpiio:
            env["ISTHMUS_PIO_MPIIO"] = "1"  # src/layer/mpiio.h
        env["ISTHMUS_PIO_TWO_PHASE"] = platform.io.two_phase  # src/pio/pio_two_phase.c
        if platform.io.strategy:
            env["ISTHMUS_PIO_STRATEGY"] = platform.io.strategy
        window = pio_window(platform, servers, nranks)
        if window is not None:
            env["ISTHMUS_PIO_WINDOW"] = str(window)
    env.update({k: v for k, v in os.environ.items() if k.startswith("ISTHMUS_PIO_")})
    return env


def pio_window(platform: Platform, servers: list[int], nranks: int) -> int | None:
    """window-IOS's bytes in flight (docs/pio.md): twice the bandwidth-delay product of the
    path between the first client's host and the first server's, from the platform's
    links (the round trip's latencies times the narrowest rate towards the server): a piece
    past the MPI's eager limit spends a round trip on its handshake before its data travel.
    None where the platform cannot say (ranks placed by host name, no rate limit, no
    wide-area link)."""
    if not platform.emulated or not servers:
        return None
    where = platform.rank_clusters()
    clients = [r for r in range(min(nranks, len(where))) if r not in servers]
    if not clients or servers[0] >= len(where):
        return None
    client, server = where[clients[0]], where[servers[0]]
    there, back = platform.route(client, server), platform.route(server, client)
    if there is None or back is None:
        return None
    rates = [lk.bandwidth for lk in there if lk.bandwidth]
    if not rates:
        return None
    return round(2 * min(rates) * sum(lk.latency for lk in there + back))


def layer_environment(
    platform: Platform, impl: mpi.MpiImplementation, profile: Path | None
) -> dict[str, str]:
    """The variables that isthmus-exec and libisthmus read in each rank."""
    env = {
        "ISTHMUS_PRELOAD": str(paths.layer_library(impl.name)),
        "ISTHMUS_PLATFORM_NAME": platform.name,
        "ISTHMUS_GIT_REVISION": paths.git_revision(),
    }
    if platform.layer.clusters == "auto":  # the layer measures them (src/world/discover.c)
        env["ISTHMUS_CLUSTERS"] = "auto"
    elif platform.emulated:
        env["ISTHMUS_CLUSTERS"] = ",".join(f"{n}:{k}" for n, k in platform.rank_blocks())
    patterns = [
        f"{c.name}={','.join(c.host_patterns)}" for c in platform.clusters if c.host_patterns
    ]
    if patterns and platform.layer.clusters != "auto":
        env["ISTHMUS_CLUSTER_PATTERNS"] = ";".join(patterns)
    if profile is not None:
        env["ISTHMUS_PROFILE"] = str(profile)
    return env


# The selector's variables: set in the environment of isthmus run, they win over the file.
COLLECTIVE_VARIABLES = (
    "ISTHMUS_COLL",
    "ISTHMUS_COLL_DISABLE",
    "ISTHMUS_COLL_ALGORITHM",
    "ISTHMUS_COLL_SEGMENT",
    "ISTHMUS_COLL_LOG",
    "ISTHMUS_COLL_SELECT",
    "ISTHMUS_COLL_TUNING",
    "ISTHMUS_PLOGP",
    "ISTHMUS_ADAPT",
    "ISTHMUS_ADAPT_EVERY",
)


def collective_environment(platform: Platform, workdir: Path) -> dict[str, str]:
    """The WAN-aware collectives' settings for libisthmus (src/coll/hier.h), from the
    platform's layer.collectives and [collectives], then the caller's environment. The
    model parameters are the file [collectives] params names (checked against the
    platform), or derived from the platform's links into workdir."""
    from isthmus.model import (
        plogp,  # not at the top: plogp reads benchmark files, and bench runs us
    )

    c = platform.collectives
    env = {"ISTHMUS_COLL": platform.layer.collectives}
    if c.disable:
        env["ISTHMUS_COLL_DISABLE"] = ",".join(c.disable)
    if c.algorithm:
        env["ISTHMUS_COLL_ALGORITHM"] = ",".join(f"{k}:{v}" for k, v in c.algorithm)
    if c.segment:  # every collective's first, then single ones (src/coll/settings.c)
        env["ISTHMUS_COLL_SEGMENT"] = ",".join(f"{k}:{v}" if k else str(v) for k, v in c.segment)
    if c.log:
        env["ISTHMUS_COLL_LOG"] = "1"
    if c.select != "model":
        env["ISTHMUS_COLL_SELECT"] = c.select
    if c.adapt:
        env["ISTHMUS_ADAPT"] = "1"
        env["ISTHMUS_ADAPT_EVERY"] = str(c.adapt_every)
    if c.tuning is not None:
        if not c.tuning.is_file():
            raise UserError(f"collectives.tuning: {c.tuning}: no such file (isthmus coll tune)")
        env["ISTHMUS_COLL_TUNING"] = str(c.tuning.resolve())
    if c.params is not None:
        params = plogp.read(c.params)
        plogp.check_platform(params, platform, c.params)
        env["ISTHMUS_PLOGP"] = str(c.params.resolve())
    elif platform.layer.clusters == "auto":
        env["ISTHMUS_PLOGP"] = "measure"  # the layer measures the links it found
    elif len(platform.clusters) > 1:
        derived = workdir / "plogp.txt"
        plogp.write(plogp.from_platform(platform), derived)
        env["ISTHMUS_PLOGP"] = str(derived)
    env.update({k: os.environ[k] for k in COLLECTIVE_VARIABLES if k in os.environ})
    return env


def wait_mode(
    platform: Platform, impl: mpi.MpiImplementation, nranks: int, cores: int, dilation: float = 1.0
) -> str:
    """spin or sleep: layer.wait; auto sleeps when the ranks outnumber the cores. MPICH
    busy-polls (an 8-rank Allreduce on 2 cores: 28 ms spinning, 1.4 ms sleeping); Open MPI
    yields when oversubscribed, which keeps collectives fast (0.42 against 1.02 ms) but lets
    its idle ranks starve rendezvous transfers of the others (over 60 s against 2.1 s,
    results/net/README.md): a run must finish before it can be fast.
    Dilated (docs/dilation.md) auto sleeps too: a spinning rank spends its capped share
    waiting and is then held back until the next CFS period, which delays the messages it
    should answer (an 8-rank Barrier on a LAN: 8 ms virtual spinning under MPICH, 1 ms
    sleeping; results/dilation/README.md)."""
    if platform.layer.wait != "auto":
        return platform.layer.wait
    return "sleep" if nranks > cores or dilation > 1 else "spin"
