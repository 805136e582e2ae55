"""What a sweep is: the applications, the platform and its overrides, the values varied,
the MPIs and collective modes, the repetitions; from command-line options or a sweep
file (docs/sweep.md), checked, and expanded into points."""

from __future__ import annotations

import itertools
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config import paths
from isthmus.config import platform as platform_mod
from isthmus.config.platform import COLLECTIVES_MODES, Platform
from isthmus.config.units import UnitError, parse_duration
from isthmus.errors import UserError

MPIS = ("openmpi", "mpich")


BASELINE = "one-cluster"


def _substitute(text: str, subst: dict[str, str]) -> str:
    """{mpi}, {bench}, {point} and {here} in text replaced by their values in subst."""
    return re.sub(r"\{(mpi|bench|point|here)\}", lambda m: subst[m.group(1)], text)


@dataclass(frozen=True)
class App:
    """An application of the sweep. argv may use {mpi} (openmpi or mpich), {bench} (the
    directory of isthmus's benchmark programs built for that MPI) and {point} (the
    point's own directory, for output files) and {here} (the sweep file's directory, or
    the current one). figures: (name, regular expression whose
    first group is the number) looked for in what the application prints. An app runs
    under the sweep's MPIs that it lists (all when it lists none), with its own platform
    settings added (NetPIPE needs exactly two ranks, for example). repeat, when given,
    replaces the sweep's for this app. inputs: files (with {here}) copied into the point's
    directory, where the app then runs (HPCC reads hpccinf.txt from its working
    directory and writes hpccoutf.txt there). figures_in: the file, in the point's
    directory, that figures are looked for in instead of standard output."""

    name: str
    argv: tuple[str, ...]
    figures: tuple[tuple[str, str], ...] = ()
    argv_per_mpi: tuple[tuple[str, tuple[str, ...]], ...] = ()  # overrides argv for one MPI
    mpis: tuple[str, ...] = ()  # the MPIs it runs under (default: the sweep's)
    overrides: tuple[str, ...] = ()  # platform settings for this app (e.g. fewer hosts)
    colls: tuple[str, ...] = ()  # the collective modes it runs with (default: the sweep's)
    repeat: int | None = None  # runs per point (default: the sweep's)
    inputs: tuple[str, ...] = ()  # files copied into the point's directory, its cwd
    figures_in: str | None = None  # a file the app writes there, searched instead of stdout
    against: str | None = None  # another app of the sweep the report sets this one beside
    placement: str | None = None  # a placement file (isthmus run --placement), {here} allowed

    def placement_file(self, here: Path) -> Path | None:
        return Path(_substitute(self.placement, {"here": str(here)})) if self.placement else None

    def settings(self, varied: dict[str, str]) -> list[str]:
        """The app's platform settings at a point: {KEY} becomes the value the point
        gives varied key KEY (a direct link's latency following a zipper link's, say)."""
        return [
            re.sub(r"\{([A-Za-z0-9_.\-\[\]]+)\}", lambda m: varied.get(m.group(1), m.group(0)), x)
            for x in self.overrides
        ]

    def command(self, mpi: str, point_dir: Path, here: Path) -> list[str]:
        argv = dict(self.argv_per_mpi).get(mpi, self.argv)
        subst = {
            "mpi": mpi,
            "bench": str(paths.bench_dir(mpi)),
            "point": str(point_dir),
            "here": str(here),
        }
        return [_substitute(a, subst) for a in argv]

    def input_files(self, here: Path) -> list[Path]:
        return [Path(_substitute(f, {"here": str(here)})) for f in self.inputs]


@dataclass(frozen=True)
class Sweep:
    platform: Path
    apps: tuple[App, ...]
    overrides: tuple[str, ...] = ()
    vary: tuple[tuple[str, tuple[str, ...]], ...] = ()
    mpis: tuple[str, ...] = ("openmpi",)
    colls: tuple[str, ...] = ("native",)
    repeat: int = 1
    timeout: float = 600.0
    baseline: bool = True
    here: Path = Path(".")  # what {here} stands for in commands


@dataclass(frozen=True)
class Point:
    app: App
    mpi: str
    coll: str
    settings: tuple[tuple[str, str], ...]  # the varied keys' values at this point
    repeat: int
    baseline: bool = False

    @property
    def id(self) -> str:
        parts = [self.app.name, self.mpi, self.coll]
        parts += [BASELINE] if self.baseline else [f"{k}={v}" for k, v in self.settings]
        parts.append(f"r{self.repeat}")
        return re.sub(r"[^A-Za-z0-9._=+-]", "_", "_".join(parts))


def _fail(where: str, what: str) -> UserError:
    return UserError(f"{where}: {what}")


def parse_vary(text: str) -> tuple[str, tuple[str, ...]]:
    """'wan.latency=0,0.5ms,1ms' -> ('wan.latency', ('0', '0.5ms', '1ms'))."""
    key, sep, values = text.partition("=")
    items = tuple(v.strip() for v in values.split(",") if v.strip())
    if not sep or not key.strip() or not items:
        raise _fail(f"--vary {text!r}", "expected KEY=VALUE,VALUE,... such as wan.latency=0,1ms")
    return key.strip(), items


