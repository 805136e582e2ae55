"""`isthmus platform export --simgrid`: the platform as a SimGrid platform (XML, version 4.1)
and a host file, so that a run can be simulated with SMPI (smpicc, smpirun) and compared
with the emulated one.

The export mirrors the emulated network link for link: one SimGrid host per emulated host,
one SimGrid link per emulated link (each carries one direction, as in the router: the LAN
port into a host, each direction of a wide-area link, up- and downlinks), and a full
routing table with exactly the routes `isthmus net` installs. Loss, jitter and queue size
have no SimGrid equivalent and are left out (the export says so in a comment).
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

from isthmus.config.platform import Platform
from isthmus.emulate.plan import CONTROL_HOST, make_plan
from isthmus.errors import UserError

# SimGrid needs a CPU speed; communication-bound comparisons do not depend on it.
HOST_SPEED = "1Gf"
UNLIMITED_BPS = "100Gbps"  # a link without a rate limit in the platform


def _link_id(name: str) -> str:
    """The link's name in SimGrid ("wan:east->west" becomes "wan:east_to_west")."""
    return quoteattr(name.replace("->", "_to_"))


def _bandwidth(bytes_per_second: float | None) -> str:
    return f"{bytes_per_second:.6g}Bps" if bytes_per_second else UNLIMITED_BPS


def export(platform: Platform) -> str:
    plan = make_plan(platform)
    hosts = [h for h in plan.hosts if h.name != CONTROL_HOST]
    dropped = [
        lk.name
        for lk in plan.links
        if lk.model.loss or lk.model.jitter or lk.model.queue != (1 << 20)
    ]
    out = [
        "<?xml version='1.0'?>",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        # (no double hyphen: XML comments may not hold one)
        f"<!-- Made by isthmus from {platform.path.name}: platform {platform.name}, the "
        "emulated network's hosts, links and routes. -->",
    ]
    if dropped:
        out.append(
            "<!-- Not represented in SimGrid: loss, jitter and queue sizes "
            f"(set on {', '.join(dropped)}). -->"
        )
    out += ['<platform version="4.1">', '  <zone id="isthmus" routing="Full">']
    for h in hosts:
        out.append(f"    <host id={quoteattr(h.name)} speed={quoteattr(HOST_SPEED)}/>")
    for lk in plan.links:
        bw = quoteattr(_bandwidth(lk.model.bandwidth))
        out.append(
            f"    <link id={_link_id(lk.name)} bandwidth={bw}"
            f' latency="{lk.model.latency * 1e6:.6g}us"/>'
        )
    index = {h.name: i for i, h in enumerate(plan.hosts)}
    for a in hosts:
        for b in hosts:
            route = plan.routes.get((index[a.name], index[b.name]))
            if a is b or route is None:
                continue
            out.append(
                f'    <route src={quoteattr(a.name)} dst={quoteattr(b.name)} symmetrical="NO">'
            )
            if not route:  # no emulated link on the way: SimGrid still needs one
                out.append('      <link_ctn id="loopback-none"/>')
            out += [f"      <link_ctn id={_link_id(plan.links[i].name)}/>" for i in route]
            out.append("    </route>")
    if any(not plan.routes.get((index[a.name], index[b.name]), [1]) for a in hosts for b in hosts):
        out.insert(
            out.index('  <zone id="isthmus" routing="Full">') + 1,
            f'    <link id="loopback-none" bandwidth="{UNLIMITED_BPS}" latency="0us"/>',
        )
    out += ["  </zone>", "</platform>", ""]
    return "\n".join(out)


def hostfile(platform: Platform) -> str:
    """One line per world rank, in rank order (smpirun -hostfile)."""
    lines = []
    for c in platform.clusters:
        for h in range(c.hosts):
            lines += [f"{c.name}{h}"] * c.ranks_per_host
    for z in platform.zippers:
        for h in range(z.hosts):
            lines += [f"{z.name}{h}"] * z.ranks_per_host
    if not lines:
        raise UserError(f"{platform.path}: no emulated hosts to export (a real site's platform)")
    return "\n".join(lines) + "\n"


def smpirun_command(xml: Path, hosts: Path, ranks: int, argv: list[str]) -> list[str]:
    """SMPI's launcher on an exported platform: the network model that takes the links'
    latency and bandwidth as configured (CM02, no factors fitted to a real cluster), and
    no simulated computation (the benchmark's own time is not the network's)."""
    return [
        "smpirun", "-platform", str(xml), "-hostfile", str(hosts), "-np", str(ranks),
        "--cfg=network/model:CM02", "--cfg=smpi/simulate-computation:no",
        "--cfg=smpi/display-timing:no", *argv,
    ]  # fmt: skip
