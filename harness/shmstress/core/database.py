"""The directory where shmstress keeps what earlier runs left for later ones.

In the spirit of Hypothesis' example database: ``.shmstress/`` (in the working
directory, or pytest's rootdir) holds the failure database of the pytest plugin
(``failures/``) and what aimed noise learnt (``learning/``). It is a cache:
deleting it loses nothing but the head start, and it carries a ``.gitignore``
so it is never committed. One directory, one word (*database*) for every
command and option that names it.
"""

from __future__ import annotations

from pathlib import Path

from shmstress.core.files import write_text_atomically

DEFAULT_DIRECTORY = ".shmstress"
OFF = "none"
"""The value of a database option that turns the database off."""
_GITIGNORE = "# shmstress's database: what earlier runs learnt (safe to delete)\n*\n"


def database_directory(text: str | None, base: Path | None = None) -> Path | None:
    """The directory a database option names (relative to ``base``, else the working
    directory); None for ``none`` (off)."""
    text = DEFAULT_DIRECTORY if text is None else text.strip()
    if text.lower() == OFF or not text:
        return None
    path = Path(text).expanduser()
    return (base / path) if base is not None else path.absolute()


def prepare(directory: Path) -> None:
    """Create ``directory`` with its ``.gitignore``; raises ``OSError`` or ``ArtifactError``
    (the callers warn: a cache that cannot be written never changes a verdict)."""
    directory.mkdir(parents=True, exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        write_text_atomically(ignore, _GITIGNORE, "the database's .gitignore")