def parse_list(text: str, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise _fail(f"{what} {text!r}", f"expected a comma-separated list of {', '.join(allowed)}")
    return tuple(dict.fromkeys(items))


def parse_figure(text: str) -> tuple[str, str]:
    """'Mop/s=Mop/s total\\s*=\\s*([0-9.]+)' -> (name, pattern), the pattern checked."""
    name, sep, pattern = text.partition("=")
    if not sep or not name:
        raise _fail(f"--figure {text!r}", "expected NAME=REGEX with one group for the number")
    try:
        if re.compile(pattern).groups < 1:
            raise _fail(f"--figure {text!r}", "the pattern needs a (group) around the number")
    except re.error as e:
        raise _fail(f"--figure {text!r}", f"not a regular expression ({e})") from None
    return name, pattern


def check(sweep: Sweep) -> Platform:
    """Load the platform with every varied value, so that a typo fails before any run."""
    if sweep.repeat < 1:
        raise UserError(f"repeat {sweep.repeat}: expected 1 or more")
    for app in sweep.apps:
        if app.repeat is not None and app.repeat < 1:
            raise UserError(f"app {app.name}: repeat {app.repeat}: expected 1 or more")
        for f in app.input_files(sweep.here.resolve()):
            if not f.is_file():
                raise UserError(f"app {app.name}: input {f}: no such file")
        placed = app.placement_file(sweep.here.resolve())
        if placed is not None and not placed.is_file():
            raise UserError(f"app {app.name}: placement {placed}: no such file")
    names = [a.name for a in sweep.apps]
    if len(set(names)) != len(names):
        raise UserError(f"app names must differ: {', '.join(names)}")
    p = platform_mod.load(sweep.platform, list(sweep.overrides))
    keys = [k for k, _ in sweep.vary]
    for app in sweep.apps:
        if app.against is not None and app.against not in names:
            raise UserError(f"app {app.name}: against {app.against!r}: expected another app")
        for combo in itertools.product(*(v for _, v in sweep.vary)):
            varied = dict(zip(keys, combo, strict=True))
            sets = [*sweep.overrides, *app.settings(varied)]
            left = [x for x in sets if re.search(r"\{[A-Za-z0-9_.\-\[\]]+\}", x)]
            if left:
                raise UserError(
                    f"app {app.name}: set {left[0]!r}: {{KEY}} must name a varied key "
                    f"({', '.join(keys) or 'none varied'})"
                )
            platform_mod.load(sweep.platform, [*sets, *(f"{k}={v}" for k, v in varied.items())])
    if not p.emulated:
        raise UserError(f"{sweep.platform}: a sweep needs an emulated platform (hosts per cluster)")
    return p


def check_installed(sweep: Sweep) -> None:
    """Every app's program is there, before anything runs (a one-line error naming it)."""
    for app in sweep.apps:
        for mpi in app.mpis or sweep.mpis:
            program = app.command(mpi, Path("/point"), sweep.here.resolve())[0]
            found = Path(program).is_file() if "/" in program else shutil.which(program)
            if not found:
                raise UserError(
                    f"app {app.name}: {program} is not installed (scripts/install-deps.sh "
                    "experiments installs the applications of examples/sweeps/)"
                )


def points(sweep: Sweep) -> list[Point]:
    keys = [k for k, _ in sweep.vary]
    out = []
    for app in sweep.apps:
        for mpi in sweep.mpis:
            if app.mpis and mpi not in app.mpis:
                continue
            for r in range(app.repeat or sweep.repeat):
                if sweep.baseline:
                    out.append(Point(app, mpi, "native", (), r, baseline=True))
                for coll in sweep.colls:
                    if app.colls and coll not in app.colls:
                        continue
                    for combo in itertools.product(*(v for _, v in sweep.vary)):
                        out.append(Point(app, mpi, coll, tuple(zip(keys, combo, strict=True)), r))
    return out


def one_cluster_toml(p: Platform) -> str:
    """The baseline platform: every rank of `p` in one cluster, on the first cluster's LAN."""
    first = p.clusters[0]
    lan = first.lan
    rph = {c.ranks_per_host for c in p.clusters}
    per_host = first.ranks_per_host if len(rph) == 1 else 1
    hosts = p.total_ranks // per_host
    bw = f', bandwidth = "{lan.bandwidth:.17g}B/s"' if lan.bandwidth else ""
    k = p.emulation.dilation
    # the baseline runs at the platform's dilation: its times compare with the points'
    dilation = "" if k == 1.0 else f"\n[emulation]\ndilation = {k!r}\n".replace("'", '"')
    return (
        f"# Written by isthmus sweep: the ranks of {p.name} in one cluster (the baseline)\n"
        f'name = "{p.name}-{BASELINE}"\n\n'
        f"[clusters.all]\nhosts = {hosts}\nranks_per_host = {per_host}\n"
        f'lan = {{ latency = "{lan.latency:.17g}s"{bw} }}\n\n'
        f'[layer]\nwait = "{p.layer.wait}"\n' + dilation
    )


def _toml_strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(x, str | int | float) for x in value):
        return tuple(str(x) for x in value)
    raise UserError(f"{where}: expected a string or a list of strings")


