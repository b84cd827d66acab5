"""``multiprocessing.managers`` under control: the server's work folded into its callers.

A real manager is a server process with a thread per connection: each proxy call is a
request over a socket, the server runs the method on its object (one call at a time,
under the GIL) and sends a copy of the result back. Run as it is, that server is a
process the scheduler would have to drive through sockets and threads it does not see,
and every execution would fork it (an execution's cost is its forks). So there is no
server: a proxy call is one step of the calling process, which loads the object's
pickle from the manager's store (``manager_store``), calls the method, and stores the
pickle back before its next point, so nothing else touches the object meanwhile, as
nothing else did in the server. The caller gets a copy, as it did: ``d["l"].append(1)``
changes nothing shared, and ``d["n"] = d["n"] + 1`` is two steps with room for another
process's between them. A step is labelled with the object and the method
(``call d.__setitem__('n')``) and records the value read or written.

The blocking objects of a ``SyncManager`` (``Lock``, ``Event``, ``Condition``,
``Barrier``, ``Queue``...) are the instrumented ``multiprocessing`` ones, made by the
manager's context when asked for (whatever the engine installed there), so a process
that blocks on one waits in a way the scheduler knows and names. Like proxies, they
pickle (a queue can carry them) and take ``acquire(blocking=...)``.

What the server would run that cannot be run this way is refused in one line, never
run out of control (``UncontrolledError``): an object that does not pickle, a method
that takes steps of its own while another process changes the same object, an
``initializer`` for the server process, a manager served at an address
(``connect``, ``get_server``).

``SharedMemoryManager`` makes its segments with the instrumented ``SharedMemory`` and
``ShareableList`` (in the segment table, so unlinked after each execution whatever
happens) and unlinks them at ``shutdown``, as its server does.

``manager_classes`` builds the family for one runtime; ``patch.install`` puts it in
``multiprocessing.managers``, where ``mp.Manager()``, a context's ``Manager()`` and
``from multiprocessing.managers import ...`` find it. The referents' own types
(``Namespace``, ``Value``, ``Array``) and ``Token`` stay the real ones.
"""

from __future__ import annotations

import contextlib
import importlib
import pickle
from collections.abc import Callable
from multiprocessing import shared_memory
from types import TracebackType
from typing import Any, ClassVar

from shmstress.core.errors import UncontrolledError
from shmstress.plain.board import Kind
from shmstress.plain.runtime import PlainRuntime
from shmstress.plain.sync.base import Primitive
from shmstress.plain.sync.manager_store import Store, Stores, gone

PLUMBING = True

MODULE = "multiprocessing.managers"
_real = importlib.import_module(MODULE)  # before patch.install: the real classes
_mp = importlib.import_module("multiprocessing")
_util = importlib.import_module("multiprocessing.util")
_shm_unlink: Callable[[str], None] = importlib.import_module("_posixshmem").shm_unlink
_REAL_PROXY: type = _real.BaseProxy
_Token: Any = _real.Token
_State: Any = _real.State
_public_methods: Callable[[object], list[str]] = _real.public_methods

_PROXY_TYPES = ("IteratorProxy", "AcquirerProxy", "ConditionProxy", "EventProxy",
                "BarrierProxy", "NamespaceProxy", "ValueProxy", "BaseListProxy", "ListProxy",
                "DictProxy", "ArrayProxy", "BasePoolProxy", "PoolProxy")
"""The real proxy types, rebuilt over this module's ``BaseProxy`` (their methods only
call ``_callmethod``)."""
_DATA = (("list", list, "ListProxy"), ("dict", dict, "DictProxy"),
         ("Value", _real.Value, "ValueProxy"), ("Array", _real.Array, "ArrayProxy"),
         ("Namespace", _real.Namespace, "NamespaceProxy"))
_SYNC = {"Queue": "JoinableQueue", "JoinableQueue": "JoinableQueue", "Event": "Event",
         "Lock": "Lock", "RLock": "RLock", "Semaphore": "Semaphore",
         "BoundedSemaphore": "BoundedSemaphore", "Condition": "Condition",
         "Barrier": "Barrier", "Pool": "Pool"}
