"""The runtime: a device's primary context, kernels compiled and loaded through the module cache,
streams (own or foreign), events, the stream-ordered pool, profiling, and launches validated by
the library before the driver (buffers and pinned host buffers: memory.py)."""
import ctypes
import json
import struct
import os
import threading
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _capi, _native
from ._owned import _Owned, freed
from . import dtypes as dt
from .arrays import FAST, HostArray, describe, packer_for
from .compiler import KernelInfo, _b
from .memory import Buffer, BufferView, HostBuffer
from .diagnostics import Diagnostic, Error, call, check_call, read

if TYPE_CHECKING:  # these modules import this one
    from .graphs import Graph
    from .tensor_map import TensorMap

Dims = Union[int, Sequence[int]]
_FP_MODES = {"contract": 0, "exact": 1, "fast": 2}


class _State(threading.local):
    """What a launch made in this thread without naming a stream uses (``with stream:``), and the
    graph a ``with graph:`` block records into. ``SET`` counts the values set (not None) in all
    threads: while it is 0, the C launch path reads neither."""

    stream = None
    capture = None

    def __setattr__(self, name, value):
        was = getattr(self, name) is not None
        super().__setattr__(name, value)
        SET.value += (value is not None) - was


SET = ctypes.c_long(0)
STATE = _State()


def _dims(v, name) -> Tuple[int, int, int]:
    if isinstance(v, int):
        v = (v,)
    try:
        v = tuple(int(x) for x in v)
    except TypeError:
        v = ()
    if not 1 <= len(v) <= 3 or any(x < 0 for x in v):
        raise Error([Diagnostic("PG5004", "error", f"{name} {v} is not 1 to 3 non-negative counts",
                                fix=f"pass {name} as an int or a tuple of up to 3 ints")])
    return v + (1,) * (3 - len(v))


def _raise_last():
    """Raises the Error of this thread's last failed packed launch."""
    handle = _capi.lib().ptxgate_take_last_diagnostics()
    diags, text = read(handle)
    if not diags:
        diags = [Diagnostic("PG9000", "error", "a launch failed without diagnostics")]
    raise Error(diags, text or None)


def _freed(obj):
    raise freed(obj)


def stream_handle(obj) -> int:
    """The CUstream of a stream object: an int, ``__cuda_stream__()`` (the CUDA stream protocol),
    PyTorch's ``cuda_stream``, CuPy's ``ptr``, Numba's ``handle``."""
    if isinstance(obj, int):
        return obj
    if hasattr(obj, "__cuda_stream__"):
        return int(obj.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr"):
        value = getattr(obj, attr, None)
        if isinstance(value, int):
            return value
    handle = getattr(obj, "handle", None)
    value = getattr(handle, "value", handle)
    if isinstance(value, int):
        return value
    raise Error([Diagnostic("PG5002", "error", f"a {type(obj).__name__} is not a CUDA stream",
                            fix="pass a ptxgate Stream, a torch.cuda.Stream, a cupy.cuda.Stream or a raw CUstream int")])


class Stream(_Owned):
    """A stream of the runtime's context: made by ptxgate (non-blocking), or borrowed from another
    library (a PyTorch or CuPy stream object, or a raw CUstream handle; 0 is the legacy default
    stream). A borrowed stream is never destroyed by ptxgate. ``with stream:`` makes it the stream
    of launches, copies and replays in this thread that name none."""

    _free_name = "ptxgate_stream_free"

    def __init__(self, runtime: "Runtime", foreign: Any = None):
        self._runtime = runtime
        self._handle = ctypes.c_void_p()
        lib = _capi.lib()
        if foreign is None:
            check_call(lib.ptxgate_stream_create, runtime._live(), ctypes.byref(self._handle))
        else:
            check_call(lib.ptxgate_stream_wrap, runtime._live(), stream_handle(foreign), ctypes.byref(self._handle))
        self.borrowed = foreign is not None
        self._foreign = foreign  # keeps the other library's stream alive
        # The CUstream as __cuda_array_interface__ v3 names it (1: the legacy default stream).
        self._cu = lib.ptxgate_stream_handle(self._handle) or 1
        self._outer: List[Optional["Stream"]] = []

    @property
    def handle(self) -> int:
        """The CUstream (0: the legacy default stream)."""
        return _capi.lib().ptxgate_stream_handle(self._live())

    def synchronize(self) -> None:
        check_call(_capi.lib().ptxgate_stream_synchronize, self._live())

    def record(self, event: Optional["Event"] = None) -> "Event":
        """Records ``event`` (a new one when None) on this stream and returns it."""
        event = event if event is not None else Event(self._runtime)
        event.record(self)
        return event

    def wait(self, what: Union["Event", "Stream"]) -> None:
        """Later work on this stream waits for ``what``: an event's recorded work, or everything
        submitted to another stream so far (of any device)."""
        if isinstance(what, Stream):
            what = what.record()
        check_call(_capi.lib().ptxgate_stream_wait_event, self._live(), what._live())

    def __enter__(self):
        self._outer.append(STATE.stream)
        STATE.stream = self
        return self

    def __exit__(self, *exc):
        STATE.stream = self._outer.pop()

    def __repr__(self):
        if not self._handle:
            return "Stream(freed)"
        kind = "borrowed" if self.borrowed else "owned"
        return f"Stream({self.handle:#x}, device {self._runtime.device}, {kind})"


class Event(_Owned):
    """A CUDA event with timing."""

    _free_name = "ptxgate_event_free"

    def __init__(self, runtime: "Runtime"):
        self._runtime = runtime
        self._handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_event_create, runtime._live(), ctypes.byref(self._handle))

    def record(self, stream: Any = None) -> "Event":
        """Records the event on ``stream`` (None: the current stream, else the legacy default)."""
        s = self._runtime._stream_of(stream)
        check_call(_capi.lib().ptxgate_event_record, self._live(), s._handle if s is not None else None)
        return self

    def synchronize(self) -> None:
        check_call(_capi.lib().ptxgate_event_synchronize, self._live())

    def query(self) -> bool:
        """Whether the work recorded before the event is complete (no waiting)."""
        done = ctypes.c_int32()
        check_call(_capi.lib().ptxgate_event_query, self._live(), ctypes.byref(done))
        return bool(done.value)

    def elapsed_ms(self, end: "Event") -> float:
        """Milliseconds from this event to ``end`` (both recorded and complete)."""
        ms = ctypes.c_float()
        check_call(_capi.lib().ptxgate_event_elapsed_ms, self._live(), end._live(), ctypes.byref(ms))
        return ms.value

    def __repr__(self):
        return f"Event(device {self._runtime.device})" if self._handle else "Event(freed)"


