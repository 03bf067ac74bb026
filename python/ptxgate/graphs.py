"""CUDA graphs through the validating runtime: build a graph from launches, copies and fills (each
validated as the direct call is), or record them with ``with graph:``; instantiate; replay; update
a kernel node's geometry and arguments, validated before the driver."""
import ctypes
from typing import Any, List, Optional, Sequence, Tuple

from . import _capi
from . import dtypes as dt
from ._owned import _Owned, freed
from .diagnostics import Diagnostic, Error, check_call, read


def copy_end(obj) -> Tuple[_capi.CopyEnd, Any]:
    """A Buffer, BufferView, HostBuffer or numpy array as one end of a copy (and what keeps its
    memory alive)."""
    from .memory import Buffer, BufferView, HostBuffer

    e = _capi.CopyEnd()
    if isinstance(obj, Buffer):
        e.memory, e.dtype, e.buffer, e.bytes = _capi.MEMORY_DEVICE, obj._code, obj._live(), obj.size * dt.SIZES[obj._code]
        return e, obj
    if isinstance(obj, BufferView):
        b = obj.buffer
        size = dt.SIZES[b._code]
        e.memory, e.dtype, e.buffer = _capi.MEMORY_DEVICE, b._code, b._live()
        e.offset, e.bytes = obj.first * size, obj.count * size
        return e, b
    if isinstance(obj, HostBuffer):
        e.memory, e.dtype, e.pinned, e.bytes = _capi.MEMORY_PINNED, obj._code, obj._live(), obj.nbytes
        return e, obj
    if type(obj).__module__ == "numpy" and type(obj).__name__ == "ndarray":
        if not obj.flags["C_CONTIGUOUS"]:
            raise Error([Diagnostic("PG5002", "error", "a copy's numpy array is not C-contiguous",
                                    fix="pass numpy.ascontiguousarray(array)")])
        code = dt.from_numpy(obj.dtype)
        e.memory, e.dtype, e.host, e.bytes = _capi.MEMORY_HOST, code if code is not None else 0, obj.ctypes.data, obj.nbytes
        return e, obj
    raise Error([Diagnostic("PG5002", "error", f"a {type(obj).__name__} cannot be copied by ptxgate",
                            fix="copy between Buffers, BufferViews, HostBuffers and numpy arrays (GPU tensors: "
                                "use their library's copy)")])


def fill_word(code: int, value) -> Tuple[int, int]:
    """The bits and width (1, 2 or 4 bytes) a fill of elements of ``code`` writes for ``value``."""
    size = dt.SIZES[code]
    if code in (dt.F16, dt.BF16, dt.F32):
        return dt.float_bits(value, code), size
    if code == dt.F64 or size == 8:
        if value != 0:
            raise Error([Diagnostic("PG5002", "error", f"a fill writes elements of 1, 2 or 4 bytes; {dt.name(code)} "
                                    f"elements of {value!r} are 8", fix="fill 8-byte elements with 0, or run a kernel")])
        return 0, 4
    if code == dt.UNKNOWN:
        return int(value) & 0xFF, 1
    return int(value) & ((1 << (8 * size)) - 1), size


class Graph(_Owned):
    """A graph being built in a runtime's context. ``launch``, ``copy`` and ``fill`` add nodes (a
    blocked launch adds none and raises the diagnostics Kernel.launch would); dependencies come
    from access modes (a node on a raw pointer, e.g. a PyTorch tensor, is ordered after every
    earlier node). ``with graph:`` records what this thread launches, copies and fills through
    ptxgate instead of running it. The objects whose memory nodes use are kept alive by the graph
    and its executables."""

    _free_name = "ptxgate_graph_free"
    _remake = "build a new Graph"

    def __init__(self, runtime):
        self._runtime = runtime
        self._handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_graph_create, runtime._live(), ctypes.byref(self._handle))
        self._keep: List[Any] = []
        self._kernels = {}  # node index -> the kernel it launches (for update's argument names)
        self._outer: List[Optional["Graph"]] = []

    def launch(self, kernel, grid, args: Sequence[Any], *, block=None, shared_bytes: int = 0,
               cooperative: bool = False) -> int:
        """Adds a launch of ``kernel``; returns its node index."""
        from .runtime import Launcher

        return self._record(Launcher(kernel, grid, block, None, shared_bytes, cooperative), args)

    def _record(self, launcher, args) -> int:
        from .runtime import STATE, words_to_args

        kernel = launcher._kernel
        copies: list = []
        keep: list = []
        saved, STATE.capture = STATE.capture, self  # numpy arrays are refused while recording
        try:
            words = kernel._words(launcher, args, 0, copies, keep)
        finally:
            STATE.capture = saved
        config, c_args, n, _ = words_to_args(words)
        node = ctypes.c_uint32()
        check_call(_capi.lib().ptxgate_graph_add_launch, self._live(), kernel._live(), ctypes.byref(config), c_args, n,
                   ctypes.byref(node))
        self._keep += keep + [kernel]
        self._kernels[node.value] = kernel
        return node.value

    def copy(self, dst, src) -> int:
        """Adds a copy between Buffers, BufferViews and HostBuffers (pageable memory is PG4031)."""
        d, keep_d = copy_end(dst)
        s, keep_s = copy_end(src)
        node = ctypes.c_uint32()
        check_call(_capi.lib().ptxgate_graph_add_copy, self._live(), ctypes.byref(d), ctypes.byref(s), ctypes.byref(node))
        self._keep += [keep_d, keep_s]
        return node.value

    def fill(self, dst, value) -> int:
        """Adds a fill of a Buffer or BufferView with ``value``."""
        d, keep = copy_end(dst)
        bits, width = fill_word(d.dtype, value)
        node = ctypes.c_uint32()
        check_call(_capi.lib().ptxgate_graph_add_fill, self._live(), ctypes.byref(d), bits, width, ctypes.byref(node))
        self._keep.append(keep)
        return node.value

    def __len__(self) -> int:
        return _capi.lib().ptxgate_graph_size(self._live())

    def dependencies(self, node: int) -> List[int]:
        """The nodes ``node`` waits for directly."""
        n = _capi.lib().ptxgate_graph_dependencies(self._live(), node, None, 0)
        out = (ctypes.c_uint32 * max(1, n))()
        _capi.lib().ptxgate_graph_dependencies(self._handle, node, out, n)
        return list(out[:n])

    def instantiate(self) -> "GraphExec":
        """An executable graph of the nodes so far; the builder stays usable."""
        return GraphExec(self)

    def __enter__(self):
        from .runtime import STATE

        self._outer.append(STATE.capture)
        STATE.capture = self
        return self

    def __exit__(self, *exc):
        from .runtime import STATE

        STATE.capture = self._outer.pop()

    def __repr__(self):
        return f"Graph({len(self)} nodes, device {self._runtime.device})" if self._handle else "Graph(freed)"


