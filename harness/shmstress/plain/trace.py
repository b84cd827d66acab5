"""``--trace``: points at the accesses to shared memory made by code nobody instrumented.

In the named code (a module, a package, a file or a folder; libraries from
site-packages included), each process of an execution traces opcodes
(``sys.settrace`` with ``f_trace_opcodes``). Before a subscript read or write
(``x[i]``, ``buf[:n] = data``, ``a[i] += 1``) whose container is registered
shared memory (a ``SharedMemory`` buffer, a ``Value``'s or ``Array``'s, a numpy
array over one), and at the start of each line that uses such an object some
other way (``buf.tobytes()``, ``struct.pack_into(fmt, buf, ...)``), it takes a
point labelled with what it touches. A read-modify-write on one line so becomes
a read step and a write step, with room for another process in between.

Which object an instruction touches is found from the bytecode: walking back
from the instruction over the stack effects of the ones before it to the load
of the container (a local, a global, and attribute loads on it), then fetching
that value from the frame. Attributes are read without running code, except
the few stdlib properties known to be plain (``SharedMemory.buf``); a container
computed by a call, or behind a jump, is not recognised (no point is taken for
it). Frontrun keeps a full shadow stack instead; this walk needs no per-opcode
bookkeeping, so untouched instructions cost a dict miss.
"""

from __future__ import annotations

import ctypes
import dis
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shmstress.core.errors import ScenarioError
from shmstress.plain.runtime import PlainRuntime, plumbing

PLUMBING = True

_ROOTS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME"}
_SUBSCRIPTS = {"BINARY_SUBSCR": "read", "STORE_SUBSCR": "write", "DELETE_SUBSCR": "write",
               "BINARY_SLICE": "read", "STORE_SLICE": "write"}
_KEYED = {"BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR"}  # the key on top of the stack
_CONTAINER_DEPTH = {"BINARY_SUBSCR": 1, "STORE_SUBSCR": 1, "DELETE_SUBSCR": 1,
                    "BINARY_SLICE": 2, "STORE_SLICE": 2}
_STOPS = ("JUMP", "POP_JUMP", "FOR_ITER", "RETURN", "RAISE", "RERAISE", "SEND", "YIELD")
_PUSH_NOTHING = ("STORE_", "DELETE_")
_PUSH_NOTHING_OPS = {"POP_TOP", "RESUME", "NOP", "POP_EXCEPT", "PRINT_EXPR", "CACHE",
                     "PRECALL", "KW_NAMES"}
_PLAIN = (int, float, complex, str, bytes, bool, tuple, list, dict, set, frozenset,
          type(None), types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type)
_SAFE_PROPERTIES = {("SharedMemory", "buf"), ("SharedMemory", "name"), ("SharedMemory", "size")}
_MISSING = object()


@dataclass(frozen=True)
class Chain:
    """A container as the code names it: a root variable and attribute loads on it."""

    root: str  # the opcode that loaded the root
    name: str
    attrs: tuple[str, ...] = ()
    const: object = None  # the value, where the root is a constant (an index: ``a[0]``)

    def text(self) -> str:
        return ".".join((self.name, *self.attrs))


@dataclass(frozen=True)
class Access:
    """A subscript as the code names it: read or write, its container, its key if the key
    is a variable or a constant (the element's index and value then go into the step)."""

    verb: str
    container: Chain
    key: Chain | None


@dataclass(frozen=True)
class CodePlan:
    subscripts: dict[int, Access]  # offset -> what the subscript there touches
    lines: dict[int, tuple[Chain, ...]]  # line -> the other objects the line loads


