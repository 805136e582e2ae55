"""`isthmus model fit|params|predict|plot`: the P-LogP model."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from isthmus.cli.common import (
    group,
    model_inputs,
    output_path,
    platform_options,
    size_option,
)
from isthmus.config.platform import Platform
from isthmus.errors import UserError


def _clusters(p: Platform) -> list[int]:
    ranks = [c.ranks for c in p.clusters if c.ranks > 0]
    if not ranks:
        raise UserError(f"{p.path}: no cluster gives its rank count (hosts x ranks_per_host)")
    return ranks


def cmd_model_fit(args: argparse.Namespace) -> int:
    from isthmus.model import plogp

    params = plogp.fit(Path(args.bench))
    out = output_path(args.output)
    plogp.write(params, out)
    for name, c in params.classes.items():
        print(f"{name}: L {c.L:.1f} us, {len(c.sizes)} sizes {c.sizes[0]}-{c.sizes[-1]} B")
    print(f"wrote {out}")
    return 0


def cmd_model_params(args: argparse.Namespace) -> int:
    from isthmus.model import plogp

    _, params = model_inputs(args)
    out = output_path(args.output)
    plogp.write(params, out)
    print(f"wrote {out}")
    return 0


def cmd_model_predict(args: argparse.Namespace) -> int:
    from isthmus.model import bcast as model
    from isthmus.model import view as model_view

    if args.coll != "bcast":
        raise UserError(f"--coll {args.coll}: unknown collective; the model covers: bcast")
    p, params = model_inputs(args)
    big_m = size_option("-M", args.size)
    preds = model.predict_bcast(params, _clusters(p), big_m)
    Console(width=max(Console().width, 120)).print(
        model_view.table(preds, big_m, p.name, params.source)
    )
    for line in model_view.explain(preds):
        print(line)
    return 0


def cmd_model_plot(args: argparse.Namespace) -> int:
    from isthmus.report import figures  # heavy: only for this command

    p, params = model_inputs(args)
    lo = size_option("--min-size", args.min_size)
    hi = size_option("--max-size", args.max_size)
    if not 1 <= lo <= hi:
        raise UserError(f"--min-size {lo} --max-size {hi}: expected 1 <= min <= max")
    sizes = []
    m = lo
    while m <= hi:
        sizes.append(m)
        m *= 2
    out = output_path(args.output)
    title = f"MPI_Bcast on {p.name}: P-LogP prediction ({params.source})"
    figures.bcast_model(params, _clusters(p), sizes, title, out)
    print(f"wrote {out}")
    return 0


def add(sub: Any) -> None:
    """The model command(s) on the top-level subparsers."""
    msub = group(sub, "model", "the P-LogP model: parameters and predictions")
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
            platform_options(sp)
        if name in ("predict", "plot"):
            sp.add_argument("--params", metavar="PARAMS", help="measured parameters (model fit)")
