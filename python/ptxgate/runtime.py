"""The runtime: a device's primary context, kernels compiled and loaded through the module cache,
buffers, streams (own or foreign), and launches validated by the library before the driver."""
import ctypes
import json
import os
from typing import Any, Optional, Sequence, Union

from . import _capi
from .arrays import DeviceArray, HostArray, classify, scalar
from .compiler import KernelInfo, _b, _is_path
from .diagnostics import Diagnostic, Error, call, check_call


def _dims(v, name):
    if isinstance(v, int):
        v = (v,)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 0 for x in v):
        raise Error([Diagnostic("PG5004", "error", f"{name} {v} is not 1 to 3 non-negative counts",
                                fix=f"pass {name} as an int or a tuple of up to 3 ints")])
    return v + (1,) * (3 - len(v))


class _Owned:
    """A C API handle this object owns: released once by ``free()``, at the latest when the
    object is collected. ``_free_name`` names the C API function that releases it."""

    _free_name = ""
    _handle = None

    def free(self) -> None:
        if self._handle:
            getattr(_capi.lib(), self._free_name)(self._handle)
            self._handle = ctypes.c_void_p()

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass


class Buffer(_Owned):
    """Device memory owned by a runtime (dependency-tracked)."""

    _free_name = "ptxgate_buffer_free"

    def __init__(self, runtime: "Runtime", nbytes: int):
        self._runtime = runtime
        self._handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_buffer_allocate, runtime._handle, nbytes, ctypes.byref(self._handle))

    @property
    def nbytes(self) -> int:
        return _capi.lib().ptxgate_buffer_size(self._handle)

    @property
    def device_pointer(self) -> int:
        return _capi.lib().ptxgate_buffer_device_pointer(self._handle)

    def upload(self, data) -> None:
        """Copies a bytes-like object or a contiguous numpy array into the buffer's start."""
        view = memoryview(data).cast("B")
        host = (ctypes.c_char * len(view)).from_buffer_copy(view) if view.readonly else (ctypes.c_char * len(view)).from_buffer(view)
        check_call(_capi.lib().ptxgate_buffer_upload, self._handle, ctypes.addressof(host), len(view))

    def download_into(self, out) -> None:
        """Fills a writable bytes-like object (a numpy array) from the buffer's start."""
        view = memoryview(out).cast("B")
        host = (ctypes.c_char * len(view)).from_buffer(view)
        check_call(_capi.lib().ptxgate_buffer_download, self._handle, ctypes.addressof(host), len(view))

    def download(self, nbytes: Optional[int] = None) -> bytes:
        data = bytearray(self.nbytes if nbytes is None else nbytes)
        self.download_into(data)
        return bytes(data)



class Stream(_Owned):
    """A stream of the runtime's context: made by ptxgate, or borrowed from another library
    (a PyTorch or CuPy stream object, or a raw CUstream handle; 0 is the legacy default stream).
    A borrowed stream is never destroyed by ptxgate."""

    _free_name = "ptxgate_stream_free"

    def __init__(self, runtime: "Runtime", foreign: Any = None):
        self._runtime = runtime
        self._handle = ctypes.c_void_p()
        lib = _capi.lib()
        if foreign is None:
            check_call(lib.ptxgate_stream_create, runtime._handle, ctypes.byref(self._handle))
        else:
            check_call(lib.ptxgate_stream_wrap, runtime._handle, stream_handle(foreign), ctypes.byref(self._handle))
        self.borrowed = foreign is not None

    @property
    def handle(self) -> int:
        return _capi.lib().ptxgate_stream_handle(self._handle)

    def synchronize(self) -> None:
        check_call(_capi.lib().ptxgate_stream_synchronize, self._handle)



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


