"""The unit parser: every accepted spelling, and one-line errors for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from isthmus.config.units import UnitError, parse_duration, parse_rate, parse_size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10ms", 0.01),
        ("250us", 250e-6),
        ("1.5s", 1.5),
        ("500ns", 5e-7),
        ("0", 0.0),
        (0, 0.0),
        ("2min", 120.0),
        ("1e-3s", 1e-3),
        ("0.5ms", 5e-4),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("64KiB", 65536),
        ("1MB", 10**6),
        ("512", 512),
        (512, 512),
        ("4GiB", 4 << 30),
        ("1.5KiB", 1536),
        ("10B", 10),
        ("2kB", 2000),
    ],
)
def test_sizes(text: str, nbytes: int) -> None:
    assert parse_size(text) == nbytes


@pytest.mark.parametrize(
    ("text", "bytes_per_second"),
    [
        ("1Gbit", 1.25e8),
        ("100Mbit/s", 1.25e7),
        ("1MB/s", 1e6),
        ("10Gbps", 1.25e9),
        ("12.5MB/s", 1.25e7),
        ("8bit/s", 1.0),
    ],
)
def test_rates(text: str, bytes_per_second: float) -> None:
    assert parse_rate(text) == pytest.approx(bytes_per_second)


@pytest.mark.parametrize(
    ("parse", "text", "fragment"),
    [
        (parse_duration, "10", "with a unit"),
        (parse_duration, "10 lightyears", "unknown time unit"),
        (parse_duration, "fast", "expected a duration"),
        (parse_size, "64K", "needs a B"),
        (parse_size, "64Kb", "unknown size unit"),
        (parse_rate, "1G", "unknown rate unit"),
        (parse_rate, True, "expected a rate"),
        (parse_size, "-1KB", "expected a size"),
    ],
)
def test_errors_say_what_is_expected(parse: object, text: str, fragment: str) -> None:
    with pytest.raises(UnitError, match=fragment):
        parse(text)  # type: ignore[operator]


def _size_cases() -> list[tuple[str, str]]:
    """tests/cases/sizes.tsv: the cases the C parser (src/util/units.c) is checked with too."""
    path = Path(__file__).parents[1] / "cases" / "sizes.tsv"
    rows = [line.split("\t") for line in path.read_text().splitlines() if not line.startswith("#")]
    return [(text, want) for text, want in rows]


@pytest.mark.parametrize(("text", "want"), _size_cases())
def test_size_cases_shared_with_c(text: str, want: str) -> None:
    if want == "error":
        with pytest.raises(UnitError):
            parse_size(text)
    else:
        assert parse_size(text) == int(want)


def test_a_rate_too_large_once_scaled_is_one_line() -> None:
    """Hypothesis found '1.7555597020139804e+305KiB': finite, but infinite as a rate."""
    with pytest.raises(UnitError, match="is too large"):
        parse_rate("1.7555597020139804e+305KiB")