class Launcher:
    """``kernel[grid, block]``, ``kernel[grid, block, stream]`` or ``kernel[grid, block, stream,
    shared_bytes]``: call it with the arguments. Its request (geometry, stream) is packed once; a
    call packs the arguments with one ``struct`` call specialised to the types of its arguments
    (arrays read in place, no call per argument; a few type signatures at most), else argument by
    argument, and makes one C call."""

    __slots__ = ("_kernel", "_head", "_head_bytes", "_stream", "_explicit_stream", "_n", "_fn", "_kh", "_pack",
                 "_pack_types", "_packers_made", "_request", "_writes", "_wait")

    def __init__(self, kernel: "Kernel", grid, block=None, stream: Any = None, shared_bytes: int = 0,
                 cooperative: bool = False):
        g = _dims(grid, "grid")
        b = _dims(block, "block") if block is not None else (0, 0, 0)
        self._kernel = kernel
        self._stream = kernel._runtime._stream_of(stream, current=False) if stream is not None else None
        self._explicit_stream = stream is not None
        self._n = len(kernel.info.params)
        flags = (1 << 32) if cooperative else 0
        self._head = [self._n | flags, g[0], g[1], g[2], b[0], b[1], b[2], int(shared_bytes), 0]
        self._head_bytes = array("Q", self._head[:8]).tobytes()
        self._fn = _capi.lib().ptxgate_kernel_launch_packed
        self._kh = kernel._handle
        self._pack = None
        self._pack_types = None
        self._packers_made = 0
        self._request = None  # (stream, bytes) of the last launch of a kernel without parameters
        self._writes = tuple(p.is_buffer and p.access in ("out", "inout") for p in kernel.info.params)
        self._wait = kernel._runtime._wait_producer

    def __call__(self, *args):
        st = STATE
        if st.capture is not None:
            return st.capture._record(self, args)
        s = self._stream if self._explicit_stream else st.stream
        stream = 0 if s is None else (s._handle.value or _freed(s))
        if not args and not self._n:  # a kernel without parameters: the request per stream, made once
            request = self._request
            if request is None or request[0] != stream:
                request = self._request = (stream, self._head_bytes + _STREAM_WORD.pack(stream))
            if self._fn(self._kh, request[1]):
                _raise_last()
            return
        pack = self._pack
        if pack is not None:
            try:
                data = pack(args, self._head_bytes, stream, s, self._wait)
            except (struct.error, ValueError, TypeError, OverflowError):  # a value struct refuses: one by one
                data = None
            if data is not None:
                if self._fn(self._kh, data):
                    _raise_last()
                return
        self._slow(args, s, stream)

    def _slow(self, args, s, stream) -> None:
        """A call the packer did not take: specialise to these types (a few times at most), else
        convert argument by argument, else the general path (which explains what it refuses)."""
        if len(args) == self._n and self._packers_made < _MAX_PACKERS:
            types = tuple(map(type, args))
            if types != self._pack_types:
                self._packers_made += 1
                self._pack_types = types
                self._pack = pack = packer_for(types, self._writes)
                if pack is not None:
                    try:
                        data = pack(args, self._head_bytes, stream, s, self._wait)
                    except (struct.error, ValueError, TypeError, OverflowError):
                        data = None
                    if data is not None:
                        if self._fn(self._kh, data):
                            _raise_last()
                        return
        words = self._head.copy()
        words[8] = stream
        get = _FAST_GET
        for a in args:
            f = get(type(a))
            if f is None or not f(a, words):
                return self._kernel._launch_general(self, args, stream, s)
        if len(args) != self._n:
            words[0] = (words[0] & ~0xFFFFFFFF) | len(args)
        if self._fn(self._kh, array("Q", words).tobytes()):
            _raise_last()

    def __repr__(self):
        h = self._head
        return (f"{self._kernel.name}[grid=({h[1]},{h[2]},{h[3]}), block=({h[4]},{h[5]},{h[6]}), "
                f"shared={h[7]}{', cooperative' if h[0] >> 32 else ''}]")


