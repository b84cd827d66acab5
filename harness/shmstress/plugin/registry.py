"""Finding trackers: installed ones by entry point, a user's own by ``path/to/file.py:Name``.

The harness never imports a tracker by name; even the built-in DRA tracker is
found through the ``shmstress.trackers`` entry point its package declares.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

from shmstress.core.errors import PluginError, UnknownTrackerError
from shmstress.plugin.class_check import check_class, one_line
from shmstress.plugin.exits import ExitAtImport, exit_refused
from shmstress.plugin.tracker import Tracker

ENTRY_POINT_GROUP = "shmstress.trackers"
_USER_PREFIX = "shmstress_user_"


def available() -> dict[str, str]:
    """Installed tracker names mapped to their import paths."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load(spec: str) -> type[Tracker]:
    """A checked tracker class from an installed name or ``file.py:ClassName``.

    The class attributes are validated here (``class_check.check_class``), so
    a malformed plugin fails with one line before anything is built.
    """
    if tracker_file(spec) is not None:
        return check_class(_load_from_path(spec), f"tracker {spec}")
    if spec.endswith(".py"):
        raise UnknownTrackerError(f"name the tracker class too: --tracker {spec}:ClassName")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == spec:
            try:
                with exit_refused():
                    loaded = ep.load()
            except KeyboardInterrupt:
                raise
            except ExitAtImport as exc:
                raise PluginError(f"tracker {spec} ({ep.value}) failed to load: it called "
                                  f"os._exit({exc.code!r})") from None
            except SystemExit as exc:
                raise PluginError(f"tracker {spec} ({ep.value}) failed to load: it called "
                                  f"sys.exit({exc.code!r})") from None
            except BaseException as exc:
                raise PluginError(
                    f"tracker {spec} ({ep.value}) failed to load: {import_failure(exc)}"
                ) from exc
            return check_class(loaded, f"tracker {spec} ({ep.value})")
    names = ", ".join(sorted(available())) or "none installed"
    raise UnknownTrackerError(f"unknown tracker {spec!r}; available: {names}")


def tracker_file(spec: str) -> Path | None:
    """The file ``load(spec)`` imports for a ``path/to/file.py:Class`` spec (as written, not
    resolved); None for an installed name, which is looked up among the entry points."""
    if ":" in spec and spec.split(":", 1)[0].endswith(".py"):
        return Path(spec.split(":", 1)[0])
    return None


def spec_of(tracker_cls: type) -> str:
    """The spec ``load`` takes back for a class in hand: an installed tracker's name, or
    ``/abs/path/file.py:Class``, which is what a bundle and a rerun line must carry (a
    class object cannot be written into either).

    Raises ``TypeError`` for what cannot be found again by a spec: a class made inside a
    function, or one from no file.
    """
    if not isinstance(tracker_cls, type):
        raise TypeError(f"a tracker is a name, a path/to/file.py:Class or a Tracker class, "
                        f"not {tracker_cls!r}")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        module_name, _, attribute = ep.value.partition(":")
        if module_name == tracker_cls.__module__ and attribute == tracker_cls.__qualname__:
            return ep.name
    name = tracker_cls.__qualname__
    try:
        path = inspect.getfile(tracker_cls)
    except (TypeError, OSError):
        path = ""
    if "<locals>" in name or not path.endswith(".py"):
        raise TypeError(f"tracker class {name} must be defined at the top level of a .py "
                        "file, so that a bundle and a rerun can load it again by path")
    return f"{Path(path).resolve()}:{name}"


def _imported(path: Path) -> ModuleType | None:
    """The module the program itself imported from ``path`` (a test module, the tracker's
    own package), so a class passed as an object and the one loaded by its spec are the
    same class, and the file's import-time code does not run twice. Modules this registry
    loaded are not reused: loading a path again reads the file again, as it always did."""
    target = path.resolve()
    for name, module in list(sys.modules.items()):
        if name.startswith(_USER_PREFIX):
            continue
        file = getattr(module, "__file__", None)
        if file is not None and file.endswith(".py"):
            try:
                if Path(file).resolve() == target:
                    return module
            except OSError:
                continue
    return None


def _load_from_path(spec: str) -> object:
    path_text, _, class_name = spec.partition(":")
    path = Path(path_text)
    if not path.is_file():
        raise UnknownTrackerError(f"tracker file {path} does not exist")
    folder = str(path.resolve().parent)
    if folder not in sys.path:  # the tracker's sibling modules import as they would next to it
        sys.path.insert(0, folder)
    already = _imported(path)
    if already is not None and _attribute(already, class_name) is not None:
        return _attribute(already, class_name)
    module_name = _module_name(path)
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise PluginError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        with exit_refused():
            module_spec.loader.exec_module(module)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM while importing: not the plugin's fault
        sys.modules.pop(module_name, None)
        raise
    except ExitAtImport as exc:  # os._exit() at import: it would end the command unseen
        sys.modules.pop(module_name, None)
        raise PluginError(f"importing {path} failed: it called os._exit({exc.code!r})") \
            from None
    except SystemExit as exc:  # sys.exit() at import: a plugin error, never our exit code
        sys.modules.pop(module_name, None)
        raise PluginError(f"importing {path} failed: it called sys.exit({exc.code!r})") from None
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        raise PluginError(f"importing {path} failed: {import_failure(exc)}") from exc
    if _attribute(module, class_name) is None:
        raise PluginError(f"{path} defines no {class_name!r}")
    return _attribute(module, class_name)


OLD_PACKAGE = "harness"
"""The package's name before it moved under ``shmstress``: a tracker written then imports
it (``from harness import Tracker``) and failed with a bare ``No module named 'harness'``."""


def import_failure(exc: BaseException) -> str:
    """Why importing a tracker failed, in one line; for a tracker written against the old
    API, what replaced it."""
    if isinstance(exc, ImportError) and (exc.name or "").split(".")[0] == OLD_PACKAGE:
        return (f"it imports {exc.name!r}, the plugin API's package before it moved: a "
                "tracker now imports everything from shmstress.api (from shmstress.api "
                "import Tracker, RoleSpec, ...; see examples/counter_tracker.py)")
    return one_line(exc)


def _attribute(module: ModuleType, qualname: str) -> object:
    """``Outer.Inner`` as well as ``Name``: ``spec_of`` writes a class's qualified name."""
    found: object = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
        if found is None:
            return None
    return found


def _module_name(path: Path) -> str:
    """One module name per file: two plugins both called ``tracker.py`` must not collide."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    return f"{_USER_PREFIX}{path.stem}_{digest}"
