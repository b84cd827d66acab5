"""The figures of one ``shmstress bench`` run as a Markdown page (``--markdown FILE``).

Figures pasted into prose go stale the day the code changes; a page the benchmark writes
can be made again by the command it names at its top, so the documentation includes this
page and cites it. The page holds exactly what the run printed: each section as the same
lines ``render_bench`` (or ``render_suite``) prints, under its title, so there is one
rendering of the figures, never a second one that could disagree with the terminal or the
``--json`` data they come from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from shmstress.core.provenance import Provenance


@dataclass(frozen=True)
class Measured:
    """Where and when the figures were measured: a shared machine's load moves every rate."""

    command: str
    provenance: Provenance
    finished: datetime
    cpus: int
    load: tuple[float, float, float]


def measured_here(command: str, provenance: Provenance, finished: datetime,
                  cpus: int) -> Measured:
    """``Measured`` for this machine now, with its load average."""
    return Measured(command, provenance, finished, cpus, os.getloadavg())


def figures_page(sections: Sequence[tuple[str, Sequence[str]]], measured: Measured) -> str:
    """The page: the command and the machine first, then each section's lines as printed."""
    when = measured.finished.strftime("%Y-%m-%d %H:%M %Z").strip()
    load = ", ".join(f"{value:.1f}" for value in measured.load)
    lines = [
        "# Figures",
        "",
        "<!-- Written by shmstress bench --markdown: run the command below again to refresh "
        "it, rather than editing it. -->",
        "",
        f"Measured by `{measured.command}`, finished {when}, with shmstress "
        f"{measured.provenance.shmstress_version} on Python "
        f"{measured.provenance.python_version}, {measured.cpus} usable CPUs, load average "
        f"{load} (1, 5, 15 min) at the end.",
        "",
        "Machines are shared and noisy: each figure is printed next to its baseline measured "
        "in the same run, and only such ratios compare across runs.",
    ]
    for title, body in sections:
        text = "\n".join(body)
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
        lines += ["", f"## {title}", "", f"{fence}text", text, fence]
    return "\n".join(lines) + "\n"