def _whole(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise UserError(f"{where}: expected a whole number")
    return value


def load_file(path: Path) -> Sweep:
    """A sweep file (TOML; docs/sweep.md). Relative paths are relative to the file."""
    raw = records.read_toml(path, "sweep file")
    known = {"platform", "set", "vary", "mpi", "coll", "repeat", "timeout", "baseline", "app"}
    app_keys = (
        "name",
        "command",
        "figures",
        "figures_in",
        "mpi",
        "coll",
        "set",
        "repeat",
        "inputs",
        "against",
        "placement",
    )
    unknown = sorted(set(raw) - known)
    if unknown:
        raise UserError(f"{path}: unknown key {unknown[0]!r}: expected {', '.join(sorted(known))}")
    if "platform" not in raw or not isinstance(raw["platform"], str):
        raise UserError(f"{path}: platform: expected the path of a platform file")
    apps = []
    for i, a in enumerate(raw.get("app", [])):
        where = f"{path}: app[{i}]"
        if not isinstance(a, dict) or not isinstance(a.get("name"), str):
            raise UserError(f"{where}: expected a table with name and command")
        bad = sorted(set(a) - set(app_keys))
        if bad:
            raise UserError(f"{where}: unknown key {bad[0]!r}: expected {', '.join(app_keys)}")
        cmd = a.get("command")
        per_mpi: list[tuple[str, tuple[str, ...]]] = []
        if isinstance(cmd, dict):
            for mpi, argv in cmd.items():
                if mpi not in MPIS:
                    raise UserError(f"{where}: command.{mpi}: expected openmpi or mpich")
                per_mpi.append((mpi, _toml_strings(argv, f"{where}: command.{mpi}")))
            argv_default = per_mpi[0][1] if per_mpi else ()
        else:
            argv_default = _toml_strings(cmd, f"{where}: command")
        if not argv_default:
            raise UserError(f"{where}: command: expected the application and its arguments")
        figs = a.get("figures", {})
        if not isinstance(figs, dict):
            raise UserError(f"{where}: figures: expected a table of NAME = REGEX")
        figures = tuple(parse_figure(f"{k}={v}") for k, v in figs.items())
        mpis: tuple[str, ...] = ()
        if "mpi" in a:
            mpis = parse_list(",".join(_toml_strings(a["mpi"], f"{where}: mpi")), MPIS, "mpi")
        colls: tuple[str, ...] = ()
        if "coll" in a:
            text = ",".join(_toml_strings(a["coll"], f"{where}: coll"))
            colls = parse_list(text, COLLECTIVES_MODES, "coll")
        app_sets = _toml_strings(a.get("set", []), f"{where}: set")
        app_repeat = _whole(a["repeat"], f"{where}: repeat") if "repeat" in a else None
        inputs = _toml_strings(a.get("inputs", []), f"{where}: inputs")
        figures_in = a.get("figures_in")
        if figures_in is not None and (
            not isinstance(figures_in, str) or not figures_in or "/" in figures_in
        ):
            raise UserError(f"{where}: figures_in: expected a file name in the point's directory")
        against = a.get("against")
        if against is not None and not isinstance(against, str):
            raise UserError(f"{where}: against: expected the name of another app")
        placement = a.get("placement")
        if placement is not None and not isinstance(placement, str):
            raise UserError(f"{where}: placement: expected the path of a placement file")
        apps.append(
            App(
                a["name"],
                argv_default,
                figures,
                tuple(per_mpi),
                mpis,
                app_sets,
                colls,
                repeat=app_repeat,
                inputs=inputs,
                figures_in=figures_in,
                against=against,
                placement=placement,
            )
        )
    if not apps:
        raise UserError(f"{path}: no [[app]]: a sweep needs at least one application")
    vary = raw.get("vary", {})
    if not isinstance(vary, dict):
        raise UserError(f"{path}: vary: expected a table of KEY = [VALUES]")
    try:
        timeout = parse_duration(raw.get("timeout", "10min"))
    except UnitError as e:
        raise UserError(f"{path}: timeout: {e}") from None
    repeat = _whole(raw.get("repeat", 1), f"{path}: repeat")
    baseline = raw.get("baseline", True)
    if not isinstance(baseline, bool):
        raise UserError(f"{path}: baseline: expected true or false")
    return Sweep(
        platform=(path.parent / raw["platform"]).resolve(),
        apps=tuple(apps),
        overrides=_toml_strings(raw.get("set", []), f"{path}: set"),
        vary=tuple((k, _toml_strings(v, f"{path}: vary.{k}")) for k, v in vary.items()),
        mpis=parse_list(",".join(_toml_strings(raw.get("mpi", "openmpi"), "mpi")), MPIS, "mpi"),
        colls=parse_list(
            ",".join(_toml_strings(raw.get("coll", "native"), "coll")), COLLECTIVES_MODES, "coll"
        ),
        repeat=repeat,
        timeout=timeout,
        baseline=baseline,
        here=path.parent.resolve(),
    )