def producer(instructions: Sequence[dis.Instruction], index: int, depth: int) -> Chain | None:
    """What pushed the value at ``depth`` of the stack just before ``instructions[index]``."""
    at = index - 1
    while at >= 0:
        ins = instructions[at]
        if instructions[at + 1].is_jump_target or ins.opname.startswith(_STOPS):
            return None
        op = ins.opname
        if op == "LOAD_CONST" and depth == 0:
            return Chain(op, repr(ins.argval), const=ins.argval)
        if op in _ROOTS:
            pushes = 2 if op == "LOAD_GLOBAL" and (ins.arg or 0) & 1 else 1
            if depth == 0:
                return Chain(op, str(ins.argval))
            if depth < pushes:
                return None  # the NULL of a call
            depth -= pushes
        elif op == "LOAD_ATTR":
            if depth == 0:
                owner = producer(instructions, at, 0)
                return None if owner is None else Chain(owner.root, owner.name,
                                                        (*owner.attrs, str(ins.argval)))
        elif op == "COPY":
            depth = (ins.arg or 1) - 1 if depth == 0 else depth - 1
        elif op == "SWAP":
            n = (ins.arg or 2) - 1
            depth = n if depth == 0 else 0 if depth == n else depth
        else:
            effect = dis.stack_effect(ins.opcode, ins.arg) if ins.opcode >= dis.HAVE_ARGUMENT \
                else dis.stack_effect(ins.opcode)
            nothing = op.startswith(_PUSH_NOTHING) or op in _PUSH_NOTHING_OPS
            pushes = 0 if nothing else (effect + 1 if op in ("UNPACK_SEQUENCE", "UNPACK_EX",
                                                             "LOAD_METHOD") else 1)
            if depth < pushes:
                return None  # computed here: not a variable's value
            depth -= effect
        at -= 1
    return None


def plan(code: types.CodeType) -> CodePlan:
    instructions = list(dis.get_instructions(code))
    line_of: list[int] = []
    line = code.co_firstlineno
    for ins in instructions:
        line = ins.starts_line if ins.starts_line is not None else line
        line_of.append(line)
    subscripts: dict[int, Access] = {}
    containers: set[tuple[int, str]] = set()
    for index, ins in enumerate(instructions):
        verb = _SUBSCRIPTS.get(ins.opname)
        if verb is None:
            continue
        container = producer(instructions, index, _CONTAINER_DEPTH[ins.opname])
        if container is not None and container.root != "LOAD_CONST":
            key = producer(instructions, index, 0) if ins.opname in _KEYED else None
            subscripts[ins.offset] = Access(verb, container, key)
            containers.add((line_of[index], container.text()))
    lines: dict[int, list[Chain]] = {}
    for index, ins in enumerate(instructions):
        last = index + 1 == len(instructions) or instructions[index + 1].opname != "LOAD_ATTR"
        loaded: Chain | None
        if ins.opname in _ROOTS and last:
            loaded = Chain(ins.opname, str(ins.argval))
        elif ins.opname == "LOAD_ATTR" and last:
            loaded = producer(instructions, index + 1, 0)
        elif ins.opname == "LOAD_METHOD":
            loaded = producer(instructions, index, 0)
        else:
            continue
        if loaded is not None and (line_of[index], loaded.text()) not in containers:
            found = lines.setdefault(line_of[index], [])
            if loaded not in found:
                found.append(loaded)
    return CodePlan(subscripts, {line: tuple(chains) for line, chains in lines.items()})


def byte_bounds(array: Any) -> tuple[int, int]:
    """[low, high) of the memory ``array`` spans, strides and all."""
    interface = array.__array_interface__
    low = high = int(interface["data"][0])
    strides = array.strides
    for extent, stride in zip(array.shape, strides, strict=True):
        if extent == 0:
            return low, low
        if stride < 0:
            low += stride * (extent - 1)
        else:
            high += stride * (extent - 1)
    return low, high + array.itemsize


def _attribute(obj: object, name: str) -> object:
    """``obj.name`` if reading it runs no code of the program, else ``_MISSING``."""
    try:
        found = object.__getattribute__(obj, "__dict__")
        if isinstance(found, dict) and name in found:
            return found[name]
    except AttributeError:
        pass
    for klass in type(obj).__mro__:
        if name in vars(klass):
            attr = vars(klass)[name]
            if isinstance(attr, (types.GetSetDescriptorType, types.MemberDescriptorType)):
                return getattr(obj, name, _MISSING)
            if isinstance(attr, property) and (klass.__name__, name) in _SAFE_PROPERTIES \
                    and klass.__module__ == "multiprocessing.shared_memory":
                return getattr(obj, name, _MISSING)
            if hasattr(attr, "__get__"):
                return _MISSING  # a method or a property: not a container
            return attr
    return _MISSING


