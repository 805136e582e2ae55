"""Property-based fuzzing (Hypothesis) of the two parsers every input goes through: the
unit parser and the platform loader. Whatever they are given, they return a value or
raise the one-line error the command line prints (UnitError, UserError); never another
exception."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isthmus.config import platform
from isthmus.config.units import UnitError, parse_duration, parse_rate, parse_size
from isthmus.errors import UserError

UNIT_WORDS = ["", "B", "KiB", "kB", "MB", "Gi", "bytes", "ms", "us", "s", "min", "bit/s",
              "Mbit", "Gbps", "MB/s", " ", "e", "."]  # fmt: skip
scalars = st.one_of(
    st.text(max_size=12),
    st.builds(
        lambda n, u: f"{n}{u}",
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(UNIT_WORDS),
    ),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@given(scalars)
def test_units_parse_or_say_why(value: Any) -> None:
    for parse in (parse_size, parse_duration, parse_rate):
        try:
            result = parse(value)
        except UnitError as e:
            assert str(e) and "\n" not in str(e)
        else:
            assert math.isfinite(result) and result >= 0


# Platform files: a valid one's keys with values replaced, removed, or nested wrongly.
BASE = tomllib.loads(
    (Path(__file__).parents[2] / "examples" / "platforms" / "das-4x2.toml").read_text()
)
toml_values = st.recursive(
    st.one_of(st.integers(-5, 10**12), st.floats(allow_nan=False), st.text(max_size=8),
              st.booleans(), st.sampled_from(["1ms", "0", "64KiB", "1Gbit/s", "-1s", "1e400s"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)  # fmt: skip


def _paths(node: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    return out


KEY_PATHS = _paths(BASE)


def _mutated(path: tuple[str, ...], value: Any, drop: bool) -> dict[str, Any]:
    raw = tomllib.loads(
        (Path(__file__).parents[2] / "examples" / "platforms" / "das-4x2.toml").read_text()
    )
    node = raw
    for k in path[:-1]:
        node = node[k]
    if drop:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return raw


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from(KEY_PATHS), toml_values, st.booleans())
def test_platform_loads_or_says_why(path: tuple[str, ...], value: Any, drop: bool) -> None:
    raw = _mutated(path, value, drop)
    try:
        p = platform.parse(raw, "fuzz.toml", Path("fuzz.toml"))
    except UserError as e:
        assert str(e).startswith("fuzz.toml") and "\n" not in str(e), str(e)
    else:
        assert p.total_ranks >= 1 and p.clusters


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_set_overrides_load_or_say_why(setting: str) -> None:
    try:
        platform.load(Path(__file__).parents[2] / "examples" / "platforms" / "two-clusters.toml",
                      [setting])  # fmt: skip
    except UserError as e:
        assert "\n" not in str(e)