_FAST_GET = FAST.get
_LAUNCH_KEY = object()  # marks Kernel.launch's keys apart from kernel[...]'s
_MAX_LAUNCHERS = 64  # launch configurations a Kernel remembers (the oldest goes first)
_MAX_PACKERS = 4  # argument type signatures a Launcher specialises to before it stays general
_STREAM_WORD = struct.Struct("<Q")


class _LaunchEntry:
    """The packed launch entry point, resolved once (no argtypes: nothing is converted)."""

    fn = None

    def __call__(self, handle, words):
        fn = _LaunchEntry.fn
        if fn is None:
            fn = _LaunchEntry.fn = _capi.lib().ptxgate_kernel_launch_packed
        return fn(handle, words)


_LAUNCH = _LaunchEntry()


def words_to_args(words: List[int]):
    """A packed request as the C API's ptxgate_launch_config, ptxgate_arg array and stream."""
    n = words[0] & 0xFFFFFFFF
    config = _capi.LaunchConfig()
    for i in range(3):
        config.grid[i] = words[1 + i]
        config.block[i] = words[4 + i]
    config.dynamic_shared_bytes = words[7]
    config.cooperative = 1 if words[0] >> 32 & 1 else 0
    args = (_capi.Arg * max(1, n))()
    for i in range(n):
        value, desc = words[9 + 2 * i], words[10 + 2 * i]
        a = args[i]
        a.kind, a.dtype, a.device, a.elements = desc & 0xF, (desc >> 4) & 0xFF, ((desc >> 12) & 0xFF) - 1, desc >> 20
        if a.kind == _capi.ARG_BUFFER:
            a.buffer = value
        elif a.kind == _capi.ARG_POINTER:
            a.pointer = value
        elif a.kind == _capi.ARG_TENSOR_MAP:
            a.tensor_map = value
        else:
            a.bits = value
    return config, args, n, words[8] or None


