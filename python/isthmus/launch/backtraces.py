"""The ranks' backtraces when a run exceeds its --timeout: a hang is found where it is,
not guessed at. isthmus-exec leaves `pid-N` ("PID HOST") in the status directory for
every rank it runs; gdb attaches to each (a few at a time), prints every thread's stack,
and detaches. The full stacks go to one file; the run's output gets one line per rank,
the main thread's innermost frames."""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

GDB_SECONDS = 30  # per rank: attaching to a process that spins can take a while on 2 cores
PARALLEL = 4
SUMMARY_FRAMES = 8

# "#3  0x00007f... in ist_zip_idle (tries=51) at src/world/zip/zip_transport.c:399"
# "#0  ist_zip_progress () at ..."
_FRAME = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?([\w:~<>.@]+) \(")


@dataclass(frozen=True)
class RankProcess:
    rank: int
    pid: int
    host: str
    site: str  # a zipped run's site directory ("site-0"), else ""

    def name(self, host_prefix: str = "") -> str:
        """'rank 3 on west1', as status.RankFailure names a rank."""
        site = f" of {self.site}" if self.site else ""
        return f"rank {self.rank}{site} on {self.host.removeprefix(host_prefix)}"


def rank_processes(status_dir: Path) -> list[RankProcess]:
    """The ranks isthmus-exec started, from their pid files (site directories included)."""
    out = []
    for f in sorted(status_dir.glob("**/pid-*")):
        try:
            pid, *host = f.read_text().split()
            rank = int(f.name.removeprefix("pid-"))
            site = f.parent.name if f.parent.name.startswith("site-") else ""
            out.append(RankProcess(rank, int(pid), host[0] if host else "?", site))
        except (OSError, ValueError):
            continue  # being written
    return sorted(out, key=lambda p: (p.site, p.rank))


def _stack(proc: RankProcess) -> str:
    cmd = ["gdb", "-nx", "-batch", "-p", str(proc.pid), "-ex", "thread apply all bt"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=GDB_SECONDS)
    except subprocess.TimeoutExpired:
        return f"(gdb did not answer within {GDB_SECONDS} s)"
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(("#", "Thread "))]
    return "\n".join(lines) if lines else f"(no stack: {done.stderr.strip()[-200:]})"


def main_thread_frames(stack: str) -> list[str]:
    """The function names of the thread that runs main() (else of the first thread gdb
    printed), innermost first."""
    threads = [
        [m.group(1) for line in block.splitlines() if (m := _FRAME.match(line))]
        for block in re.split(r"^Thread ", stack, flags=re.MULTILINE)
    ]
    threads = [t for t in threads if t]
    return next((t for t in threads if "main" in t), threads[0] if threads else [])


def dump(status_dir: Path, out: Path, host_prefix: str = "") -> list[str]:
    """Write every rank's stacks to out; return one summary line per rank (or one line
    saying why there are none)."""
    procs = rank_processes(status_dir)
    if not procs:
        return ["no rank had started"]
    if shutil.which("gdb") is None:
        return ["gdb is not installed (apt-get install gdb)"]
    with ThreadPoolExecutor(PARALLEL) as pool:
        stacks = list(pool.map(_stack, procs))
    out.write_text(
        "".join(
            f"==== {p.name(host_prefix)} (pid {p.pid})\n{s}\n\n"
            for p, s in zip(procs, stacks, strict=True)
        )
    )
    return [f"{p.name(host_prefix)}: {summary(main_thread_frames(s)) or s}"
            for p, s in zip(procs, stacks, strict=True)]  # fmt: skip


def summary(frames: list[str]) -> str:
    """The innermost frames, each inlined twin once; when the application's MPI call lies
    deeper, it and its caller too: "a < b < ... < MPI_Recv < main"."""
    frames = [f for i, f in enumerate(frames) if i == 0 or f != frames[i - 1]]
    shown = frames[:SUMMARY_FRAMES]
    entries = [i for i, f in enumerate(frames) if re.match(r"(P?MPI_|p?mpi_)", f)]
    if entries and entries[-1] >= SUMMARY_FRAMES:
        shown += ["...", *frames[entries[-1] : entries[-1] + 2]]
    elif len(frames) > SUMMARY_FRAMES:
        shown.append("...")
    return " < ".join(shown)