class Kernel(_Owned):
    """A compiled kernel loaded in a runtime's context."""

    _free_name = "ptxgate_kernel_free"

    def __init__(self, runtime: "Runtime", handle: ctypes.c_void_p):
        self._runtime = runtime
        self._handle = handle
        self.info = KernelInfo.from_json(json.loads(_capi.lib().ptxgate_kernel_json(handle)))

    @property
    def name(self):
        return self.info.name

    def _marshal(self, args: Sequence[Any]):
        params = self.info.params
        c_args = (_capi.Arg * max(1, len(args)))()
        copies = []   # (HostArray, Buffer, writes)
        keep = []
        for i, obj in enumerate(args):
            param = params[i] if i < len(params) else None
            pname = param.name if param else f"#{i}"
            a = c_args[i]
            a.device = -1
            if isinstance(obj, Buffer):
                a.kind, a.buffer = _capi.ARG_BUFFER, obj._handle
                continue
            arr = classify(obj, i, pname)
            if isinstance(arr, DeviceArray):
                a.kind, a.dtype, a.device, a.pointer, a.elements = (_capi.ARG_POINTER, arr.dtype, arr.device,
                                                                     arr.pointer, arr.elements)
                keep.append(arr.keep_alive)
            elif isinstance(arr, HostArray):
                buf = Buffer(self._runtime, max(1, arr.array.nbytes))
                if arr.array.nbytes:
                    buf.upload(arr.array)
                a.kind, a.dtype, a.buffer, a.elements = _capi.ARG_BUFFER, arr.dtype, buf._handle, arr.elements
                writes = param is not None and param.is_buffer and param.access in ("out", "inout")
                copies.append((arr, buf, writes))
            else:
                a.kind = _capi.ARG_SCALAR
                a.dtype, a.bits = scalar(obj, i, pname, param.type if param and not param.is_buffer else None)
        return c_args, copies, keep

    def _config(self, grid, block, shared_bytes, cooperative):
        c = _capi.LaunchConfig()
        g = _dims(grid, "grid")
        b = _dims(block, "block") if block is not None else (0, 0, 0)
        for i in range(3):
            c.grid[i], c.block[i] = g[i], b[i]
        c.dynamic_shared_bytes = int(shared_bytes)
        c.cooperative = 1 if cooperative else 0
        return c

    def _stream(self, stream):
        if stream is None:
            return None, None
        if isinstance(stream, Stream):
            return stream._handle, stream
        borrowed = Stream(self._runtime, stream)
        return borrowed._handle, borrowed

    def launch(self, grid, args: Sequence[Any], *, block=None, shared_bytes: int = 0, cooperative: bool = False,
               stream: Any = None) -> None:
        """Binds ``args`` to the signature and launches when the library finds the launch legal.
        numpy arrays are copied to the device and, for ``out``/``inout`` parameters, back (the
        call then waits for the kernel); GPU arrays (``__cuda_array_interface__``, DLPack) are
        used in place; ints, floats, bools and numpy scalars are scalars. ``block`` None: the
        kernel's @workgroup (else 256). ``stream``: None (the legacy default stream, ordered with
        PyTorch's default stream), a ptxgate Stream, a torch/cupy stream or a raw handle.
        Raises Error with every problem found; a blocked launch never reaches the driver."""
        config = self._config(grid, block, shared_bytes, cooperative)
        c_args, copies, keep = self._marshal(args)
        s, keep_stream = self._stream(stream)
        try:
            check_call(_capi.lib().ptxgate_kernel_launch, self._handle, ctypes.byref(config), c_args, len(args), s)
            for host, buf, writes in copies:
                if writes and host.array.nbytes:
                    buf.download_into(host.array)
        finally:
            for _, buf, _ in copies:
                buf.free()
            del keep, keep_stream

    def __call__(self, grid, *args, **kwargs):
        self.launch(grid, args, **kwargs)

    def check(self, grid, args: Sequence[Any] = (), *, block=None, shared_bytes: int = 0, cooperative: bool = False,
              stream: Any = None):
        """The live verdict without launching: (launchable, diagnostics). Arrays are described,
        not copied (numpy arrays are uploaded to describe them as buffers)."""
        config = self._config(grid, block, shared_bytes, cooperative)
        c_args, copies, keep = self._marshal(args)
        s, keep_stream = self._stream(stream)
        try:
            status, diags, _ = call(_capi.lib().ptxgate_kernel_check, self._handle, ctypes.byref(config), c_args,
                                    len(args), s)
            return status == _capi.OK, diags
        finally:
            for _, buf, _ in copies:
                buf.free()
            del keep, keep_stream



