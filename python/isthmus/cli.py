"""The isthmus command line: `isthmus platform|run|profile ...` (see `isthmus --help`)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

from rich.console import Console
from rich.table import Table

from . import __version__, atomic, net, paths, records, rootless, signals, zipper
from . import platform as platform_mod
from . import profile as profile_mod
from .errors import UserError
from .platform import Platform
from .plogp import Params
from .run import RunRequest, run
from .units import (
    UnitError,
    format_duration,
    format_rate,
    format_size,
    parse_duration,
    parse_size,
)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)


def _link_text(m: platform_mod.LinkModel) -> str:
    parts = [
        f"latency {format_duration(m.latency)}",
        f"bandwidth {format_rate(m.bandwidth) if m.bandwidth else 'unlimited'}",
    ]
    if m.jitter:
        parts.append(f"jitter {format_duration(m.jitter)} ({m.jitter_distribution})")
    if m.loss:
        parts.append(
            f"loss {m.loss:g}" + (f" (bursts of {m.loss_burst:g})" if m.loss_burst > 1 else "")
        )
    parts.append(f"queue {format_size(m.queue)}")
    if m.mtu is not None:
        parts.append(f"MTU {m.mtu} B")
    return ", ".join(parts)


def cmd_platform_check(args: argparse.Namespace) -> int:
    p = platform_mod.load(args.file, args.set)
    print(f"{args.file}: ok ({len(p.clusters)} clusters, {p.total_ranks} ranks)")
    return 0


def cmd_platform_export(args: argparse.Namespace) -> int:
    from . import simgrid

    p = platform_mod.load(args.file, args.set)
    xml, hosts = simgrid.export(p), simgrid.hostfile(p)
    if args.output:
        out = _output(args.output)
        atomic.write_text(out, xml)
        print(f"wrote {out}")
    else:
        sys.stdout.write(xml)
    if args.hostfile:
        hf = _output(args.hostfile)
        atomic.write_text(hf, hosts)
        print(f"wrote {hf}", file=sys.stderr if not args.output else sys.stdout)
    return 0


def _rank_span(ranks: list[int]) -> str:
    """0-3 for consecutive ranks, 0,2,4 otherwise."""
    if ranks and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))


def cmd_platform_show(args: argparse.Namespace) -> int:
    p = platform_mod.load(args.file, args.set)
    console = Console()
    console.print(
        f"[bold]{p.name}[/bold] ({p.path}){': ' + p.description if p.description else ''}"
    )
    clusters = Table(title="Clusters")
    for col in ("cluster", "hosts", "ranks/host", "ranks", "world ranks", "LAN", "uplink"):
        clusters.add_column(col)
    placed = p.rank_clusters()
    for c in p.clusters:
        mine = [r for r, name in enumerate(placed) if name == c.name]
        span = _rank_span(mine) if c.ranks else ", ".join(c.host_patterns)
        lan = _link_text(c.lan) if c.lan_emulated else "not emulated"
        clusters.add_row(
            c.name,
            str(c.hosts) if c.hosts else "by pattern",
            str(c.ranks_per_host),
            str(c.ranks) if c.ranks else "-n",
            span,
            lan,
            _link_text(c.uplink) if c.uplink else "-",
        )
    console.print(clusters)
    if p.wan:
        links = Table(title="Wide-area links (one direction each)")
        links.add_column("from")
        links.add_column("to")
        links.add_column("model")
        for (a, b), m in p.wan.items():
            links.add_row(a, b, _link_text(m))
        console.print(links)
    for z in p.zippers:
        console.print(
            f"zipper {z.name}: joins {', '.join(z.clusters)}; {z.hosts} host(s) x "
            f"{z.ranks_per_host} rank(s)" + (f"; {_link_text(z.link)}" if z.link else "")
        )
    if p.io:
        console.print(
            f"I/O: {p.io.servers} server(s), {p.io.cluster or 'the last ranks'}, "
            f"stripe {format_size(p.io.stripe)}, directory {p.io.directory}"
        )
    console.print(
        f"layer: collectives {p.layer.collectives}, wait {p.layer.wait}, "
        f"placement {p.layer.placement}, "
        f"profile {'on' if p.layer.profile else 'off'}"
    )
    return 0


def _timeout_option(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        timeout = parse_duration(text)
    except UnitError as e:
        raise UserError(f"--timeout: {e}") from None
    if timeout <= 0:
        raise UserError(f"--timeout {text}: expected a positive duration such as 30s or 10min")
    return timeout


def cmd_run(args: argparse.Namespace) -> int:
    app = list(args.app)
    if app and app[0] == "--":
        app = app[1:]
    timeout = _timeout_option(args.timeout)
    if args.n is not None and args.n < 1:
        raise UserError(f"-n {args.n}: expected a positive number of ranks")
    p = platform_mod.load(args.platform, args.set)
    req = RunRequest(
        platform=p,
        app=app,
        nranks=args.n,
        mpi=args.mpi,
        overrides=tuple(args.set),
        profile=Path(args.profile) if args.profile else None,
        timeout=timeout,
        net=args.net,
        emulate=not args.no_emulation,
        site=args.site,
        site_ranks=tuple(_site_ranks(args.site_ranks)),
        forwarders=tuple(f for f in (args.forwarders or "").split(",") if f),
    )
    return run(req)


def _site_ranks(text: str | None) -> list[tuple[str, int]]:
    """--site-ranks left=64,right=32"""
    out = []
    for item in (text or "").split(","):
        if not item:
            continue
        name, _, count = item.partition("=")
        if not name or not count.isdigit():
            raise UserError(f"--site-ranks {item}: expected NAME=N, for example left=64")
        out.append((name, int(count)))
    return out


def cmd_forward(args: argparse.Namespace) -> int:
    """Run a forwarder on this (dual-homed) host, in the foreground, until the job ends."""
    if args.ranks < 1:
        raise UserError(f"--ranks {args.ranks}: expected the world's number of ranks (1 or more)")
    for spec in args.listen:
        zipper.check_address(spec, "--listen")
    cmd = [str(paths.forwarder()), "--ranks", str(args.ranks), "--name", args.name]
    for spec in args.listen:
        cmd += ["--listen", spec]
    return subprocess.run(cmd).returncode


def cmd_profile_show(args: argparse.Namespace) -> int:
    profile_mod.show(profile_mod.load(args.file), Console(width=max(Console().width, 120)))
    return 0


def _output(path: str) -> Path:
    out = Path(path)
    if not out.parent.is_dir():
        raise UserError(f"-o {out}: the directory {out.parent} does not exist")
    return out


def cmd_profile_plot(args: argparse.Namespace) -> int:
    out = _output(args.output)
    profile_mod.plot(profile_mod.load(args.file), out)
    print(f"wrote {out}")
    return 0


def cmd_profile_report(args: argparse.Namespace) -> int:
    out = _output(args.output)
    profile_mod.report(profile_mod.load(args.file), out)
    print(f"wrote {out}")
    return 0


def cmd_net_up(args: argparse.Namespace) -> int:
    p = platform_mod.load(args.platform, args.set)
    st = net.up(p, args.name, args.set, mtu=args.mtu)
    print(
        f"network {st.name} is up: {len(st.hosts)} namespaces (ist-{st.name}-*), "
        f"{len(st.links)} links, router pid {st.router_pid}"
    )
    return 0


def cmd_net_down(args: argparse.Namespace) -> int:
    removed = net.down(args.name)
    print(
        f"network {args.name}: "
        + (f"removed {len(removed)} items" if removed else "nothing to remove")
    )
    return 0


def cmd_net_status(args: argparse.Namespace) -> int:
    data = net.stats(args.name)
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    console = Console(width=max(Console().width, 130))
    links = Table(title=f"Network {args.name}: links (up {data['uptime_s']:.0f} s)")
    for col in (
        "link",
        "latency",
        "rate",
        "jitter",
        "loss",
        "queue",
        "packets",
        "bytes",
        "queue drops",
        "losses",
        "backlog",
        "max backlog",
    ):
        links.add_column(col, justify="left" if col == "link" else "right")
    for lk in data["links"]:
        links.add_row(
            lk["name"],
            format_duration(lk["latency_ns"] * 1e-9),
            format_rate(lk["rate"]) if lk["rate"] else "unlimited",
            format_duration(lk["jitter_ns"] * 1e-9),
            f"{lk['loss']:g}",
            format_size(lk["queue"]),
            str(lk["packets"]),
            format_size(lk["bytes"]),
            str(lk["queue_drops"]),
            str(lk["losses"]),
            format_size(lk["backlog"]),
            format_size(lk["max_backlog"]),
        )
    console.print(links)
    hosts = Table(title="Hosts")
    for col in (
        "namespace",
        "address",
        "sent packets",
        "sent bytes",
        "received packets",
        "received bytes",
        "unroutable",
    ):
        hosts.add_column(col, justify="left" if col in ("namespace", "address") else "right")
    for h in data["hosts"]:
        hosts.add_row(
            h["netns"],
            h["address"],
            str(h["rx_packets"]),
            format_size(h["rx_bytes"]),
            str(h["tx_packets"]),
            format_size(h["tx_bytes"]),
            str(h["unroutable"]),
        )
    console.print(hosts)
    return 0


def cmd_net_set(args: argparse.Namespace) -> int:
    settings = {}
    for item in args.settings:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"net set: expected key=value, got {item!r} (e.g. latency=2ms)")
        settings[key] = value
    if not settings:
        raise UserError(
            "net set: give at least one key=value (e.g. latency=2ms bandwidth=10Mbit/s)"
        )
    changed = net.set_link(args.name, args.link, settings)
    print(f"set {' '.join(args.settings)} on {', '.join(changed)}")
    return 0


def cmd_net_selftest(args: argparse.Namespace) -> int:
    from . import net_selftest

    console = Console(stderr=True)
    result = net_selftest.measure(
        quick=args.quick, progress=lambda s: console.print(f"[dim]{s}[/dim]")
    )
    if args.json:
        records.write_json(Path(args.json), result)
    table = Table(title="isthmus net selftest: measured against targets")
    for col in ("check", "measured", "unit", "target", "result"):
        table.add_column(col, justify="right" if col == "measured" else "left")
    for c in result["checks"]:
        table.add_row(
            c["name"],
            f"{c['measured']:.4g}",
            c["unit"],
            c["target"],
            "[green]ok[/green]" if c["ok"] else "[red]MISSED[/red]",
        )
    Console().print(table)
    return 0 if result["passed"] else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench

    extra = list(args.args)
    out = _output(args.output)
    timeout = _timeout_option(args.timeout)
    p = platform_mod.load(args.platform, args.set)
    rc = bench.bench(args.name, p, args.mpi, extra, out, tuple(args.set), args.net, timeout)
    print(f"wrote {out}")
    return rc


def _choices(option: str, text: str, allowed: tuple[str, ...]) -> list[str]:
    picked = [x for x in text.split(",") if x]
    bad = [x for x in picked if x not in allowed]
    if bad or not picked:
        raise UserError(f"{option} {text}: expected a comma-separated list of {', '.join(allowed)}")
    return picked


def cmd_experiment_list(args: argparse.Namespace) -> int:
    from . import experiment

    t = Table(title="experiments (experiments/<area>/<name>.toml)")
    for col in ("name", "kind", "steps", "about", "what"):
        t.add_column(col, justify="right" if col in ("steps", "about") else "left")
    for name, kind, title, steps, minutes in experiment.listing():
        t.add_row(name, kind, str(steps), f"{minutes:g} min", title)
    Console(width=max(Console().width, 140)).print(t)
    return 0


def cmd_experiment_run(args: argparse.Namespace) -> int:
    from . import experiment

    out = Path(args.output) if args.output else None
    for name in args.names:
        experiment.run(name, args.quick, out, args.allow_dirty, args.fresh)
    return 0


def cmd_experiment_render(args: argparse.Namespace) -> int:
    from . import render

    problems = render.render(check=args.check)
    for p in problems:
        print(f"isthmus: {p}", file=sys.stderr)
    if args.check:
        print("render --check: " + (f"{len(problems)} problems" if problems else "ok"))
    return 1 if problems else 0


def cmd_pio_bench(args: argparse.Namespace) -> int:
    from . import pio_bench

    workloads = _choices("--workloads", args.workloads, pio_bench.WORKLOADS)
    strategies = _choices("--strategies", args.strategies, pio_bench.STRATEGIES)
    lo, sep, hi = args.blocks.partition(":")
    if not sep:
        raise UserError(f"--blocks {args.blocks}: expected MIN:MAX, e.g. 4KiB:8MiB")
    blocks = [_size_option("--blocks", x, 1, 1 << 30) for x in (lo, hi)]
    if blocks[0] > blocks[1]:
        raise UserError(f"--blocks {args.blocks}: expected MIN <= MAX")
    size = _size_option("--size", args.size, 1, 1 << 30)
    for option, value in (("--repeat", args.repeat), ("--steps", args.steps)):
        if value < 1:
            raise UserError(f"{option} {value}: expected a positive whole number")
    common = [
        "--blocks", f"{blocks[0]}:{blocks[1]}", "--strategies", ",".join(strategies),
        "--repeat", str(args.repeat),
    ]  # fmt: skip
    program_args = {
        "contiguous": ["--workload", "contiguous", "--size", str(size), *common],
        "btio": ["--workload", "btio", "--class", args.klass, "--steps", str(args.steps), *common],
    }
    out = Path(args.output)
    if not out.parent.is_dir():
        raise UserError(f"-o {out}: the directory {out.parent} does not exist")
    platform = platform_mod.load(args.platform, args.set)
    if "btio" in workloads and platform.io is not None:
        pio_bench.check_btio_clients(platform.total_ranks - platform.io.servers, args.klass)
    req = pio_bench.BenchRequest(
        platform=platform,
        mpi=args.mpi,
        out_dir=out,
        workloads=tuple(workloads),
        program_args=program_args,
        overrides=tuple(args.set),
        timeout=_timeout_option(args.timeout),
    )
    return pio_bench.run_bench(req)


def cmd_sweep(args: argparse.Namespace) -> int:
    from . import sweep as sweep_mod

    out = Path(args.output)
    if args.file:
        if args.platform or args.args:
            raise UserError("give either a sweep file or -p PLATFORM -- APP, not both")
        s = sweep_mod.load_file(Path(args.file))
    else:
        if not args.platform or not args.args:
            raise UserError("a sweep needs a sweep file or -p PLATFORM and an application after --")
        app = sweep_mod.App(
            name=args.name or Path(args.args[0]).name,
            argv=tuple(args.args),
            figures=tuple(sweep_mod.parse_figure(f) for f in args.figure),
        )
        s = sweep_mod.Sweep(
            platform=Path(args.platform).resolve(),
            apps=(app,),
            overrides=tuple(args.set),
            vary=tuple(sweep_mod.parse_vary(v) for v in args.vary),
            mpis=sweep_mod.parse_list(args.mpi, sweep_mod.MPIS, "--mpi"),
            colls=sweep_mod.parse_list(args.coll, platform_mod.COLLECTIVES_MODES, "--coll"),
            repeat=args.repeat,
            timeout=_timeout_option(args.timeout) or 600.0,
            baseline=not args.no_baseline,
        )
    return sweep_mod.run_sweep(s, out)


def cmd_report(args: argparse.Namespace) -> int:
    from . import report

    out_dir = Path(args.dir)
    page = _output(args.output) if args.output else out_dir / "report.html"
    report.write(out_dir, page, " ".join(["isthmus", "report", *sys.argv[2:]]))
    print(f"wrote {page}")
    return 0


def _size_option(option: str, text: str, lo: int = 0, hi: int | None = None) -> int:
    try:
        n = parse_size(text)
    except UnitError as e:
        raise UserError(f"{option}: {e}") from None
    if n < lo or (hi is not None and n > hi):
        bound = f"{format_size(lo)} to {format_size(hi)}" if hi is not None else f"at least {lo}"
        raise UserError(f"{option} {text}: expected {bound}")
    return n


def _model_inputs(args: argparse.Namespace) -> tuple[Platform, Params]:
    from . import plogp

    p = platform_mod.load(args.platform, args.set)
    if args.params:
        path = Path(args.params)
        params = plogp.read(path)
        plogp.check_platform(params, p, path)
    else:
        params = plogp.from_platform(p)
    return p, params


def _clusters(p: Platform) -> list[int]:
    ranks = [c.ranks for c in p.clusters if c.ranks > 0]
    if not ranks:
        raise UserError(f"{p.path}: no cluster gives its rank count (hosts x ranks_per_host)")
    return ranks


def cmd_model_fit(args: argparse.Namespace) -> int:
    from . import plogp

    params = plogp.fit(Path(args.bench))
    out = _output(args.output)
    plogp.write(params, out)
    for name, c in params.classes.items():
        print(f"{name}: L {c.L:.1f} us, {len(c.sizes)} sizes {c.sizes[0]}-{c.sizes[-1]} B")
    print(f"wrote {out}")
    return 0


def cmd_model_params(args: argparse.Namespace) -> int:
    from . import plogp

    _, params = _model_inputs(args)
    out = _output(args.output)
    plogp.write(params, out)
    print(f"wrote {out}")
    return 0


def cmd_model_predict(args: argparse.Namespace) -> int:
    from . import model, model_view

    if args.coll != "bcast":
        raise UserError(f"--coll {args.coll}: unknown collective; the model covers: bcast")
    p, params = _model_inputs(args)
    big_m = _size_option("-M", args.size)
    preds = model.predict_bcast(params, _clusters(p), big_m)
    Console(width=max(Console().width, 120)).print(
        model_view.table(preds, big_m, p.name, params.source)
    )
    for line in model_view.explain(preds):
        print(line)
    return 0


def cmd_model_plot(args: argparse.Namespace) -> int:
    from . import model_view

    p, params = _model_inputs(args)
    lo = _size_option("--min-size", args.min_size)
    hi = _size_option("--max-size", args.max_size)
    if not 1 <= lo <= hi:
        raise UserError(f"--min-size {lo} --max-size {hi}: expected 1 <= min <= max")
    sizes = []
    m = lo
    while m <= hi:
        sizes.append(m)
        m *= 2
    out = _output(args.output)
    title = f"MPI_Bcast on {p.name}: P-LogP prediction ({params.source})"
    model_view.plot(params, _clusters(p), sizes, title, out)
    print(f"wrote {out}")
    return 0


def cmd_coll_list(args: argparse.Namespace) -> int:
    from .config import collectives

    reg = collectives.registry()
    table = Table(title="the WAN-aware collectives (src/coll/registry.toml)", box=None)
    for col in ("collective", "algorithms (native: the MPI's own)", "settings"):
        table.add_column(col)
    for c in reg.collectives.values():
        table.add_row(c.name, ", ".join(c.algorithm_names()), ", ".join(c.settings) or "-")
    Console().print(table)
    return 0


def cmd_coll_info(args: argparse.Namespace) -> int:
    from .config import collectives

    reg = collectives.registry()
    c = reg.collectives.get(args.collective)
    if c is None:
        raise UserError(f"coll info: {reg.unknown_collective(args.collective)}")
    form = f" (a form of {c.regular}: its algorithms and settings)" if c.regular != c.name else ""
    print(f"{c.name}{form}")
    for a in c.algorithms:
        print(f"\n  algorithm {a.name}" + (f"  ({a.file})" if a.file else ""))
        print(f"    does: {a.does}")
        print(f"    when: {a.when}")
        if a.cost:
            print(f"    cost: {a.cost}")
    for name in c.settings:
        st = reg.settings[name]
        print(f"\n  setting {name} ({st.kind}, default {st.default}): {st.summary}")
        print(f'    platform: [collectives.{name}] {c.name} = "{st.default}"; '
              f"environment: ISTHMUS_COLL_{name.upper()}={c.name}:{st.default}")  # fmt: skip
    return 0


def cmd_coll_explain(args: argparse.Namespace) -> int:
    from . import coll_explain

    p, params = _model_inputs(args)
    sizes = [_size_option("SIZE", s, lo=0) for s in args.sizes]
    mpis = coll_explain.MPIS if args.mpi == "both" else (args.mpi,)
    table = Table(
        title=f"{args.collective} on {p.name} ({p.total_ranks} ranks, {p.layer.placement}): "
        f"predicted by the selector's model ({params.source})"
    )
    for col in ("MPI, waiting", "size", "candidate", "predicted", ""):
        table.add_column(col, justify="right" if col in ("size", "predicted") else "left")
    whys = []
    tuning = Path(args.tuning) if args.tuning else p.collectives.tuning
    for mpi in mpis:
        for choice in coll_explain.explain(p, params, mpi, args.collective, sizes, tuning):
            for c in choice.candidates:
                table.add_row(
                    choice.mpi,
                    format_size(choice.bytes),
                    c.name,
                    format_duration(c.predicted_us * 1e-6),
                    "chosen" if c.name == choice.chosen else "",
                )
            table.add_section()
            whys.append(f"{choice.mpi}, {format_size(choice.bytes)}: {choice.why()}")
    Console(width=max(Console().width, 100)).print(table)
    for line in whys:
        print(line)
    return 0


def cmd_coll_tune(args: argparse.Namespace) -> int:
    from . import coll_tune

    out = _output(args.output)
    rules = coll_tune.tune(
        args.platform, args.set, args.mpi, args.quick, out, _timeout_option(args.timeout)
    )
    table = Table(title=f"measured on {args.platform} with {args.mpi}: ours against the MPI's own")
    for col in ("collective", "sizes", "runs", "ours", "MPI's own"):
        table.add_column(col, justify="left" if col in ("collective", "runs") else "right")
    for r in rules:
        table.add_row(
            r.collective,
            f"{format_size(r.first)}-{format_size(r.last)}",
            "ours" if r.ours else "the MPI's own",
            format_duration(r.ours_us * 1e-6),
            format_duration(r.native_us * 1e-6),
        )
    Console(width=max(Console().width, 100)).print(table)
    print(f'wrote {out}; name it in the platform\'s [collectives] tuning = "..."')
    return 0


def build_parser() -> Parser:
    ap = Parser(
        prog="isthmus",
        description="Run MPI applications across emulated or real clusters "
        "joined by slow links, and measure what that costs.",
    )
    ap.add_argument("--version", action="version", version=f"isthmus {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=Parser)

    plat = sub.add_parser("platform", help="check or show a platform file")
    psub = plat.add_subparsers(dest="action", required=True, parser_class=Parser)
    for name, fn, text in (
        ("check", cmd_platform_check, "check a platform file"),
        ("show", cmd_platform_show, "summarize clusters, ranks and links"),
    ):
        sp = psub.add_parser(name, help=text)
        sp.add_argument("file")
        sp.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a platform setting (wan.latency=2ms sets every WAN link)",
        )
        sp.set_defaults(func=fn)
    sp = psub.add_parser("export", help="the platform for another tool (SimGrid)")
    sp.add_argument("--simgrid", action="store_true", required=True, help="SimGrid platform XML")
    sp.add_argument("file")
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    sp.add_argument("-o", "--output", metavar="XML", help="write here (default: stdout)")
    sp.add_argument("--hostfile", metavar="FILE", help="also write smpirun's host file")
    sp.set_defaults(func=cmd_platform_export)

    rp = sub.add_parser(
        "run",
        help="run an MPI application on a platform with libisthmus",
        usage="isthmus run -p PLATFORM [options] -- APP [ARGS...]",
    )
    rp.add_argument("-p", "--platform", required=True, help="platform file (TOML)")
    rp.add_argument("-n", type=int, help="number of ranks (default: the platform's)")
    rp.add_argument(
        "--mpi",
        choices=("openmpi", "mpich"),
        help="MPI implementation (default: the one the application is linked with)",
    )
    rp.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a platform setting for this run (repeatable)",
    )
    rp.add_argument("--profile", metavar="OUT.json", help="profile the run into this file")
    rp.add_argument(
        "--timeout", metavar="DURATION", help="stop the run after this long (e.g. 10min, 30s)"
    )
    rp.add_argument(
        "--net", metavar="NAME", help="use this emulated network if it is up (default: one per run)"
    )
    rp.add_argument(
        "--no-emulation",
        action="store_true",
        help="run on the machine's own transports, without the emulated network",
    )
    rp.add_argument(
        "--site",
        metavar="NAME",
        help="on real sites joined by zipper hosts: run this site's job (docs/zipper.md)",
    )
    rp.add_argument(
        "--site-ranks", metavar="NAME=N,...", help="with --site: every site's number of ranks"
    )
    rp.add_argument(
        "--forwarders",
        metavar="ADDR:PORT,...",
        help="with --site: the forwarders, as this site reaches them",
    )
    rp.add_argument("app", nargs=argparse.REMAINDER, help="the application and its arguments")
    rp.set_defaults(func=cmd_run)

    fp = sub.add_parser(
        "forward",
        help="run a zipper host's forwarder (real sites; isthmus run starts them when emulating)",
    )
    fp.add_argument(
        "--listen", action="append", required=True, metavar="ADDR:PORT",
        help="an address to accept ranks on: one per network the host joins",
    )  # fmt: skip
    fp.add_argument("--ranks", type=int, required=True, help="the world's number of ranks")
    fp.add_argument("--name", default="forwarder", help="for messages (default: forwarder)")
    fp.set_defaults(func=cmd_forward)

    ex = sub.add_parser("experiment", help="the project's measurements: list, run, render")
    xsub = ex.add_subparsers(dest="action", required=True, parser_class=Parser)
    sp = xsub.add_parser("list", help="the experiments and how long each takes")
    sp.set_defaults(func=cmd_experiment_list)
    sp = xsub.add_parser(
        "run", help="run (or resume) experiments; write results/<area>/<name>.json"
    )
    sp.add_argument("names", nargs="+", metavar="NAME", help="area/name, as 'list' shows")
    sp.add_argument("--quick", action="store_true", help="a small version, to check it runs")
    sp.add_argument("-o", "--output", metavar="DIR", help="results folder (default: results/)")
    sp.add_argument("--allow-dirty", action="store_true", help="run with uncommitted code")
    sp.add_argument("--fresh", action="store_true", help="discard the steps of an earlier run")
    sp.set_defaults(func=cmd_experiment_run)
    sp = xsub.add_parser("render", help="write the tables and plots from the results files")
    sp.add_argument("--check", action="store_true", help="change nothing; fail on any difference")
    sp.set_defaults(func=cmd_experiment_render)

    bp = sub.add_parser(
        "bench",
        help="run a benchmark program on a platform",
        usage="isthmus bench {pingpong,bw,bibw,coll,logp,bcast} -p PLATFORM [options] "
        "[-- PROGRAM OPTIONS]",
    )
    bp.add_argument("name", help="pingpong, bw, bibw, coll, logp or bcast")
    bp.add_argument("-p", "--platform", required=True)
    bp.add_argument("--mpi", choices=("openmpi", "mpich"), default="openmpi")
    bp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    bp.add_argument("--net", metavar="NAME", help="use this emulated network if it is up")
    bp.add_argument("--timeout", metavar="DURATION")
    bp.add_argument("-o", "--output", default="bench.jsonl", metavar="OUT.jsonl")
    bp.set_defaults(func=cmd_bench, args=[])

    sw = sub.add_parser(
        "sweep",
        help="run applications over a matrix of WAN settings, MPIs and collectives",
        usage="isthmus sweep -p PLATFORM [--vary KEY=V1,V2...]... [--mpi openmpi,mpich] "
        "[--coll native,isthmus] [--repeat N] [-o DIR] -- APP [ARGS...]\n"
        "       isthmus sweep SWEEP.toml [-o DIR]",
    )
    sw.add_argument("file", nargs="?", help="a sweep file (docs/sweep.md) instead of options")
    sw.add_argument("-p", "--platform", help="platform file (TOML)")
    sw.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    sw.add_argument(
        "--vary", action="append", default=[], metavar="KEY=V1,V2", help="repeatable: a product"
    )
    sw.add_argument("--mpi", default="openmpi", help="openmpi, mpich or both, comma-separated")
    sw.add_argument("--coll", default="native", help="native, isthmus or both, comma-separated")
    sw.add_argument("--repeat", type=int, default=1, help="runs per point (default 1)")
    sw.add_argument("--timeout", metavar="DURATION", help="per point (default 10min)")
    sw.add_argument(
        "--figure",
        action="append",
        default=[],
        metavar="NAME=REGEX",
        help="a number the app prints, e.g. 'Mops=Mop/s total\\s*=\\s*([0-9.]+)'",
    )
    sw.add_argument("--name", help="the application's name in the results (default: its file)")
    sw.add_argument(
        "--no-baseline", action="store_true", help="skip the one-cluster run of the same ranks"
    )
    sw.add_argument("-o", "--output", default="sweep-out", metavar="DIR")
    sw.set_defaults(func=cmd_sweep, args=[])

    rep = sub.add_parser("report", help="an HTML page with plots from a sweep's results")
    rep.add_argument("dir", metavar="DIR", help="the sweep's output directory")
    rep.add_argument("-o", "--output", metavar="HTML", help="default: DIR/report.html")
    rep.set_defaults(func=cmd_report)

    pp = sub.add_parser("pio", help="pio, files striped over I/O servers: its benchmark")
    psub = pp.add_subparsers(dest="action", required=True, parser_class=Parser)
    sp = psub.add_parser(
        "bench",
        help="the paper's workloads for every strategy and schedule block, with the servers' "
        "raw throughput and MPI-IO measured in the same run",
    )
    sp.add_argument("-p", "--platform", required=True, help="a platform with an [io] table")
    sp.add_argument("--mpi", choices=("openmpi", "mpich"), default="openmpi")
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    sp.add_argument("--timeout", metavar="DURATION", help="per workload")
    sp.add_argument("-o", "--output", default="pio-bench", metavar="DIR")
    sp.add_argument("--workloads", default="contiguous,btio", help="contiguous, btio or both")
    sp.add_argument("--size", default="16MiB", help="contiguous: bytes per client")
    sp.add_argument("--class", dest="klass", choices=("S", "W", "A"), default="W", help="btio")
    sp.add_argument("--steps", type=int, default=20, help="btio: time steps (default 20)")
    sp.add_argument("--blocks", default="4KiB:8MiB", help="schedule blocks MIN:MAX, powers of 2")
    sp.add_argument("--strategies", default=",".join(("first", "random", "hash", "window")))
    sp.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    sp.set_defaults(func=cmd_pio_bench)

    mp = sub.add_parser("model", help="the P-LogP model: parameters and predictions")
    msub = mp.add_subparsers(dest="action", required=True, parser_class=Parser)
    sp = msub.add_parser("fit", help="P-LogP parameters from logp benchmark results")
    sp.add_argument("bench", metavar="BENCH.jsonl")
    sp.add_argument("-o", "--output", required=True, metavar="PARAMS")
    sp.set_defaults(func=cmd_model_fit)
    sp = msub.add_parser("params", help="P-LogP parameters from a platform's configured links")
    sp.add_argument("-o", "--output", required=True, metavar="PARAMS")
    sp.set_defaults(func=cmd_model_params, params=None)
    sp = msub.add_parser("predict", help="predicted completion time of each broadcast shape")
    sp.add_argument("--coll", default="bcast", help="the collective (bcast)")
    sp.add_argument("-M", "--size", required=True, help="message size, e.g. 4MiB")
    sp.set_defaults(func=cmd_model_predict)
    sp = msub.add_parser("plot", help="predicted time against message size per shape")
    sp.add_argument("--min-size", default="1KiB")
    sp.add_argument("--max-size", default="16MiB")
    sp.add_argument("-o", "--output", required=True, metavar="PNG")
    sp.set_defaults(func=cmd_model_plot)
    for name, sp in msub.choices.items():
        if name != "fit":
            sp.add_argument("-p", "--platform", required=True)
            sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        if name in ("predict", "plot"):
            sp.add_argument("--params", metavar="PARAMS", help="measured parameters (model fit)")

    cp = sub.add_parser("coll", help="the WAN-aware collectives: how the layer chooses")
    csub = cp.add_subparsers(dest="action", required=True, parser_class=Parser)
    sp = csub.add_parser("list", help="every collective with its algorithms and settings")
    sp.set_defaults(func=cmd_coll_list)
    sp = csub.add_parser(
        "info", help="one collective: its algorithms, when each is chosen, its cost, settings"
    )
    sp.add_argument("collective", metavar="COLLECTIVE", help="e.g. allreduce")
    sp.set_defaults(func=cmd_coll_info)
    sp = csub.add_parser(
        "explain",
        help="each candidate's predicted time and the one the layer runs",
        usage="isthmus coll explain -p PLATFORM [--mpi openmpi|mpich|both] "
        "[--params PARAMS] [--set KEY=VALUE] COLLECTIVE SIZE [SIZE...]",
    )
    sp.add_argument("collective", metavar="COLLECTIVE", help="e.g. alltoall, allreduce")
    sp.add_argument("sizes", nargs="+", metavar="SIZE", help="bytes per rank, e.g. 64KiB")
    sp.add_argument("-p", "--platform", required=True)
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    sp.add_argument("--params", metavar="PARAMS", help="measured parameters (model fit)")
    sp.add_argument("--mpi", default="both", choices=("openmpi", "mpich", "both"))
    sp.add_argument("--tuning", metavar="FILE", help="measured choices (coll tune), which win")
    sp.set_defaults(func=cmd_coll_explain)
    sp = csub.add_parser(
        "tune",
        help="measure ours against the MPI's own at every size; write a tuning file",
        usage="isthmus coll tune -p PLATFORM --mpi openmpi|mpich [--quick] [--set KEY=VALUE] "
        "-o FILE",
    )
    sp.add_argument("-p", "--platform", required=True)
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    sp.add_argument("--mpi", required=True, choices=("openmpi", "mpich"))
    sp.add_argument("--quick", action="store_true", help="3 collectives up to 4 KiB, 3 calls each")
    sp.add_argument("--timeout", default="60min", help="for the whole measurement")
    sp.add_argument("-o", "--output", required=True, metavar="FILE")
    sp.set_defaults(func=cmd_coll_tune)

    netp = sub.add_parser("net", help="the emulated network: namespaces and the router")
    nsub = netp.add_subparsers(dest="action", required=True, parser_class=Parser)
    sp = nsub.add_parser("up", help="create the platform's emulated network")
    sp.add_argument("-p", "--platform", required=True)
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    sp.add_argument("--mtu", type=int, default=net.DEFAULT_MTU, help="MTU of the emulated devices")
    sp.set_defaults(func=cmd_net_up)
    sp = nsub.add_parser("down", help="remove a network (idempotent, also after a crash)")
    sp.set_defaults(func=cmd_net_down)
    sp = nsub.add_parser("status", help="links, parameters and live counters")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_net_status)
    sp = nsub.add_parser(
        "set",
        help="change links while traffic flows",
        usage="isthmus net set LINK key=value... (LINK: a name or glob, e.g. 'wan:*')",
    )
    sp.add_argument("link")
    sp.add_argument("settings", nargs="*", metavar="key=value")
    sp.set_defaults(func=cmd_net_set)
    for sp in nsub.choices.values():
        sp.add_argument("--name", default=net.DEFAULT_NAME, help="network name (default: isthmus)")
    sp = nsub.add_parser("selftest", help="measure a fresh emulated network against its targets")
    sp.add_argument("--json", metavar="OUT.json", help="also write every figure to this file")
    sp.add_argument("--quick", action="store_true", help="fewer delays, rates and samples")
    sp.set_defaults(func=cmd_net_selftest)

    prof = sub.add_parser("profile", help="read a profile written by a run")
    prsub = prof.add_subparsers(dest="action", required=True, parser_class=Parser)
    sp = prsub.add_parser("show", help="print the profile's tables")
    sp.add_argument("file")
    sp.set_defaults(func=cmd_profile_show)
    sp = prsub.add_parser("plot", help="draw the communication matrices")
    sp.add_argument("file")
    sp.add_argument("-o", "--output", required=True, metavar="PNG")
    sp.set_defaults(func=cmd_profile_plot)
    sp = prsub.add_parser("report", help="write the tables and matrices as one HTML page")
    sp.add_argument("file")
    sp.add_argument("-o", "--output", required=True, metavar="HTML")
    sp.set_defaults(func=cmd_profile_report)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    program_args: list[str] = []
    if argv[:1] in (["bench"], ["sweep"]) and "--" in argv:  # the rest is the program's
        cut = argv.index("--")
        argv, program_args = argv[:cut], argv[cut + 1 :]
    args = build_parser().parse_args(argv)
    if program_args:
        args.args = program_args
    if rootless.inside():
        rootless.prepare()
    signals.terminate_as_interrupt()
    try:
        rc: int = args.func(args)
        return rc
    except UserError as e:
        print(f"isthmus: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
