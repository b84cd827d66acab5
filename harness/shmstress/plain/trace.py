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

import dis
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shmstress.core.errors import ScenarioError
from shmstress.plain.runtime import PlainRuntime

PLUMBING = True

_ROOTS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME"}
_SUBSCRIPTS = {"BINARY_SUBSCR": "read", "STORE_SUBSCR": "write", "DELETE_SUBSCR": "write",
               "BINARY_SLICE": "read", "STORE_SLICE": "write"}
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

    def text(self) -> str:
        return ".".join((self.name, *self.attrs))


@dataclass(frozen=True)
class CodePlan:
    subscripts: dict[int, tuple[str, Chain]]  # offset -> (read or write, container)
    lines: dict[int, tuple[Chain, ...]]  # line -> the other objects the line loads


def producer(instructions: Sequence[dis.Instruction], index: int, depth: int) -> Chain | None:
    """What pushed the value at ``depth`` of the stack just before ``instructions[index]``."""
    at = index - 1
    while at >= 0:
        ins = instructions[at]
        if instructions[at + 1].is_jump_target or ins.opname.startswith(_STOPS):
            return None
        op = ins.opname
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
    subscripts: dict[int, tuple[str, Chain]] = {}
    containers: set[tuple[int, str]] = set()
    for index, ins in enumerate(instructions):
        verb = _SUBSCRIPTS.get(ins.opname)
        if verb is None:
            continue
        container = producer(instructions, index, _CONTAINER_DEPTH[ins.opname])
        if container is not None:
            subscripts[ins.offset] = (verb, container)
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


def byte_bounds(array: np.ndarray) -> tuple[int, int]:
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


class Tracer:
    """The ``--trace`` of one runtime: which code is traced, and the points it takes."""

    def __init__(self, runtime: PlainRuntime, roots: Sequence[str]) -> None:
        self._runtime = runtime
        self._roots = tuple(roots)
        self._plans: dict[types.CodeType, CodePlan | None] = {}
        self._skip = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      os.path.dirname(os.path.abspath(dis.__file__)) + os.sep + "multiprocessing")

    def install(self) -> None:
        sys.settrace(self._call)

    def _plan(self, code: types.CodeType) -> CodePlan | None:
        found = self._plans.get(code, _MISSING)
        if found is _MISSING:
            filename = os.path.abspath(code.co_filename)
            traced = filename.startswith(self._roots) and not filename.startswith(self._skip)
            found = self._plans[code] = plan(code) if traced else None
        return found  # type: ignore[return-value]

    def _call(self, frame: types.FrameType, event: str, arg: object) -> Callable[..., Any] | None:
        code_plan = self._plan(frame.f_code)
        if code_plan is None:
            return None
        frame.f_trace_opcodes = True
        return self._local(code_plan)

    def _local(self, code_plan: CodePlan) -> Callable[..., Any]:
        subscripts = code_plan.subscripts
        lines = code_plan.lines
        runtime = self._runtime

        def local(frame: types.FrameType, event: str, arg: object) -> Callable[..., Any]:
            if event == "opcode":
                access = subscripts.get(frame.f_lasti)
                if access is not None:
                    verb, chain = access
                    if self._shared(resolve(frame, chain)):
                        runtime.point(f"{verb} {chain.text()}[]")
            elif event == "line":
                for chain in lines.get(frame.f_lineno, ()):
                    if self._shared(resolve(frame, chain)):
                        runtime.point(f"use {chain.text()}")
                        break
            return local

        return local

    def _shared(self, obj: object) -> bool:
        if obj is _MISSING or isinstance(obj, _PLAIN) or hasattr(obj, "_shm_name") \
                or hasattr(obj, "get_lock"):
            return False  # plain values, or instrumented objects that take points themselves
        try:
            view = obj if isinstance(obj, np.ndarray) else np.frombuffer(
                obj, dtype=np.uint8)  # type: ignore[call-overload]
        except (TypeError, ValueError, BufferError):
            return False
        low, high = byte_bounds(view)
        return self._runtime.is_shared(low, high)


def trace_roots(targets: Sequence[str]) -> list[str]:
    """Files and folders of the named packages, modules, files and folders; one-line
    ``ScenarioError`` for a name that is none of them."""
    roots = []
    for target in targets:
        path = Path(target)
        if path.exists():
            roots.append(str(path.resolve()))
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