class Kernel(_Owned):
    """A compiled kernel loaded in a runtime's context. Launch it with ``kernel[grid, block](*args)``
    (``kernel[grid]`` takes the block from @workgroup, else 256; ``kernel[grid, block, stream,
    shared_bytes]`` as in Numba) or ``kernel.launch(grid, args, block=..., ...)``."""

    _free_name = "ptxgate_kernel_free"

    def __init__(self, runtime: "Runtime", handle: ctypes.c_void_p):
        self._runtime = runtime
        self._handle = handle
        self.info = KernelInfo.from_json(json.loads(_capi.lib().ptxgate_kernel_json(handle)))
        self._launchers: Dict[Any, Any] = {}  # Launchers (the C ones of the extension when it is there)

    @property
    def name(self):
        return self.info.name

    def __getitem__(self, key) -> Launcher:
        try:
            launcher = self._launchers.get(key)
        except TypeError:  # an unhashable stream object: not remembered
            return _native.wrap(Launcher(self, *self._launch_parts(key)))
        if launcher is None:
            launcher = self._remember(key, _native.wrap(Launcher(self, *self._launch_parts(key))))
        return launcher

    def _remember(self, key, launcher):
        """Keeps ``launcher`` for ``key``; past _MAX_LAUNCHERS the oldest goes (a grid sized to the
        data each call must not grow the kernel without bound)."""
        launchers = self._launchers
        if len(launchers) >= _MAX_LAUNCHERS:
            del launchers[next(iter(launchers))]
        launchers[key] = launcher
        return launcher

    @staticmethod
    def _launch_parts(key):
        """(grid, block, stream, shared_bytes) of ``kernel[...]``: ``[grid]``, ``[grid, block]``,
        ``[grid, block, stream]`` or ``[grid, block, stream, shared_bytes]``; grid and block an int
        or a tuple of ints (a 2-D grid alone: ``kernel[(gx, gy), None]``)."""
        if not isinstance(key, tuple):
            return key, None, None, 0
        if not 1 <= len(key) <= 4:
            raise Error([Diagnostic("PG5004", "error", f"kernel[...] takes grid, block, stream, shared_bytes; got {len(key)} items",
                                    fix="write kernel[grid, block] or kernel[grid, block, stream, shared_bytes]")])
        parts = list(key) + [None] * (4 - len(key))
        return parts[0], parts[1], parts[2], parts[3] or 0

    def launch(self, grid, args: Sequence[Any], *, block=None, shared_bytes: int = 0, cooperative: bool = False,
               stream: Any = None) -> None:
        """Binds ``args`` to the signature and launches when the library finds the launch legal.
        GPU arrays (a Buffer, PyTorch, CuPy, ``__cuda_array_interface__``, DLPack) are used in place;
        numpy arrays are copied to the device and, for ``out``/``inout`` parameters, back (the call
        then waits); ints, floats, bools and numpy scalars are scalars (a Python float is rounded to
        the parameter's float type, an int converted when it fits). ``block`` None: the kernel's
        @workgroup, else 256. ``stream``: None (the current ``with stream:``, else the legacy default
        stream), a ptxgate Stream, a torch/cupy stream or a raw handle. Raises Error with every
        problem found; a blocked launch never reaches the driver."""
        key = (_LAUNCH_KEY, grid, block, stream, shared_bytes, cooperative)
        try:
            launcher = self._launchers.get(key)
        except TypeError:  # a list or another unhashable part: not remembered
            launcher = _native.wrap(Launcher(self, grid, block, stream, shared_bytes, cooperative))
        else:
            if launcher is None:
                launcher = self._remember(key, _native.wrap(Launcher(self, grid, block, stream, shared_bytes,
                                                                     cooperative)))
        launcher(*args)

    def __call__(self, grid, *args, **kwargs):
        self.launch(grid, args, **kwargs)

    def _words(self, launcher: Launcher, args, stream_word: int, copies: list, keep: list,
               streams: Optional[list] = None) -> List[int]:
        """The packed request through the general path: every argument described (errors name it),
        numpy arrays staged through temporary buffers (``copies``), the streams arrays were produced
        on (``__cuda_array_interface__`` v3) appended to ``streams``."""
        words = launcher._head.copy()
        words[0] = (words[0] & ~0xFFFFFFFF) | len(args)
        words[8] = stream_word
        params = self.info.params
        errors: List[Diagnostic] = []
        for i, obj in enumerate(args):
            param = params[i] if i < len(params) else None
            pname = param.name if param else f"#{i}"
            try:
                writes = param is not None and param.is_buffer and param.access in ("out", "inout")
                described = describe(obj, i, pname, param.type if param and not param.is_buffer else None, writes,
                                     streams)
            except Error as e:
                errors.extend(e.diagnostics)
                words += [0, 0]
                continue
            if isinstance(described, HostArray):
                if STATE.capture is not None:
                    errors.append(Diagnostic("PG5002", "error", f"argument {i} ('{pname}'): a numpy array is copied for "
                                             "one launch, but a graph replays long after this call",
                                             fix="pass device memory (a Buffer, a GPU tensor) to a launch a graph records"))
                    words += [0, 0]
                    continue
                buf = Buffer(self._runtime, shape=(max(1, described.elements),), dtype=described.dtype)
                if described.array.nbytes:
                    buf.upload(described.array)
                writes = param is not None and param.is_buffer and param.access in ("out", "inout")
                copies.append((described, buf, writes))
                words += [buf._handle.value, _capi.ARG_BUFFER | described.dtype << 4 | described.elements << 20]
            else:
                (value, desc), alive = described
                keep.append(alive if alive is not None else obj)
                words += [value, desc]
        if errors:
            raise Error(errors)
        return words

    def _launch_general(self, launcher: Launcher, args, stream_word: int, stream: Optional["Stream"]) -> None:
        copies: list = []
        keep: list = []
        streams: list = []
        try:
            words = self._words(launcher, args, stream_word, copies, keep, streams)
            launch_cu = 1 if stream is None else stream._cu
            for producer in dict.fromkeys(streams):  # each producer's stream once
                if producer != launch_cu:
                    self._runtime._wait_producer(stream, producer)
            if _LAUNCH(self._handle, array("Q", words).tobytes()):
                _raise_last()
            for host, buf, writes in copies:
                if writes and host.array.nbytes:
                    buf.download_into(host.array)
        finally:
            for _, buf, _ in copies:
                buf.free()

    def check(self, grid, args: Sequence[Any] = (), *, block=None, shared_bytes: int = 0, cooperative: bool = False,
              stream: Any = None):
        """The live verdict without launching: (launchable, diagnostics). Arrays are described,
        not copied (numpy arrays are uploaded to describe them as buffers)."""
        launcher = Launcher(self, grid, block, stream, shared_bytes, cooperative)
        copies: list = []
        keep: list = []
        try:
            s = launcher._stream if launcher._explicit_stream else STATE.stream
            words = self._words(launcher, args, (s._handle.value or _freed(s)) if s is not None else 0, copies, keep)
            config, c_args, n, stream_handle_ = words_to_args(words)
            status, diags, _ = call(_capi.lib().ptxgate_kernel_check, self._handle, ctypes.byref(config), c_args, n,
                                    stream_handle_)
            return status == _capi.OK, diags
        finally:
            for _, buf, _ in copies:
                buf.free()

    def __repr__(self):
        params = ", ".join((f"{p.access} {p.name}: {p.type}[]" if p.is_buffer else f"{p.name}: {p.type}")
                           for p in self.info.params)
        block = f", block={self.info.required_block}" if self.info.required_block else ""
        return f"Kernel({self.name}({params}){block}, device {self._runtime.device})"


