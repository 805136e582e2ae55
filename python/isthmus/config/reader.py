"""Walking a platform file's raw TOML with the path of each key, so that every error names
the file, the key, the bad value and what is expected (platform.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from isthmus.config.topology import JITTER_DISTRIBUTIONS, LINK_KEYS, MTU_RANGE, LinkModel
from isthmus.config.units import UnitError, parse_duration, parse_rate, parse_size
from isthmus.errors import UserError


class Reader:
    """Walks the raw TOML with the path of each key, so every error can name it."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, message: str) -> UserError:
        # one line, whatever the file's keys and values hold
        text = f"{self.source}: {key}: {message}"
        return UserError(text.replace("\r", "\\r").replace("\n", "\\n"))

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
        self,
        table: dict[str, Any],
        key: str,
        name: str,
        default: int,
        minimum: int,
        maximum: int = 1 << 20,
    ) -> int:
        value = table.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise self.fail(
                f"{key}.{name}",
                f"expected a whole number from {minimum} to {maximum}, got {value!r}",
            )
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
    return Reader(source).link(values, "link", LinkModel())
