"""The one reader and writer of the project's JSON and JSON-lines files, and the one
reader of its text and TOML files (platform, sweep and experiment files).

Every JSON file isthmus writes or reads goes through here: experiment results
(`results/<area>/<name>.json`), benchmark output (JSON lines with a header record),
profiles, sweep points and tables, selftest and pio summaries. Files of a kind that has a
JSON Schema (`docs/schemas/<kind>.schema.json`) are validated when they are read, so a
file that is not what it claims to be is one clear error, not a KeyError three modules
later. Writes are atomic: a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import tomllib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isthmus.errors import UserError
from isthmus.records import atomic

if TYPE_CHECKING:
    import jsonschema

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "docs" / "schemas"
# The version of the results format (results files' header "schema": "isthmus-result/N").
RESULT_SCHEMA = "isthmus-result/1"
KINDS = ("result", "bench-header", "profile", "sweep", "sweep-point")


@cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    import jsonschema  # here, not above: a quarter of every command's start-up otherwise

    if kind not in KINDS:
        raise ValueError(f"no schema for {kind!r}")
    schema = json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


def check(data: Any, kind: str, where: str) -> None:
    """Raise a one-line UserError when `data` does not match the schema of `kind`."""
    import jsonschema

    err = jsonschema.exceptions.best_match(_validator(kind).iter_errors(data))
    if err is not None:
        at = "/".join(str(p) for p in err.absolute_path) or "top level"
        raise UserError(f"{where}: not a valid {kind} file: at {at}: {err.message}")


def read_text(path: Path, what: str = "file") -> str:
    """A text file's content: a missing, unreadable, directory or non-UTF-8 file is one
    UserError naming the file and what was expected there."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise UserError(f"{path}: a directory, not a {what}") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte {e.start}): expected a {what}") from None


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """A TOML file's tables (platform, sweep, experiment files): read_text's errors, and
    TOML that does not parse, are one UserError."""
    text = read_text(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML: {e}") from None


def read_json(path: Path, kind: str | None = None, what: str = "JSON file") -> Any:
    """A JSON file's content; `kind` validates it against its schema."""
    text = read_text(path, what)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(
            f"{path}: not JSON ({e.msg} at line {e.lineno}): expected a {what}"
        ) from None
    if kind is not None:
        check(data, kind, str(path))
    return data


def write_json(path: Path, data: Any, kind: str | None = None) -> None:
    """Write `data` as indented JSON, atomically; `kind` validates it first."""
    if kind is not None:
        check(data, kind, str(path))
    atomic.write_text(path, json.dumps(data, indent=1) + "\n")


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file; other lines (a program's chatter) are skipped."""
    out = []
    try:
        text = Path(path).read_text(errors="replace")  # a program's chatter may be any bytes
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: a directory, not a JSON-lines file") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("{"):
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{n}: not a JSON record ({e.msg})") from None
    return out


def read_bench(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the measurement records of a benchmark program's JSON lines."""
    header: dict[str, Any] = {}
    records = []
    for rec in read_lines(path):
        if rec.get("record") == "header":
            header = rec
        else:
            records.append(rec)
    if not header:
        raise UserError(f"{path}: no header record: not the output of an isthmus benchmark")
    check(header, "bench-header", str(path))
    return header, records


def read_result(path: Path) -> dict[str, Any]:
    """An experiment's results file (`results/<area>/<name>.json`): header and rows."""
    data: dict[str, Any] = read_json(path, "result", "results file")
    return data


def write_result(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, data, "result")