@dataclass(frozen=True)
class PoolUsage:
    """What the runtime's stream-ordered pool holds: the driver's counters (memory whose free has
    not run yet counts as used) and the live bytes of buffers not yet freed (the limit counts these)."""

    reserved_bytes: int
    reserved_peak_bytes: int
    used_bytes: int
    used_peak_bytes: int
    live_bytes: int
    live_peak_bytes: int
    allocations: int
    limit_bytes: int


@dataclass(frozen=True)
class KernelProfile:
    kernel: str
    count: int
    total_ms: float
    median_ms: float
    min_ms: float
    max_ms: float


@dataclass(frozen=True)
class Profile:
    """Every profiled launch (sequence, kernel, device_ms) and the per-kernel summary."""

    launches: Tuple[Tuple[int, str, float], ...]
    summary: Tuple[KernelProfile, ...]

    def __str__(self):
        lines = [f"{'kernel':<24} {'count':>7} {'total ms':>10} {'median ms':>10} {'min ms':>9} {'max ms':>9}"]
        lines += [f"{k.kernel:<24} {k.count:>7} {k.total_ms:>10.4f} {k.median_ms:>10.4f} {k.min_ms:>9.4f} {k.max_ms:>9.4f}"
                  for k in self.summary]
        return "\n".join(lines)


def _runtime_options(device, track_dependencies, cache_dir, disk_cache, checked, checked_launches, profile, stream_ordered, require_explicit_stream, pool_limit, pool_keep,
                     opt_level, fp_mode, require_memory_proof=False):
    options = _capi.RuntimeOptions()
    _capi.lib().ptxgate_runtime_options_init(ctypes.byref(options))
    options.device = device
    options.track_dependencies = 1 if track_dependencies else 0
    options.cache_dir = _b(cache_dir, "cache_dir")
    options.disk_cache = 1 if disk_cache else 0
    options.checked = 1 if checked else 0
    options.checked_launches = 1 if checked_launches else 0
    options.profile_launches = 1 if profile else 0
    options.stream_ordered = 1 if stream_ordered else 0
    options.require_explicit_stream = 1 if require_explicit_stream else 0
    options.pool_limit_bytes = int(pool_limit)
    if pool_keep is not None:
        options.pool_keep_bytes = int(pool_keep)
    options.opt_level = int(opt_level)
    if fp_mode not in _FP_MODES:
        raise Error([Diagnostic("PG5004", "error", f"fp_mode {fp_mode!r} is not contract, exact or fast",
                                fix="pass fp_mode='contract', 'exact' or 'fast'")])
    options.fp_mode = _FP_MODES[fp_mode]
    options.require_memory_proof = 1 if require_memory_proof else 0
    return options