"""SyncManager's blocking typeids -> the context's factory that makes them (a manager's
``Queue`` is a ``queue.Queue``, which has ``task_done`` and ``join``)."""
_KEYED = frozenset(("__getitem__", "__setitem__", "__delitem__", "__contains__", "get", "pop",
                    "setdefault", "__getattribute__", "__setattr__", "__delattr__"))
_SHOWN_KEY = 40  # a longer key is left out of the step's label
_VIEWS = frozenset((type({}.keys()), type({}.values()), type({}.items())))  # pickled as lists
_FALLBACKS = ("__str__", "__repr__")  # served whether exposed or not, as the server does


def _label(name: str, methodname: str, args: tuple[Any, ...]) -> str:
    """``call d.__setitem__('n')``: the key when it is a short string. Not an int key: it
    may be a pid (``results[os.getpid()] = ...``), and a replay, whose pids differ, must
    find the labels it recorded."""
    if methodname == "#GETVALUE":
        return f"call {name}._getvalue"
    if methodname in _KEYED and args and type(args[0]) is str:
        shown = repr(args[0])
        if len(shown) <= _SHOWN_KEY:
            return f"call {name}.{methodname}({shown})"
    return f"call {name}.{methodname}"


def _pickled(obj: object, what: str) -> bytes:
    try:
        return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise UncontrolledError(
            f"shmstress: {what} cannot be kept by its manager under control: it does not "
            f"pickle ({type(exc).__name__}: {exc}); the real server would hold it in its own "
            "memory, which shmstress does not run") from None


def _stored(store: Store, typeid: str, obj: object, exposed: Any,
            method_to_typeid: dict[str, str] | None) -> tuple[Any, Any]:
    """A new object of the manager: its row, its pickle; (token, exposed), as the real
    server's ``create`` answers."""
    if exposed is None:
        exposed = _public_methods(obj)
    if method_to_typeid:
        exposed = list(exposed) + list(method_to_typeid)
    row, name = store.new_row(typeid.lower())
    store.keep(row, _pickled(obj, f"{type(obj).__name__} {name}"), name)
    return _Token(typeid, store.name, row), exposed


def _proxy_for(proxytype: Callable[..., Any], token: Any, exposed: Any,
               method_to_typeid: dict[str, str] | None, manager: BaseManager | None) -> Any:
    proxy = proxytype(token, "pickle" if manager is None else manager._serializer,
                      manager=manager, authkey=None if manager is None else manager._authkey,
                      exposed=exposed)
    proxy._shm_calls = (exposed, method_to_typeid)
    return proxy


