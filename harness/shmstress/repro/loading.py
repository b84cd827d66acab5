"""One way in for every command that takes a bundle, of either format.

``read_bundle`` reads a file as data (strict JSON, see ``bundle_json``) and decodes it by
the format it declares: a tracker bundle (``bundle``) or a plain-code one
(``plain_bundle``); nothing it names is imported. ``open_bundle`` also checks, before
anything is imported, that the code it names may run (``bundle_code``), as ``trusted``
does for a bundle already read. ``replay``, ``show``, ``shrink`` and ``log`` all come in
here, so one rule decides what a bundle can make run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from shmstress.core.errors import BundleError
from shmstress.repro import plain_bundle
from shmstress.repro.bundle import Bundle, decoded, from_json
from shmstress.repro.bundle_code import CodeAllowance, NamesCode, require_trusted
from shmstress.repro.bundle_json import read_document
from shmstress.repro.plain_bundle import PlainBundle

AnyBundle = Bundle | PlainBundle
B = TypeVar("B", bound=NamesCode)


def read_bundle(path: Path) -> AnyBundle:
    """The bundle at ``path`` as data; one BundleError line naming the file if it is none."""
    data = read_document(path)
    if plain_bundle.is_plain(data):
        return decoded(path, data, plain_bundle.from_json)
    return decoded(path, data, from_json)


def open_bundle(path: Path, allowance: CodeAllowance) -> AnyBundle:
    """The bundle at ``path``, once the code it names is known to be allowed to run."""
    return trusted(path, read_bundle(path), allowance)


def trusted(path: Path, bundle: B, allowance: CodeAllowance) -> B:
    """``bundle`` (read from ``path``), or one BundleError line naming both the bundle and
    the code it names, which may not run (``bundle_code.require_trusted``)."""
    try:
        require_trusted(bundle, allowance)
    except BundleError as exc:
        raise BundleError(f"{path}: {exc}") from None
    return bundle
