"""The code's shape (docs/architecture.md). Python: no import cycles between its modules,
and modules short enough to read at a sitting; the layers themselves are the import
contract in pyproject.toml ([tool.importlinter], run by `make lint`). C: libisthmus one way
down (layer -> coll -> world -> util), by includes, by symbols and in the build."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "isthmus"
MAX_LINES = 400


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("isthmus", exclude_type_checking_imports=True)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []


def test_modules_are_short() -> None:
    long = [
        p.relative_to(PACKAGE).as_posix()
        for p in sorted(PACKAGE.rglob("*.py"))
        if len(p.read_text().splitlines()) > MAX_LINES
    ]
    assert long == [], f"over {MAX_LINES} lines: {long}"


# ---- the C side: one way down, checked by the build (CMakeLists.txt) and here ------------

SRC = PACKAGE.parents[1] / "src"
BUILD = PACKAGE.parents[1] / "build"
# libisthmus's folders, top first; a folder may use those after it. model has no MPI and
# is used by coll and layer; forward is the forwarder's program and its wire format.
MAY_USE = {
    "layer": {"coll", "world", "util", "model", "pio"},
    "coll": {"world", "util", "model"},
    "world": {"util", "forward"},
    "util": set(),
    "model": set(),
    "forward": set(),
}
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _folder(path: Path) -> str:
    return path.relative_to(SRC).parts[0]


def _lib_files() -> list[Path]:
    return sorted(p for f in MAY_USE for p in (SRC / f).rglob("*.[ch]"))


def test_c_includes_go_down() -> None:
    """Every #include "x.h" of libisthmus names a header of its own folder or of one it may
    use, by its bare name (a path would step around the build's include directories)."""
    home = {h.name: _folder(h) for h in _lib_files() if h.suffix == ".h"}
    generated = {"functions.h": "layer", "wan_calls.h": "coll", "world_calls.h": "world",
                 "own_calls.h": "world", "coll_registry.h": "model",
                 "coll_algorithms.h": "coll", "pio_calls.h": "layer"}  # fmt: skip
    home.update(generated)
    home["pio.h"] = "pio"  # pio's public header: the layer serves MPI-IO through it alone
    wrong = []
    for f in _lib_files():
        for name in re.findall(r'#include "([^"]+)"', f.read_text()):
            to = home.get(name)
            if "/" in name or to is None or (to != _folder(f) and to not in MAY_USE[_folder(f)]):
                wrong.append(f"{f.relative_to(SRC)} -> {name}")
    assert wrong == []


def _objects(part: str) -> list[Path]:
    return sorted((BUILD / "CMakeFiles" / f"isthmus-openmpi-{part}.dir").rglob("*.o"))


def _symbols(obj: Path, *flags: str) -> set[str]:
    out = subprocess.run(["nm", "-P", *flags, obj], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def _object_graph() -> tuple[dict[str, set[str]], set[tuple[str, str]]]:
    """libisthmus's object files by the symbols each uses from another (nm), and the
    folder pairs those uses make. Symbols the MPI defines are not edges; MPI_X the layer
    defines are (an MPI_X call from below would climb back into the wrappers)."""
    objs = {o: p for p in ("util", "model", "world", "coll", "layer") for o in _objects(p)}
    assert objs, "build first (make build)"
    defined: dict[str, Path] = {}
    for o in objs:
        for s in _symbols(o, "--defined-only", "--extern-only"):
            defined[s] = o
    edges: dict[str, set[str]] = {}
    folders: set[tuple[str, str]] = set()
    for o, part in objs.items():
        uses = {defined[s] for s in _symbols(o, "--undefined-only") if s in defined}
        edges[o.name] = {u.name for u in uses if u != o}
        folders |= {(part, objs[u]) for u in uses if objs[u] != part}
    return edges, folders


def test_c_folders_use_only_those_below() -> None:
    _, folders = _object_graph()
    assert sorted(f"{a} -> {b}" for a, b in folders if b not in MAY_USE[a]) == []


def test_c_files_have_no_cycle() -> None:
    """No two files of libisthmus use each other, even through others: a file that must
    reach one above it is handed a function (the zipper's transport its receivers, its
    engine the schedules' progress, a communicator its topology's free)."""
    edges, _ = _object_graph()
    assert _cycles(edges) == []


def test_an_upward_include_fails_to_compile(tmp_path: Path) -> None:
    """A scratch file compiled as src/world's are (its include directories from the
    build's compile_commands.json) cannot include a header of src/coll above it; the same
    file including one of src/util below it compiles."""
    commands = json.loads((BUILD / "compile_commands.json").read_text())
    world = next(c for c in commands if c["file"].endswith("src/world/world.c"))
    args = shlex.split(world["command"])
    args = [a for a in args if a not in ("-c",)]
    out = args.index("-o")
    del args[out : out + 2]
    for header, ok in (("hier.h", False), ("datatype.h", True)):
        scratch = tmp_path / f"scratch_{ok}.c"
        scratch.write_text(f'#include "{header}"\nint ist_scratch(void);\n')
        cmd = [a if a != world["file"] else str(scratch) for a in args] + ["-fsyntax-only"]
        done = subprocess.run(cmd, cwd=world["directory"], capture_output=True, text=True)
        assert (done.returncode == 0) == ok, done.stderr
        if not ok:
            assert f"{header}: No such file" in done.stderr


def _calls_of_mpi_x(text: str) -> set[str]:
    """The MPI_X functions text calls (not those it defines: a line that starts with a
    type)."""
    text = C_COMMENT.sub("", text)
    defined = set(re.findall(r"^\w[\w \*]*\bMPI_(\w+)\s*\(", text, re.M))
    called = set(re.findall(r"(?<![\w.])MPI_([A-Z][a-z]\w*)\s*\(", text))
    return called - defined


def test_our_code_calls_only_pmpi_and_the_world() -> None:
    """layer.h's rule: no code of libisthmus calls MPI_X (the application's entry)."""
    wrong = []
    for f in _lib_files():
        if f.suffix != ".c":
            continue
        wrong += [f"{f.relative_to(SRC)}: MPI_{x}" for x in _calls_of_mpi_x(f.read_text())]
    assert wrong == []


def test_every_mpi_function_defined_is_listed() -> None:
    """Every C MPI_X libisthmus exports is a line of src/layer/mpi_functions.txt, or one of
    the five layer.c writes by hand (the life cycle, and MPI_Wtime: virtual time when
    dilated)."""
    listed = set(
        re.findall(r"\bint (MPI_\w+)\(", (SRC / "layer" / "mpi_functions.txt").read_text())
    )
    listed |= {"MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Pcontrol", "MPI_Wtime"}
    lib = BUILD / "lib" / "openmpi" / "libisthmus.so"
    assert lib.exists(), "build first (make build)"
    out = subprocess.run(
        ["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True
    )
    symbols = (line.split()[-1] for line in out.stdout.splitlines() if " T " in line)
    exported = {s for s in symbols if re.fullmatch(r"MPI_[A-Z][a-z]\w*", s)}  # C: not MPI_SEND
    assert sorted(exported - listed) == []


def test_c_files_are_short() -> None:
    """No C file of src/ over 500 lines: one room, one subject (issue 45)."""
    long = [f"{f.relative_to(SRC)}: {n}" for f in sorted(SRC.rglob("*.[ch]"))
            if (n := len(f.read_text().splitlines())) > 500]  # fmt: skip
    assert long == []
