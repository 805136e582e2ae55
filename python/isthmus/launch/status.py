"""How a job's ranks ended, from the files isthmus-exec leaves in the status directory
(`rank-N`: "exit CODE NS HOST" or "signal SIG NS HOST", NS a monotonic time), and the
failure a run reports: launchers disagree on the job's status (MPICH's Hydra returns the
signal it killed the survivors with), so the rank that failed first decides it."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class RankFailure:
    in_finalize: bool  # failed inside MPI_Finalize: usually a casualty of a peer gone before
    ns: int  # when isthmus-exec saw it end
    rank: int
    how: str  # "exit" or "signal"
    value: int  # the exit code or the signal number
    host: str
    site: str = ""  # a zipped run's site directory ("site-0"), else ""

    @property
    def code(self) -> int:
        """The job's status this failure gives: the exit code, or 128 + the signal."""
        return self.value if self.how == "exit" else 128 + self.value

    def describe(self, host_prefix: str = "") -> str:
        """'rank 3 on west1 was killed by signal 9 (SIGKILL)', for the run's last line."""
        host = self.host.removeprefix(host_prefix) if self.host else "?"
        who = f"rank {self.rank}" + (f" of {self.site}" if self.site else "") + f" on {host}"
        if self.how == "exit":
            return f"{who} exited with status {self.value}"
        try:
            name = signal.Signals(self.value).name
        except ValueError:
            name = f"signal {self.value}"
        return f"{who} was killed by signal {self.value} ({name})"


def _read(f: Path) -> RankFailure | None:
    try:
        how, value, ns, *host = f.read_text().split()
        rank = int(f.name.removeprefix("rank-"))
        code = int(value)
        when = int(ns)
    except (OSError, ValueError):
        return None  # being written, or a launcher without rank numbers
    if how not in ("exit", "signal") or (how == "exit" and code == 0):
        return None
    in_finalize = (f.parent / f"finalizing-{rank}").exists()
    site = f.parent.name if f.parent.name.startswith("site-") else ""
    return RankFailure(in_finalize, when, rank, how, code, host[0] if host else "", site)


def first_failure(status_dir: Path) -> RankFailure | None:
    """The rank that failed first, or None when every rank exited 0 or none wrote its file.
    Ranks that failed before MPI_Finalize come first (the layer leaves finalizing-N when rank
    N enters it): a rank failing inside it is usually a casualty of a peer that had already
    gone."""
    failures = [r for f in status_dir.glob("**/rank-*") if (r := _read(f)) is not None]
    return min(failures) if failures else None
