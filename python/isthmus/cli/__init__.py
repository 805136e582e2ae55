"""The isthmus command line: `isthmus platform|run|profile ...` (see `isthmus --help`).

One module per command group, each thin: it parses its arguments and calls the package
that does the work (docs/architecture.md)."""

from __future__ import annotations

import sys

from isthmus import __version__
from isthmus.cli import bench, coll, experiment, model, net, pio, platform, profile, run, sweep
from isthmus.cli.common import Parser
from isthmus.emulate import rootless, signals
from isthmus.errors import UserError

GROUPS = (platform, run, experiment, bench, sweep, pio, model, coll, net, profile)


def build_parser() -> Parser:
    ap = Parser(
        prog="isthmus",
        description="Run MPI applications across emulated or real clusters "
        "joined by slow links, and measure what that costs.",
    )
    ap.add_argument("--version", action="version", version=f"isthmus {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=Parser)
    for group in GROUPS:
        group.add(sub)
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
        message = str(e).replace("\r", "\\r").replace("\n", "\\n")  # always one line
        print(f"isthmus: error: {message}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