# -- proxies --------------------------------------------------------------------------------
class BaseProxy:
    """A proxy whose every call is one step of the calling process (module docstring)."""

    _stores: ClassVar[Stores]
    _auto: ClassVar[Callable[..., Any]]

    def __init__(self, token: Any, serializer: str = "pickle", manager: BaseManager | None = None,
                 authkey: Any = None, exposed: Any = None, incref: bool = True,
                 manager_owned: bool = False) -> None:
        self._token = token
        self._id: int = token.id
        self._manager = manager
        self._serializer = serializer
        self._authkey = authkey
        self._owned_by_manager = manager_owned
        self._shm_store = self._stores.attach(token.address)
        self._shm_name = self._shm_store.object_name(token.id)
        self._shm_calls: tuple[Any, dict[str, str] | None] = (
            exposed, getattr(type(self), "_method_to_typeid_", None))

    def _callmethod(self, methodname: str, args: tuple[Any, ...] = (),
                    kwds: dict[str, Any] | None = None) -> Any:
        """The step: load the object, call, store it back; a copy of the result."""
        store = self._shm_store
        runtime = store.runtime
        step = runtime.point(_label(self._shm_name, methodname, args))
        if store.shut_down:
            raise gone(self._shm_name)
        row = self._id
        version = store.version(row)
        referent = pickle.loads(store.pickled(row))
        if methodname == "#GETVALUE":
            return referent
        exposed, method_to_typeid = self._shm_calls
        if exposed is not None and methodname not in exposed and methodname not in _FALLBACKS:
            raise AttributeError(f"method {methodname!r} of {type(referent)!r} object is not in "
                                 f"exposed={exposed!r}")
        try:
            result = getattr(referent, methodname)(*args, **(kwds or {}))
        finally:
            self._keep(referent, version, methodname)
        runtime.note(step, result if result is not None else (args[-1] if args else None))
        typeid = method_to_typeid.get(methodname) if method_to_typeid else None
        if typeid is not None:
            return self._proxy_of(typeid, result)
        return list(result) if type(result) in _VIEWS else result

    def _keep(self, referent: object, version: int, methodname: str) -> None:
        store, row, name = self._shm_store, self._id, self._shm_name
        data = _pickled(referent, f"{type(referent).__name__} {name}")
        if store.version(row) != version:
            raise UncontrolledError(
                f"shmstress: {type(referent).__name__}.{methodname} on {name} took steps of its "
                f"own (a lock, a sleep, another proxy) while another process changed {name}: "
                "the manager's call is no longer one step, which shmstress cannot control")
        if store.pickled(row) != data:
            store.keep(row, data, name)

    def _proxy_of(self, typeid: str, result: Any) -> Any:
        """What a method listed in ``method_to_typeid`` returns: a new object, proxied."""
        if typeid == "Iterator":  # an iterator does not pickle: its items, taken now
            return iter(list(result))
        manager = self._manager
        entry = manager._registry.get(typeid) if manager is not None else None
        _, exposed, method_to_typeid, proxytype = entry or (None, None, None, self._auto)
        token, exposed = _stored(self._shm_store, typeid, result, exposed, method_to_typeid)
        return _proxy_for(proxytype, token, exposed, method_to_typeid, manager)

    def _getvalue(self) -> Any:
        return self._callmethod("#GETVALUE")

    def __reduce__(self) -> tuple[Any, ...]:
        if getattr(self, "_isauto", False):
            return (RebuildProxy, (self._auto, self._token, self._serializer,
                                   {"exposed": getattr(self, "_exposed_", None)},
                                   self._shm_calls))
        return RebuildProxy, (type(self), self._token, self._serializer, {}, self._shm_calls)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self._getvalue()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object, typeid {self._token.typeid!r} at {id(self):#x}>"

    def __str__(self) -> str:
        try:
            return str(self._callmethod("__repr__"))
        except Exception:
            return repr(self)[:-1] + "; '__str__()' failed>"


def RebuildProxy(func: Callable[..., Any], token: Any, serializer: str,  # noqa: N802 - real name
                 kwds: dict[str, Any], calls: tuple[Any, Any]) -> Any:
    """A proxy that arrived pickled (through a queue, a pipe, bytes of the scenario's own)."""
    proxy = func(token, serializer, incref=False, **kwds)
    proxy._shm_calls = calls
    return proxy


def _rebased(real: type, rebuilt: dict[type, type]) -> type:
    """The real proxy type ``real`` over our ``BaseProxy`` (its bases rebuilt first). The
    methods the real ``MakeProxyType`` wrote with ``exec`` are written again here: a step's
    place in the code is the first frame outside the harness and ``multiprocessing``,
    which theirs (file "<string>") would be."""
    attributes = {key: _forwarding(key) if _written(value) else value
                  for key, value in vars(real).items() if key not in ("__dict__", "__weakref__")}
    attributes["__module__"] = MODULE
    return type(real.__name__, tuple(rebuilt[base] for base in real.__bases__), attributes)


def _written(value: object) -> bool:
    code = getattr(value, "__code__", None)
    return code is not None and code.co_filename == "<string>"


def _forwarding(methodname: str) -> Callable[..., Any]:
    def forward(self: BaseProxy, /, *args: Any, **kwds: Any) -> Any:
        return self._callmethod(methodname, args, kwds)

    forward.__name__ = methodname
    return forward


def _proxy_type_maker(base: type) -> Callable[..., type]:
    made: dict[tuple[str, tuple[str, ...]], type] = {}

    def MakeProxyType(name: str, exposed: Any) -> type:  # noqa: N802 - the real name
        exposed = tuple(exposed)
        found = made.get((name, exposed))
        if found is None:
            attributes: dict[str, Any] = {meth: _forwarding(meth) for meth in exposed}
            attributes.update(_exposed_=exposed, __module__=MODULE)
            found = made[(name, exposed)] = type(name, (base,), attributes)
        return found

    MakeProxyType.__module__, MakeProxyType.__qualname__ = MODULE, "MakeProxyType"
    return MakeProxyType


def _auto_proxy(make: Callable[..., type], stores: Stores) -> Callable[..., Any]:
    def AutoProxy(token: Any, serializer: str, manager: BaseManager | None = None,  # noqa: N802
                  authkey: Any = None, exposed: Any = None, incref: bool = True,
                  manager_owned: bool = False) -> Any:
        if exposed is None:  # the server would look at the object: so do we
            store = stores.attach(token.address)
            exposed = _public_methods(pickle.loads(store.pickled(token.id)))
        proxy = make(f"AutoProxy[{token.typeid}]", exposed)(
            token, serializer, manager=manager, authkey=authkey, exposed=exposed)
        proxy._isauto = True
        return proxy

    AutoProxy.__module__, AutoProxy.__qualname__ = MODULE, "AutoProxy"  # pickled by name
    return AutoProxy


# -- what a manager's blocking objects add ------------------------------------------------
class _Shared:
    """A manager's lock, event, condition...: the instrumented one, which also pickles (a
    proxy does: a queue can carry it) and takes ``acquire(blocking=...)``."""

    _shm_base: ClassVar[type]

    def __reduce__(self) -> tuple[Any, ...]:
        state = {key: value for key, value in vars(self).items() if key != "_fields"}
        return _rebuilt, (self._shm_base.__name__, state)


def _acquire(self: Any, blocking: bool = True, timeout: float | None = None) -> bool:
    return bool(self._shm_base.acquire(self, blocking, timeout))


def _shared_class(base: type) -> type:
    """``base`` as a manager makes it (made once, kept on ``base``)."""
    found: type | None = base.__dict__.get("_shm_shared")
    if found is None:
        attributes: dict[str, Any] = {"_shm_base": base, "__module__": base.__module__}
        if hasattr(base, "acquire"):
            attributes["acquire"] = _acquire
        found = type(base.__name__, (_Shared, base), attributes)
        setattr(base, "_shm_shared", found)  # noqa: B010 - a name mypy does not know
    return found


def _shareable(obj: Any) -> Any:
    """``obj``, made a manager's (with the primitives it holds: a condition's lock)."""
    if isinstance(obj, Primitive) and not isinstance(obj, _Shared):
        for value in list(vars(obj).values()):
            _shareable(value)
        obj.__class__ = _shared_class(type(obj))
    return obj


def _rebuilt(name: str, state: dict[str, Any]) -> Any:
    """A manager's primitive that arrived pickled: the same row of the object table."""
    cls = getattr(importlib.import_module("multiprocessing.synchronize"), name)
    obj = cls.__new__(cls)
    vars(obj).update(state)
    obj._fields = cls._runtime.board.objects.mv  # the view ``Primitive`` reads its row through
    return _shareable(obj)


# -- managers -------------------------------------------------------------------------------
class BaseManager:
    """A manager with no server process: its objects are in its store (module docstring)."""

    _registry: ClassVar[dict[str, tuple[Any, Any, Any, Any]]] = {}
    _stores: ClassVar[Stores]
    _auto: ClassVar[Callable[..., Any]]
    shutdown: Callable[[], None]  # set by ``start``, as the real one's

    def __init__(self, address: Any = None, authkey: Any = None, serializer: str = "pickle",
                 ctx: Any = None, *, shutdown_timeout: float = 1.0) -> None:
        self._address = address
        self._authkey = authkey
        self._serializer = serializer
        self._ctx = ctx or _mp.get_context()
        self._shutdown_timeout = shutdown_timeout
        self._state = _State()
        self._state.value = _State.INITIAL
        self._process = None
        self._shm_store: Store | None = None
        self._shm_row, self._shm_name = self._stores.runtime.new_object(Kind.MANAGER, "manager")

    def _check_initial(self) -> None:
        if self._state.value == _State.STARTED:
            raise _mp.ProcessError("Already started server")
        if self._state.value == _State.SHUTDOWN:
            raise _mp.ProcessError("Manager has shut down")

    def start(self, initializer: Callable[..., object] | None = None,
              initargs: tuple[Any, ...] = ()) -> None:
        self._check_initial()
        if initializer is not None:
            if not callable(initializer):
                raise TypeError("initializer must be a callable")
            raise UncontrolledError(
                f"shmstress: {self._shm_name}.start(initializer=...) runs code in the "
                "manager's server process; shmstress runs a manager's calls in its callers, "
                "so that code would not run as it does for real")
        store = self._shm_store = self._stores.create(self._shm_row)
        store.keep(self._shm_row, _pickled([], "a manager's segment list"), self._shm_name)
        self._state.value = _State.STARTED
        self.shutdown = _util.Finalize(self, _shut_down, args=(store, self._shm_row,
                                                                self._state, self._shm_name),
                                       exitpriority=0)

    def _live(self) -> Store:
        """The store of a started manager that has not shut down."""
        store = self._shm_store
        if store is None or self._state.value == _State.INITIAL:
            raise AssertionError("server not yet started")
        if store.shut_down:
            raise gone(self._shm_name)
        return store

    def _create(self, typeid: str, /, *args: Any, **kwds: Any) -> tuple[Any, Any]:
        store = self._live()
        factory, exposed, method_to_typeid, _ = self._registry[typeid]
        if factory is None:
            if kwds or len(args) != 1:
                raise ValueError("Without callable, must have one non-keyword argument")
            obj = args[0]
        else:
            obj = factory(*args, **kwds)
        return _stored(store, typeid, obj, exposed, method_to_typeid)

    def connect(self) -> None:
        raise UncontrolledError(self._served("connect()"))

    def get_server(self) -> Any:
        raise UncontrolledError(self._served("get_server()"))

    def _served(self, what: str) -> str:
        return (f"shmstress: {self._shm_name}.{what} reaches a manager served at an address, "
                "a process shmstress does not run; only managers the scenario starts are "
                "under control")

    def join(self, timeout: float | None = None) -> None:
        """There is no server process to join."""

    @property
    def address(self) -> Any:
        store = self._shm_store
        return self._address if self._address is not None or store is None else store.name

    def __enter__(self) -> BaseManager:
        if self._state.value == _State.INITIAL:
            self.start()
        if self._state.value != _State.STARTED:
            raise _mp.ProcessError("Manager has shut down")
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.shutdown()

    @classmethod
    def register(cls, typeid: str, callable: Any = None, proxytype: Any = None,
                 exposed: Any = None, method_to_typeid: dict[str, str] | None = None,
                 create_method: bool = True) -> None:
        if "_registry" not in cls.__dict__:
            cls._registry = cls._registry.copy()
        if proxytype is None:
            proxytype = cls._auto
        exposed = exposed or getattr(proxytype, "_exposed_", None)
        method_to_typeid = method_to_typeid or getattr(proxytype, "_method_to_typeid_", None)
        for key, value in (method_to_typeid or {}).items():
            if type(key) is not str or type(value) is not str:
                raise TypeError(f"method_to_typeid: {key!r}: {value!r} is not str: str")
        cls._registry[typeid] = (callable, exposed, method_to_typeid, proxytype)
        if create_method:
            setattr(cls, typeid, _creator(typeid, proxytype, method_to_typeid))


def _creator(typeid: str, proxytype: Callable[..., Any],
             method_to_typeid: dict[str, str] | None) -> Callable[..., Any]:
    def create(self: BaseManager, /, *args: Any, **kwds: Any) -> Any:
        token, exposed = self._create(typeid, *args, **kwds)
        return _proxy_for(proxytype, token, exposed, method_to_typeid, self)

    create.__name__ = typeid
    return create


def _live_object(typeid: str, factory: str) -> Callable[..., Any]:
    def create(self: BaseManager, /, *args: Any, **kwds: Any) -> Any:
        self._live()
        return _shareable(getattr(self._ctx, factory)(*args, **kwds))

    create.__name__ = typeid
    return create


def _shut_down(store: Store, row: int, state: Any, name: str) -> None:
    """The manager's finalizer (``shutdown``, ``__exit__``, exit of the process that
    started it): one step; the segments it made and its store are unlinked."""
    store.runtime.point(f"shut down {name}")
    for segment in pickle.loads(store.pickled(row)):
        _unlink(store.runtime, segment)
    store.shut()
    state.value = _State.SHUTDOWN


def _unlink(runtime: PlainRuntime, segment: str) -> None:
    with contextlib.suppress(FileNotFoundError):  # the scenario may have unlinked it first
        _shm_unlink(segment)
    runtime.unlinked_segment(segment)


class SharedMemoryManager(BaseManager):
    """Segments made through it are unlinked when it shuts down."""

    def SharedMemory(self, size: int) -> Any:  # noqa: N802 - the real name
        self._live()
        made = shared_memory.SharedMemory(None, create=True, size=size)  # the installed class
        self._track(getattr(made, "_name"))  # noqa: B009 - as the segment table has it
        return made

    def ShareableList(self, sequence: Any) -> Any:  # noqa: N802 - the real name
        self._live()
        made = shared_memory.ShareableList(sequence)
        self._track(getattr(made.shm, "_name"))  # noqa: B009
        return made

    def _track(self, segment: str) -> None:
        store = self._live()
        store.runtime.point(f"call {self._shm_name}.track_segment")
        if store.shut_down:  # it shut down meanwhile: the real one unlinks and raises
            _unlink(store.runtime, segment)
            raise gone(self._shm_name)
        segments = pickle.loads(store.pickled(self._shm_row))
        segments.append(segment)
        store.keep(self._shm_row, _pickled(segments, "a manager's segment list"), self._shm_name)


def manager_classes(runtime: PlainRuntime) -> dict[str, Any]:
    """The module attributes of ``multiprocessing.managers`` for one runtime."""
    stores = Stores(runtime)
    proxy = type("BaseProxy", (BaseProxy,), {"_stores": stores, "__module__": MODULE})
    rebuilt: dict[type, type] = {_REAL_PROXY: proxy}
    for name in _PROXY_TYPES:
        real = getattr(_real, name)
        rebuilt[real] = _rebased(real, rebuilt)
    proxies = {name: rebuilt[getattr(_real, name)] for name in _PROXY_TYPES}
    make = _proxy_type_maker(proxy)
    auto = _auto_proxy(make, stores)
    proxy._auto = staticmethod(auto)  # type: ignore[attr-defined]
    bound = {"_stores": stores, "_auto": staticmethod(auto), "_registry": {}, "__module__": MODULE}
    base = type("BaseManager", (BaseManager,), bound)
    sync = type("SyncManager", (base,), {
        "_registry": {}, "__module__": MODULE,
        **{typeid: _live_object(typeid, factory) for typeid, factory in _SYNC.items()}})
    for typeid, factory, proxytype in _DATA:
        sync.register(typeid, factory, proxies[proxytype])  # type: ignore[attr-defined]
    sync.register("Iterator", proxytype=proxies["IteratorProxy"],  # type: ignore[attr-defined]
                  create_method=False)
    sync.register("AsyncResult", create_method=False)  # type: ignore[attr-defined]
    segments = type("SharedMemoryManager", (SharedMemoryManager, base),
                    {"_registry": {}, "__module__": MODULE})
    return {"BaseProxy": proxy, **proxies, "MakeProxyType": make, "AutoProxy": auto,
            "RebuildProxy": RebuildProxy, "BaseManager": base, "SyncManager": sync,
            "SharedMemoryManager": segments}
