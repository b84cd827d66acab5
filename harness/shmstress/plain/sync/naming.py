"""Names from the line that makes an object, for what ``runtime.inferred_name`` does not
cover: the two ends of a pipe (``reader, writer = Pipe()``) and a pool made in a ``with``
(``with Pool(2) as pool:``)."""

from __future__ import annotations

import linecache
import re
from types import FrameType

from shmstress.plain.runtime import _user_frame, inferred_name

PLUMBING = True
_TWO_NAMES = re.compile(r"^\s*(?:self\.)?(\w+)\s*,\s*(?:self\.)?(\w+)\s*=(?!=)")
_WITH_AS = re.compile(r"\bas\s+(\w+)\s*:")


def end_names(frame: FrameType | None) -> tuple[str, str]:
    """The variables a ``Pipe()`` line assigns its ends to, else ``NAME[0]`` and ``NAME[1]``
    after the one name it has."""
    user = _user_frame(frame)
    found = _TWO_NAMES.match(_line(user))
    if found:
        return found.group(1), found.group(2)
    name = inferred_name(user, "pipe")
    return f"{name}[0]", f"{name}[1]"


def made_name(frame: FrameType | None, word: str) -> str:
    """The variable an object is assigned to, or bound to by a ``with ... as``."""
    user = _user_frame(frame)
    name = inferred_name(user, word)
    if name.startswith(f"{word}@"):
        found = _WITH_AS.search(_line(user))
        if found:
            return found.group(1)
    return name


def _line(frame: FrameType | None) -> str:
    return "" if frame is None else linecache.getline(frame.f_code.co_filename, frame.f_lineno)
