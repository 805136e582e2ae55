"""--set KEY=VALUE: one setting of a platform file overridden before it is checked (the
platform parser, platform.py, applies them to the raw TOML)."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from isthmus.config.topology import LINK_KEYS
from isthmus.errors import UserError


def _parse_value(text: str) -> Any:
    """A --set value: a TOML value when it is one (2, 0.1, true, ["a","b"]), else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(raw: dict[str, Any], setting: str) -> None:
    """Apply KEY=VALUE to the raw platform. wan.X sets X on the defaults and every link."""
    key, sep, text = setting.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UserError(f"--set {setting!r}: expected KEY=VALUE, such as wan.latency=2ms")
    if not re.fullmatch(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*", key):
        raise UserError(
            f"--set {setting!r}: expected a KEY of names joined by dots, such as wan.latency"
        )
    value = _parse_value(text.strip())
    parts = key.split(".")
    if parts[0] == "wan" and len(parts) == 2 and parts[1] in LINK_KEYS:
        wan = raw.setdefault("wan", {})
        wan[parts[1]] = value
        for link in wan.get("link", []):
            if isinstance(link, dict):
                link[parts[1]] = value
        return
    node: Any = raw
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise UserError(
                    f"--set {key}: {'.'.join(parts[: i + 1])} is not an index of the list"
                )
            node = node[int(part)]
        else:
            node = node.setdefault(part, {})
        if not isinstance(node, dict | list):
            raise UserError(f"--set {key}: {'.'.join(parts[: i + 1])} is a value, not a table")
    if isinstance(node, list):
        raise UserError(f"--set {key}: cannot replace a list element; set one of its keys")
    node[parts[-1]] = value
