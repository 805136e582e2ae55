"""What every command module shares: the one-line usage errors, option parsers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

from isthmus.config import platform as platform_mod
from isthmus.config.platform import Platform
from isthmus.config.units import (
    UnitError,
    format_duration,
    format_rate,
    format_size,
    parse_duration,
    parse_size,
)
from isthmus.errors import UserError
from isthmus.model.plogp import Params


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)


def link_text(m: platform_mod.LinkModel) -> str:
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


def timeout_option(text: str | None, option: str = "--timeout") -> float | None:
    if text is None:
        return None
    try:
        timeout = parse_duration(text)
    except UnitError as e:
        raise UserError(f"{option}: {e}") from None
    if timeout <= 0:
        raise UserError(f"{option} {text}: expected a positive duration such as 30s or 10min")
    return timeout


def output_path(path: str) -> Path:
    out = Path(path)
    if not out.parent.is_dir():
        raise UserError(f"-o {out}: the directory {out.parent} does not exist")
    return out


def choice_list(option: str, text: str, allowed: tuple[str, ...]) -> list[str]:
    picked = [x for x in text.split(",") if x]
    bad = [x for x in picked if x not in allowed]
    if bad or not picked:
        raise UserError(f"{option} {text}: expected a comma-separated list of {', '.join(allowed)}")
    return picked


def size_option(option: str, text: str, lo: int = 0, hi: int | None = None) -> int:
    try:
        n = parse_size(text)
    except UnitError as e:
        raise UserError(f"{option}: {e}") from None
    if n < lo or (hi is not None and n > hi):
        bound = f"{format_size(lo)} to {format_size(hi)}" if hi is not None else f"at least {lo}"
        raise UserError(f"{option} {text}: expected {bound}")
    return n


def model_inputs(args: argparse.Namespace) -> tuple[Platform, Params]:
    from isthmus.model import plogp

    p = platform_mod.load(args.platform, args.set)
    if args.params:
        path = Path(args.params)
        params = plogp.read(path)
        plogp.check_platform(params, p, path)
    else:
        params = plogp.from_platform(p)
    return p, params


def group(sub: Any, name: str, help: str) -> Any:
    """`isthmus NAME ACTION ...`: a command group; returns its actions' subparsers."""
    parser = sub.add_parser(name, help=help)
    return parser.add_subparsers(dest="action", required=True, parser_class=Parser)


def set_option(sp: Any) -> None:
    """--set KEY=VALUE, repeatable: a platform setting overridden for this command."""
    sp.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="override a platform setting (wan.latency=2ms sets every WAN link); repeatable",
    )  # fmt: skip


class _Dilate(argparse.Action):
    """--dilate K|auto is --set emulation.dilation=K: one way into the platform."""

    def __call__(self, parser: Any, namespace: Any, value: Any, option: Any = None) -> None:
        text = str(value)
        if not text.startswith("auto"):  # auto and auto*M: the platform's parser checks
            try:
                ok = float(text) >= 1
            except ValueError:
                ok = False
            if not ok:
                parser.error(f"--dilate {text}: expected a number >= 1 or auto")
        namespace.set.append(f"emulation.dilation={text}")


def dilate_option(sp: Any) -> None:
    """--dilate K|auto: the scale model (docs/dilation.md); after --set options."""
    sp.add_argument(
        "--dilate", action=_Dilate, metavar="K|auto", dest="dilate",
        help="run K times slower than real time, each host capped at its cores / K "
        "(auto: the smallest K that gives every host its cores; docs/dilation.md)",
    )  # fmt: skip


def platform_options(sp: Any, help: str = "platform file (TOML)", dilate: bool = False) -> None:
    """-p PLATFORM (required) and --set (and --dilate for what runs ranks)."""
    sp.add_argument("-p", "--platform", required=True, help=help)
    set_option(sp)
    if dilate:
        dilate_option(sp)