class Runtime(_Owned):
    """One CUDA device's primary context (shared with PyTorch and CuPy), the module cache and
    loaded modules. Raises Error (PG4001 without a driver, PG4004 without the device).

    Options: ``track_dependencies`` (launches and copies on different streams are ordered by what
    they read and write; off for programs that order streams themselves), ``checked_launches`` (each
    launch waits for its stream: a fault raises at the launch that caused it, PG4050),
    ``profile`` (time every launch: ``profile()``), ``stream_ordered`` (buffers from a stream-ordered
    pool, ``pool_limit`` bytes at most, ``pool_keep`` kept reserved), ``require_explicit_stream``
    (nothing on the legacy default stream, PG3002), ``opt_level``, ``fp_mode`` ("contract", "exact",
    "fast"), the module cache's ``cache_dir`` and ``disk_cache``. ``checked=True`` compiles kernels
    in checked mode: an access out of bounds (or a misaligned TMA tile) touches no memory, the
    kernel goes on, and the next ``synchronize()`` (or the launch itself with ``checked_launches``)
    raises Error with PG3804 naming the kernel, the launch, the source line, the thread, the index
    and the length; the runtime stays usable.
    ``require_memory_proof``: a launch whose accesses are not all proven in bounds for its
    geometry, buffer sizes and scalar values is blocked (PG3802), as is a kernel of another
    compiler; without it only a launch proven out of bounds is blocked (PG3801)."""

    _free_name = "ptxgate_runtime_free"

    def __init__(self, device: int = 0, *, track_dependencies: bool = True, checked_launches: bool = False,
                 profile: bool = False, stream_ordered: bool = False, pool_limit: int = 0,
                 pool_keep: Optional[int] = None, require_explicit_stream: bool = False, opt_level: int = 3,
                 fp_mode: str = "contract", cache_dir: Optional[str] = None, disk_cache: bool = True,
                 checked: bool = False, require_memory_proof: bool = False, _handle=None):
        self._streams: Dict[int, Stream] = {}
        self._producers: Dict[int, Tuple[Stream, Event]] = {}  # _wait_producer's streams and events
        if _handle is not None:  # a device set's runtime
            self._handle = _handle
        else:
            options = _runtime_options(device, track_dependencies, cache_dir, disk_cache, checked, checked_launches,
                                       profile, stream_ordered, require_explicit_stream, pool_limit, pool_keep,
                                       opt_level, fp_mode, require_memory_proof)
            self._handle = ctypes.c_void_p()
            check_call(_capi.lib().ptxgate_runtime_create, ctypes.byref(options), ctypes.byref(self._handle))
        self.info: Dict[str, Any] = json.loads(_capi.lib().ptxgate_runtime_json(self._handle))

    @property
    def device(self) -> int:
        return self.info["device"]

    @property
    def target(self) -> str:
        return self.info["target"]

    @property
    def name(self) -> str:
        return self.info["name"]

    def compile(self, source_or_path: Union[str, "os.PathLike[str]"], kernel: str, *, name: str = "<text>") -> Kernel:
        """Compiles (through the module cache) and loads ``kernel`` of a .pg module given as a
        path or as text."""
        from .compiler import _read_text

        text, name = _read_text(source_or_path, name)
        handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_runtime_compile, self._live(), text, len(text), _b(name, "name"),
                   _b(kernel, "kernel"), ctypes.byref(handle))
        return Kernel(self, handle)

    def load_ptx(self, ptx_or_path: Union[str, bytes, "os.PathLike[str]"], kernel: str, *, name: str = "<ptx>",
                 signature: Optional[str] = None) -> Kernel:
        """Loads ``kernel`` of PTX or a cubin made by another compiler (nvcc, NVRTC, Triton; a path,
        PTX text, or the bytes) to launch through the same validated path: its signature comes
        from the PTX (pointers take arrays of any element type) or the cubin's parameter sizes
        (8-byte parameters take arrays of any type, 4-byte ones any 4-byte scalar), its block from
        ``.reqntid``, its resources from the driver. ``signature`` restates the parameter types
        ("f32[], u64, f32"), e.g. for a cubin's 64-bit integer parameters."""
        from .compiler import _read_text

        text, label = _read_text(ptx_or_path, name)
        handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_runtime_load_module, self._live(), text, len(text), _b(label, "name"),
                   _b(kernel, "kernel"), _b(signature, "signature"), ctypes.byref(handle))
        return Kernel(self, handle)

    def load_cubin(self, cubin_or_path: Union[bytes, str, "os.PathLike[str]"], kernel: str, *, name: str = "<cubin>",
                   signature: Optional[str] = None) -> Kernel:
        """``load_ptx`` for a cubin (``nvcc -cubin``, NVRTC's ``nvrtcGetCUBIN``, Triton's
        ``compiled.asm["cubin"]``): the bytes or a path."""
        return self.load_ptx(cubin_or_path, kernel, name=name, signature=signature)

    # -- memory --------------------------------------------------------------------------------

    def allocate(self, nbytes: int) -> Buffer:
        """``nbytes`` of untyped device memory (binds to any buffer parameter)."""
        return Buffer(self, nbytes)

    def empty(self, shape: Dims, dtype: Any = "f32", *, stream: Any = None) -> Buffer:
        """A typed buffer of ``shape`` (contents unspecified): a stream-ordered allocation on
        ``stream`` when the runtime allocates from its pool."""
        return Buffer(self, shape=shape, dtype=dtype, stream=self._stream_of(stream))

    def zeros(self, shape: Dims, dtype: Any = "f32", *, stream: Any = None) -> Buffer:
        buf = self.empty(shape, dtype, stream=stream)
        self.fill(buf, 0, stream=stream)
        return buf

    def to_device(self, array, *, stream: Any = None) -> Buffer:
        """A buffer holding a copy of a numpy array (its dtype and shape): asynchronous on
        ``stream`` (the array must then stay unchanged until the stream reaches the copy)."""
        import numpy

        array = numpy.ascontiguousarray(array)
        code = dt.from_numpy(array.dtype)
        if code is None:
            raise Error([Diagnostic("PG5002", "error", f"a numpy array of dtype {array.dtype} has no ptxgate element type",
                                    fix="convert it to a number type first")])
        buf = Buffer(self, shape=array.shape or (1,), dtype=code, stream=self._stream_of(stream))
        self.copy(buf, array, stream=stream)
        return buf

    def pinned(self, shape: Dims, dtype: Any = "f32") -> HostBuffer:
        """Page-locked host memory for copies that overlap with compute."""
        return HostBuffer(self, shape, dtype)

    def copy(self, dst, src, *, stream: Any = None) -> None:
        """Copies ``src`` to ``dst`` (Buffers, BufferViews, HostBuffers, numpy arrays; equal sizes)
        on ``stream`` (None: the current stream, else the legacy default stream), asynchronously
        for the host; ordered against other streams by dependency tracking. A Buffer of another
        device is copied with peer access, or through cuMemcpyPeerAsync (``peer=True``)."""
        from .graphs import copy_end

        if STATE.capture is not None:
            STATE.capture.copy(dst, src)
            return
        d, keep_d = copy_end(dst)
        s, keep_s = copy_end(src)
        st = self._stream_of(stream)
        peer = getattr(dst, "device", 0) != getattr(src, "device", 0) and isinstance(_buffer_of(dst), Buffer) and \
            isinstance(_buffer_of(src), Buffer)
        fn = _capi.lib().ptxgate_copy_peer_async if peer else _capi.lib().ptxgate_copy_async
        check_call(fn, st._handle if st is not None else None, ctypes.byref(d), ctypes.byref(s))
        del keep_d, keep_s

    def fill(self, dst, value, *, stream: Any = None) -> None:
        """Sets every element of a Buffer (or BufferView) to ``value`` on ``stream``."""
        from .graphs import copy_end, fill_word

        if STATE.capture is not None:
            STATE.capture.fill(dst, value)
            return
        d, keep = copy_end(dst)
        bits, width = fill_word(d.dtype, value)
        st = self._stream_of(stream)
        check_call(_capi.lib().ptxgate_fill_async, st._handle if st is not None else None, ctypes.byref(d), bits, width)

    # -- streams and events --------------------------------------------------------------------

    def stream(self, foreign: Any = None) -> Stream:
        """A new stream, or ``foreign`` (a torch/cupy stream or a raw CUstream) borrowed."""
        return Stream(self, foreign)

    def event(self) -> Event:
        return Event(self)

    def _stream_of(self, stream: Any, current: bool = True) -> Optional[Stream]:
        """The ptxgate Stream a call uses: ``stream`` itself, a foreign one wrapped (once per
        handle), or (None) the current ``with stream:`` of this thread when ``current``."""
        if stream is None:
            return STATE.stream if current else None
        if isinstance(stream, Stream):
            return stream
        handle = stream_handle(stream)
        wrapped = self._streams.get(handle)
        if wrapped is None:
            wrapped = self._streams[handle] = Stream(self, stream)
        return wrapped

    def _wait_producer(self, consumer: Optional[Stream], producer: int) -> None:
        """``__cuda_array_interface__`` v3: later work on ``consumer`` (None: the legacy default
        stream) waits for what was submitted so far to ``producer``, the CUstream an array names
        (1: the legacy default stream, 2: the per-thread default stream), through an event."""
        pair = self._producers.get(producer)
        if pair is None:
            pair = self._producers[producer] = (self._stream_of(producer), Event(self))
        pair[1].record(pair[0])
        (consumer if consumer is not None else self._stream_of(0)).wait(pair[1])

    def synchronize(self) -> None:
        check_call(_capi.lib().ptxgate_runtime_synchronize, self._live())

    # -- pool and profiling --------------------------------------------------------------------

    def pool_usage(self) -> PoolUsage:
        u = _capi.PoolUsage()
        check_call(_capi.lib().ptxgate_runtime_pool_usage, self._live(), ctypes.byref(u))
        return PoolUsage(*(getattr(u, f) for f, _ in _capi.PoolUsage._fields_))

    def trim_pool(self, keep_bytes: int = 0) -> None:
        check_call(_capi.lib().ptxgate_runtime_pool_trim, self._live(), int(keep_bytes))

    def reset_pool_peaks(self) -> None:
        check_call(_capi.lib().ptxgate_runtime_pool_reset_peaks, self._live())

    def profile(self, *, clear: bool = False) -> Profile:
        """Every launch timed so far and the per-kernel summary (a runtime made with ``profile=True``;
        waits for the launches to end). ``clear``: forget them afterwards."""
        text = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_runtime_profile, self._live(), 1 if clear else 0, ctypes.byref(text))
        try:
            j = json.loads(_capi.lib().ptxgate_text_data(text))
        finally:
            _capi.lib().ptxgate_text_free(text)
        return Profile(tuple((l["sequence"], l["kernel"], l["device_ms"]) for l in j["launches"]),
                       tuple(KernelProfile(**k) for k in j["summary"]))

    # -- graphs and tensor maps ----------------------------------------------------------------

    def graph(self) -> "Graph":
        """A graph to build: ``g.launch(...)``, ``g.copy(...)``, ``g.fill(...)``, or ``with g:``
        to record the launches, copies and fills this thread makes through ptxgate."""
        from .graphs import Graph

        return Graph(self)

    def tensor_map(self, tensor, box: Sequence[int], **options) -> "TensorMap":
        """A TMA descriptor over ``tensor`` (see ptxgate.tensor_map)."""
        from .tensor_map import tensor_map

        return tensor_map(self, tensor, box, **options)

    def reset(self) -> None:
        """After a kernel fault (PG4050, then PG4003 on every call): resets the device's primary context,
        which destroys what every library made in it (PyTorch's and CuPy's memory too), and gives the
        runtime a fresh context where the driver allows one. Kernels, buffers and streams made before the
        reset, by any runtime of the device, raise Error with PG4010 when used and are never reused:
        compile, allocate and create them again. Raises Error with PG4011 when the driver gives the
        process no new context (an H100 with driver 580 after an illegal address: start a new process)."""
        check_call(_capi.lib().ptxgate_runtime_reset, self._handle)

    def close(self) -> None:
        for _, event in self._producers.values():
            event.free()
        self._producers.clear()
        for s in self._streams.values():
            s.free()
        self._streams.clear()
        self.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if not self._handle:
            return "Runtime(closed)"
        i = self.info
        options = [k for k in ("checked", "checked_launches", "profile_launches", "stream_ordered", "require_explicit_stream")
                   if i.get(k)]
        if not i.get("track_dependencies"):
            options.append("untracked")
        extra = (", " + ", ".join(options)) if options else ""
        return f"Runtime(device {i['device']}: {i['name']}, {i['target']}{extra})"


def _buffer_of(obj):
    return obj.buffer if isinstance(obj, BufferView) else obj

