"""The registry of the WAN-aware collectives, src/coll/registry.toml, read for Python.

The same file gives the C side its tables (tools/gencoll.py); here it checks a platform
file's [collectives] table (platform.py), answers `isthmus coll list` and `isthmus coll
info NAME`, and renders the table of docs/collectives.md (block coll/registry). Error
lines use the words of the C parser (src/coll/settings.c), which the environment's
variables go through.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REGISTRY = Path(__file__).resolve().parents[3] / "src" / "coll" / "registry.toml"


@dataclass(frozen=True)
class Algorithm:
    name: str
    file: str
    does: str
    when: str
    cost: str = ""
    wan_messages: str = ""
    wan_latencies: str = ""
    function: str = ""  # the C function the collective's generated table calls


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str
    default: str
    summary: str


@dataclass(frozen=True)
class Collective:
    name: str
    title: str
    regular: str  # the collective whose algorithms and settings this one (a v-form) shares
    algorithms: tuple[Algorithm, ...]  # "native" first
    settings: tuple[str, ...]

    def algorithm_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.algorithms)


@dataclass(frozen=True)
class Registry:
    collectives: dict[str, Collective]
    settings: dict[str, Setting]

    def names(self) -> tuple[str, ...]:
        return tuple(self.collectives)

    def taking(self, setting: str) -> tuple[str, ...]:
        """The collectives a setting applies to."""
        return tuple(c.name for c in self.collectives.values() if setting in c.settings)

    def unknown_collective(self, name: str) -> str:
        return f"unknown collective {name!r} (expected one of {', '.join(self.names())})"

    def algorithm_problem(self, collective: str, algorithm: str) -> str | None:
        """Why `algorithm` cannot be forced for `collective`, or None."""
        if collective not in self.collectives:
            return self.unknown_collective(collective)
        names = self.collectives[collective].algorithm_names()
        if algorithm in names:
            return None
        return f"unknown algorithm {algorithm!r} (expected one of {', '.join(names)})"

    def setting_problem(self, collective: str, setting: str) -> str | None:
        """Why `setting` does not apply to `collective`, or None."""
        if collective not in self.collectives:
            return self.unknown_collective(collective)
        if setting in self.collectives[collective].settings:
            return None
        takers = ", ".join(self.taking(setting))
        return f"{collective} takes no {setting} (the collectives with one: {takers})"


def _load(path: Path) -> Registry:
    raw: dict[str, Any] = tomllib.loads(path.read_text())
    native = Algorithm("native", "", raw["native"]["does"], raw["native"]["when"])
    by_name = {c["name"]: c for c in raw["collective"]}
    collectives = {}
    for c in raw["collective"]:
        regular = by_name[c.get("form_of", c["name"])]
        algs = tuple(Algorithm(**a) for a in regular["algorithm"])
        collectives[c["name"]] = Collective(
            c["name"], c["title"], regular["name"], (native, *algs), tuple(regular["settings"])
        )
    settings = {k: Setting(k, **v) for k, v in raw["setting"].items()}
    return Registry(collectives, settings)


@functools.cache
def registry() -> Registry:
    return _load(REGISTRY)


def names() -> tuple[str, ...]:
    return registry().names()


def markdown_table() -> str:
    """docs/collectives.md's table: one row per algorithm of each regular collective."""
    reg = registry()
    rows = [
        "| collective | algorithm | what it does | when the selector picks it | cost (P-LogP) "
        "| wide-area messages per call | wide-area latencies |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in reg.collectives.values():
        if c.regular != c.name:
            continue
        forms = ", ".join(v.title for v in reg.collectives.values() if v.regular == c.name)
        for a in c.algorithms[1:]:
            rows.append(
                f"| {forms} | {a.name} (`{a.file.removeprefix('src/coll/')}`) | {a.does} "
                f"| {a.when} | {a.cost} | {a.wan_messages} | {a.wan_latencies} |"
            )
    return "\n".join(rows) + "\n"