def resolve(frame: types.FrameType, chain: Chain) -> object:
    if chain.root == "LOAD_CONST":
        return chain.const
    if chain.root == "LOAD_GLOBAL":
        obj = frame.f_globals.get(chain.name, _MISSING)
    elif chain.root == "LOAD_NAME":
        obj = frame.f_locals.get(chain.name, frame.f_globals.get(chain.name, _MISSING))
    else:
        obj = frame.f_locals.get(chain.name, _MISSING)
    for attr in chain.attrs:
        if obj is _MISSING:
            break
        obj = _attribute(obj, attr)
    return obj


_NOT_PROJECT = {"site-packages", "dist-packages", "__pycache__", "node_modules"}
"""Folders under a traced folder whose code is not the project's (a venv inside it, say)."""


def _item(value: object) -> object:
    """A numpy scalar as the Python number a step can record (numpy only if loaded)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic):
        return value.item()
    return value


def _index(key: object) -> int:
    """The element a key names, or -1 (a slice, a tuple, something else)."""
    key = _item(key)
    return key if isinstance(key, int) and not isinstance(key, bool) and key >= 0 else -1


def span(obj: object) -> tuple[int, int] | None:
    """[low, high) of the memory a buffer spans, or None if it has no buffer (or none of
    its own that can be located). A numpy array by its interface (strides and all); any
    other buffer (a memoryview, an mmap, a ctypes object) through ctypes, so numpy need
    not be imported for code that does not use it."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, numpy.ndarray):
        return byte_bounds(obj)
    try:
        view = memoryview(obj)  # type: ignore[arg-type]
    except TypeError:
        return None
    with view:
        size = view.nbytes
        if not size:
            return None
        try:
            anchor = ctypes.c_char.from_buffer(view)
        except (TypeError, ValueError, BufferError):  # read-only or not contiguous
            return None
        address = ctypes.addressof(anchor)
        del anchor  # the export must end before the view is released
    return address, address + size