class GraphExec(_Owned):
    """An instantiated graph: ``replay()`` on a stream (None: the current ``with stream:``, else the
    legacy default stream), ``update()`` a kernel node."""

    _free_name = "ptxgate_graph_exec_free"
    _remake = "instantiate the graph again"

    def __init__(self, graph: Graph):
        self._runtime = graph._runtime
        self._handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_graph_instantiate, graph._live(), ctypes.byref(self._handle))
        self._keep = list(graph._keep)
        self._kernels = dict(graph._kernels)
        self._legacy = None

    def replay(self, stream: Any = None) -> None:
        """Replays the graph (cuGraphLaunch): PG4030 before the driver when a Buffer it uses was
        freed."""
        s = self._runtime._stream_of(stream)
        if s is None:
            if self._legacy is None:
                self._legacy = self._runtime._stream_of(0)
            s = self._legacy
        if _REPLAY(self._handle, s._handle):
            from .runtime import _raise_last

            if not self._handle:  # the library refused NULL; say why it was NULL
                read(_capi.lib().ptxgate_take_last_diagnostics())
                raise freed(self)
            _raise_last()

    launch = replay

    def update(self, node: int, grid, args: Sequence[Any], *, kernel=None, block=None, shared_bytes: int = 0,
               cooperative: bool = False) -> None:
        """New geometry and arguments for kernel node ``node`` from the next replay on, validated
        before the driver as a launch is (PG30xx, PG31xx, ...; PG4032 for a node that is no kernel
        node; PG4033 for a change the instantiated graph keeps; PG4034 for a new race).
        ``kernel``: the node's kernel, for the argument names in messages (optional)."""
        from .runtime import Launcher, words_to_args

        k = kernel if kernel is not None else self._kernels.get(int(node))
        keep: list = []
        if k is None:  # no kernel node: the library says so (PG4032)
            launcher_words = [0, *_dims3(grid), *(_dims3(block) if block is not None else (0, 0, 0)), int(shared_bytes), 0]
            words = launcher_words
        else:
            words = k._words(Launcher(k, grid, block, None, shared_bytes, cooperative), args, 0, [], keep)
        config, c_args, n, _ = words_to_args(words)
        check_call(_capi.lib().ptxgate_graph_exec_update, self._live(), int(node), ctypes.byref(config), c_args, n)
        self._keep += keep

    @property
    def replays(self) -> int:
        return _capi.lib().ptxgate_graph_exec_replays(self._live())

    def __len__(self) -> int:
        return _capi.lib().ptxgate_graph_exec_size(self._live())

    def __repr__(self):
        return f"GraphExec({len(self)} nodes, {self.replays} replays)" if self._handle else "GraphExec(freed)"


def _dims3(v):
    from .runtime import _dims

    return _dims(v, "grid")


class _ReplayEntry:
    """ptxgate_graph_exec_replay without argtypes (two handles, nothing converted); a failure's
    diagnostics wait for ptxgate_take_last_diagnostics."""

    fn = None

    def __call__(self, exec_handle, stream_handle):
        fn = _ReplayEntry.fn
        if fn is None:
            fn = _ReplayEntry.fn = _capi.lib().ptxgate_graph_exec_replay
        return fn(exec_handle, stream_handle)


_REPLAY = _ReplayEntry()
