"""The one parser for quantities with units: durations, sizes and rates.

Durations: "10ms", "250us", "1.5s", "500ns", "0" (seconds are the base unit).
Sizes:     "64KiB", "1MB", "512", "4GiB" (bytes; K/M/G/T are powers of 1000, Ki/Mi/... of 1024).
Rates:     "1Gbit", "100Mbit/s", "1MB/s", "10Gbps", "12.5MB/s" (bytes per second).
"""

from __future__ import annotations

import math
import re
import sys

_NUMBER = r"(?P<num>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"

_TIME_UNITS = {"h": 3600.0, "min": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_PREFIX = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}


class UnitError(ValueError):
    """A quantity that does not parse; the message says what was expected."""


def _split(text: str | int | float, what: str, example: str) -> tuple[float, str]:
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise UnitError(f"expected {what} such as {example!r}, got {text!r}")
    if isinstance(text, int | float):
        if not math.isfinite(text) or text < 0:
            raise UnitError(f"expected {what} such as {example!r}, got {text!r}")
        return float(text), ""
    m = re.fullmatch(_NUMBER + r"\s*(?P<unit>\S*)", text.strip())
    if not m:
        raise UnitError(f"expected {what} such as {example!r}, got {text!r}")
    value = float(m.group("num"))
    if not math.isfinite(value):
        raise UnitError(f"expected {what} such as {example!r}, got {text!r} (too large)")
    return value, m.group("unit")


def parse_duration(text: str | int | float) -> float:
    """Seconds. A bare number is only accepted when it is 0."""
    value, unit = _split(text, "a duration", "10ms")
    if unit == "":
        if value == 0:
            return 0.0
        raise UnitError(
            f"expected a duration with a unit (s, ms, us, ns) such as '10ms', got {text!r}"
        )
    if unit not in _TIME_UNITS:
        raise UnitError(f"unknown time unit {unit!r} in {text!r}: use h, min, s, ms, us or ns")
    return value * _TIME_UNITS[unit]


def parse_size(text: str | int | float) -> int:
    """Bytes. A bare number is bytes."""
    value, unit = _split(text, "a size", "64KiB")
    m = re.fullmatch(r"(?P<prefix>[kKMGT]i?|)(?P<base>B|bytes?|)", unit)
    if not m:
        raise UnitError(f"unknown size unit {unit!r} in {text!r}: use B, KB, KiB, MB, MiB, GB, GiB")
    if m.group("prefix") and not m.group("base"):
        raise UnitError(f"size {text!r} needs a B after the prefix, such as '64KiB'")
    size = value * _PREFIX[m.group("prefix")]
    if not math.isfinite(size):
        raise UnitError(f"size {text!r} is too large: expected at most {sys.float_info.max:g} B")
    return round(size)


def parse_rate(text: str | int | float) -> float:
    """Bytes per second, from bits ("1Gbit", "100Mbps") or bytes ("1MB/s")."""
    value, unit = _split(text, "a rate", "1Gbit/s")
    m = re.fullmatch(r"(?P<prefix>[kKMGT]i?|)(?P<base>bit|b|B)(?:/s|ps)?", unit)
    if not m:
        raise UnitError(
            f"unknown rate unit {unit!r} in {text!r}: use bit/s or B/s with a prefix, "
            "such as '1Gbit/s', '100Mbit', '1MB/s'"
        )
    scale = _PREFIX[m.group("prefix")]
    bits = m.group("base") in ("bit", "b")
    rate = value * scale / (8.0 if bits else 1.0)
    if not math.isfinite(rate):  # '1.8e305KiB': finite, but not once scaled
        raise UnitError(f"rate {text!r} is too large: expected at most {sys.float_info.max:g} B/s")
    return rate


def format_duration(seconds: float) -> str:
    if seconds == 0:
        return "0"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= factor:
            return f"{seconds / factor:g}{unit}"
    return f"{seconds / 1e-9:g}ns"


def format_size(nbytes: float) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(nbytes) >= factor:
            return f"{nbytes / factor:.3g}{unit}"
    return f"{nbytes:.0f}B"


def format_rate(bytes_per_second: float) -> str:
    bits = bytes_per_second * 8
    for unit, factor in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bits >= factor:
            return f"{bits / factor:g}{unit}"
    return f"{bits:g}bit/s"