class Tracer:
    """The tracing of one runtime: which code is traced, and the points it takes."""

    def __init__(self, runtime: PlainRuntime, roots: Sequence[str]) -> None:
        self._runtime = runtime
        self._roots = tuple(roots)
        self._plans: dict[types.CodeType, CodePlan | None] = {}
        self._skip = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      os.path.dirname(os.path.abspath(dis.__file__)) + os.sep + "multiprocessing")
        self._stdlib = os.path.dirname(os.path.abspath(dis.__file__)) + os.sep
        self._foreign_files: dict[str, bool] = {}

    def install(self) -> None:
        """Trace every call from now on, and the traced frames already running (the
        scenario that has just created a segment goes on in the frame that did)."""
        sys.settrace(self._call)
        frame = sys._getframe(1)
        while frame is not None:
            code_plan = self._plan(frame.f_code)
            if code_plan is not None and (code_plan.subscripts or code_plan.lines):
                frame.f_trace = self._local(code_plan)
                frame.f_trace_opcodes = bool(code_plan.subscripts)
            frame = frame.f_back  # type: ignore[assignment]

    def _foreign(self, code: types.CodeType) -> bool:
        """Untraced code that is neither shmstress's, nor ``multiprocessing``'s, nor the
        standard library's: a library's, whose shared accesses are no steps."""
        filename = code.co_filename
        foreign = self._foreign_files.get(filename)
        if foreign is None:
            path = os.path.abspath(filename)
            foreign = self._foreign_files[filename] = not (
                filename.startswith("<") or path.startswith(self._skip)
                or (path.startswith(self._stdlib) and "-packages" + os.sep not in path))
        return foreign

    def traced(self, filename: str) -> bool:
        """Is the code in ``filename`` traced: under a root, not shmstress's or
        multiprocessing's own, and not in a folder under the root that holds other
        people's code (a ``.venv``, ``site-packages``) unless the root names it itself."""
        if filename.startswith("<"):
            return False
        filename = os.path.abspath(filename)
        if filename.startswith(self._skip):
            return False
        for root in self._roots:
            if filename == root:
                return True
            if not filename.startswith(root):
                continue
            folders = filename[len(root):].split(os.sep)[:-1]
            if not any(part.startswith(".") or part in _NOT_PROJECT for part in folders):
                return True
        return False

    def _plan(self, code: types.CodeType) -> CodePlan | None:
        found = self._plans.get(code, _MISSING)
        if found is _MISSING:
            found = self._plans[code] = plan(code) if self.traced(code.co_filename) else None
        return found  # type: ignore[return-value]

    def _call(self, frame: types.FrameType, event: str, arg: object) -> Callable[..., Any] | None:
        runtime = self._runtime
        code_plan = self._plan(frame.f_code)
        if runtime.free is not None:
            caller = frame.f_back
            if caller is not None and not plumbing(caller):  # the program calls: it runs
                runtime.step_done()
                if code_plan is None and self._foreign(frame.f_code):
                    runtime.ran_loose()
                    runtime.at_library_door()
        if code_plan is None or not (code_plan.subscripts or code_plan.lines):
            return None
        frame.f_trace_opcodes = bool(code_plan.subscripts)  # opcodes cost: only if needed
        return self._local(code_plan)

    def _local(self, code_plan: CodePlan) -> Callable[..., Any]:
        """The trace function of one frame. A read's step records the element's index and
        the value it reads; a write's, the value it stored, read back at the frame's next
        instruction (once the write is done)."""
        subscripts = code_plan.subscripts
        lines = code_plan.lines
        runtime = self._runtime
        written: list[Any] = []  # (step, container, key) of a write not yet read back
        used = [False]  # this frame took a "use" step, whose line is not over yet
        check = runtime.check

        def local(frame: types.FrameType, event: str, arg: object) -> Callable[..., Any]:
            if used[0] and event != "opcode" and check is not None:
                used[0] = False  # the line the step stands for is over: so is its leave
                if check.wrote:
                    check.settle()
            if written:
                step, container, key = written.pop()
                runtime.note(step, _element(container, key), _index(key))
            runtime.step_done()  # free mode: the access is over (a no-op otherwise)
            if event == "opcode":
                access = subscripts.get(frame.f_lasti)
                if access is not None:
                    container = resolve(frame, access.container)
                    if self._shared(container):
                        key = _MISSING if access.key is None else resolve(frame, access.key)
                        step = runtime.point(f"{access.verb} {access.container.text()}[]")
                        if access.verb == "read":
                            runtime.note(step, _element(container, key), _index(key))
                        elif key is not _MISSING:
                            written.append((step, container, key))
            elif event == "line":
                for chain in lines.get(frame.f_lineno, ()):
                    if self._shared(resolve(frame, chain)):
                        runtime.point(f"use {chain.text()}")
                        used[0] = True
                        break
            return local

        return local

    def _shared(self, obj: object) -> bool:
        if obj is _MISSING or isinstance(obj, _PLAIN) or hasattr(obj, "_shm_name") \
                or hasattr(obj, "get_lock"):
            return False  # plain values, or instrumented objects that take points themselves
        bounds = span(obj)
        return bounds is not None and self._runtime.is_shared(*bounds)


def _element(container: Any, key: object) -> object:
    """``container[key]`` if the key names one element of a buffer, else nothing (a slice
    or a row is not a value a step can record; reading it runs no code of the program)."""
    if _index(key) < 0:
        return None
    try:
        return _item(container[key])
    except (IndexError, TypeError, ValueError):
        return None


def trace_roots(targets: Sequence[str]) -> list[str]:
    """Files and folders of the named packages, modules, files and folders; one-line
    ``ScenarioError`` for a name that is none of them."""
    roots = []
    for target in targets:
        path = Path(target)
        if path.exists():
            roots.append(str(path.resolve()) + (os.sep if path.is_dir() else ""))
            continue
        try:
            spec = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            spec = None
        if spec is None or spec.origin is None:
            raise ScenarioError(f"--trace {target}: no such file, folder, module or package")
        if spec.submodule_search_locations:
            roots.extend(str(Path(location).resolve()) + os.sep
                         for location in spec.submodule_search_locations)
        else:
            roots.append(str(Path(spec.origin).resolve()))
    return roots