class Runtime(_Owned):
    """One CUDA device's primary context (shared with PyTorch and CuPy), the module cache and
    loaded modules. Raises Error (PG4001 without a driver, PG4004 without the device).

    ``checked=True`` compiles kernels in checked mode: an access out of bounds (or a misaligned TMA
    tile) touches no memory, the kernel goes on, and the next ``synchronize()`` raises Error with
    PG3804 naming the kernel, the launch, the source line, the thread, the index and the length;
    the runtime stays usable. ``checked_launches=True`` synchronises after every launch, so the
    launch itself raises."""

    _free_name = "ptxgate_runtime_free"

    def __init__(self, device: int = 0, *, track_dependencies: bool = True, cache_dir: Optional[str] = None,
                 disk_cache: bool = True, checked: bool = False, checked_launches: bool = False):
        lib = _capi.lib()
        options = _capi.RuntimeOptions()
        lib.ptxgate_runtime_options_init(ctypes.byref(options))
        options.device = device
        options.track_dependencies = 1 if track_dependencies else 0
        options.cache_dir = _b(cache_dir, "cache_dir")
        options.disk_cache = 1 if disk_cache else 0
        options.checked = 1 if checked else 0
        options.checked_launches = 1 if checked_launches else 0
        self._handle = ctypes.c_void_p()
        check_call(lib.ptxgate_runtime_create, ctypes.byref(options), ctypes.byref(self._handle))

    @property
    def device(self) -> int:
        return _capi.lib().ptxgate_runtime_device(self._handle)

    @property
    def target(self) -> str:
        return _capi.lib().ptxgate_runtime_target(self._handle).decode()

    def compile(self, source_or_path: Union[str, "os.PathLike[str]"], kernel: str, *, name: str = "<text>") -> Kernel:
        """Compiles (through the module cache) and loads ``kernel`` of a .pg module given as a
        path or as text."""
        from .compiler import _read_text

        text, name = _read_text(source_or_path, name)
        handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_runtime_compile, self._handle, text, len(text), _b(name, "name"),
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
        check_call(_capi.lib().ptxgate_runtime_load_module, self._handle, text, len(text), _b(label, "name"),
                   _b(kernel, "kernel"), _b(signature, "signature"), ctypes.byref(handle))
        return Kernel(self, handle)

    def load_cubin(self, cubin_or_path: Union[bytes, str, "os.PathLike[str]"], kernel: str, *, name: str = "<cubin>",
                   signature: Optional[str] = None) -> Kernel:
        """``load_ptx`` for a cubin (``nvcc -cubin``, NVRTC's ``nvrtcGetCUBIN``, Triton's
        ``compiled.asm["cubin"]``): the bytes or a path."""
        return self.load_ptx(cubin_or_path, kernel, name=name, signature=signature)

    def allocate(self, nbytes: int) -> Buffer:
        return Buffer(self, nbytes)

    def stream(self, foreign: Any = None) -> Stream:
        """A new stream, or ``foreign`` (a torch/cupy stream or a raw CUstream) borrowed."""
        return Stream(self, foreign)

    def synchronize(self) -> None:
        check_call(_capi.lib().ptxgate_runtime_synchronize, self._handle)

    def reset(self) -> None:
        """After a kernel fault (PG4050, then PG4003 on every call): resets the device's primary context,
        which destroys what every library made in it (PyTorch's and CuPy's memory too), and gives the
        runtime a fresh context where the driver allows one. Kernels, buffers and streams made before the
        reset, by any runtime of the device, raise Error with PG4010 when used and are never reused:
        compile, allocate and create them again. Raises Error with PG4011 when the driver gives the
        process no new context (an H100 with driver 580 after an illegal address: start a new process)."""
        check_call(_capi.lib().ptxgate_runtime_reset, self._handle)

    def close(self) -> None:
        self.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
