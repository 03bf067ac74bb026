"""Device memory and pinned host memory of a runtime: typed, shaped Buffers (with
``__cuda_array_interface__``), views of them for copies and fills, and page-locked HostBuffers."""
import ctypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence, Union

from . import _capi
from . import dtypes as dt
from ._owned import _Owned, freed
from .diagnostics import check_call

if TYPE_CHECKING:  # the runtime module imports this one
    from .runtime import Runtime, Stream

Dims = Union[int, Sequence[int]]


def _freed(obj):
    raise freed(obj)


def _elements(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class Buffer(_Owned):
    """Device memory owned by a runtime, with an element type and a shape: dependency-tracked, bound
    only to parameters of its element type (an untyped buffer, dtype "unknown", binds to any). Has
    ``__cuda_array_interface__``, so ``torch.as_tensor(buf, device="cuda")`` and ``cupy.asarray(buf)``
    view it in place (not for bf16, which that protocol cannot spell)."""

    _free_name = "ptxgate_buffer_free"

    def __init__(self, runtime: "Runtime", nbytes: Optional[int] = None, *, shape: Optional[Dims] = None,
                 dtype: Any = None, stream: Optional["Stream"] = None):
        self._runtime = runtime
        self._handle = ctypes.c_void_p()
        code = dt.parse(dtype) if dtype is not None else dt.UNKNOWN
        if shape is None:
            shape = (int(nbytes) // dt.SIZES[code],) if nbytes is not None else (0,)
        shape = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
        count = _elements(shape)
        check_call(_capi.lib().ptxgate_buffer_allocate_array, runtime._live(), max(1, count), code,
                   stream._handle if stream is not None else None, ctypes.byref(self._handle))
        self._code = code
        self.shape = shape
        self.device_pointer = _capi.lib().ptxgate_buffer_device_pointer(self._handle)

    _launch_kind = _capi.ARG_BUFFER  # the packer's descriptor: kind | _code << 4

    def _launch_words(self, w):
        w.append(self._handle.value or _freed(self))
        w.append(_capi.ARG_BUFFER | self._code << 4)
        return True

    @property
    def dtype(self) -> str:
        return dt.name(self._code)

    @property
    def size(self) -> int:
        return _elements(self.shape)

    @property
    def nbytes(self) -> int:
        return _capi.lib().ptxgate_buffer_size(self._live())

    @property
    def device(self) -> int:
        return _capi.lib().ptxgate_buffer_device(self._live())

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        if self._code not in dt.TYPESTR_OF:
            raise AttributeError(f"a buffer of {self.dtype} has no __cuda_array_interface__ typestr")
        return {"shape": self.shape, "typestr": dt.TYPESTR_OF[self._code], "data": (self.device_pointer, False),
                "version": 3, "strides": None, "stream": None}

    def upload(self, data) -> None:
        """Copies a bytes-like object or a contiguous numpy array into the buffer's start (waits)."""
        view = memoryview(data).cast("B")
        host = (ctypes.c_char * len(view)).from_buffer_copy(view) if view.readonly else (ctypes.c_char * len(view)).from_buffer(view)
        check_call(_capi.lib().ptxgate_buffer_upload, self._live(), ctypes.addressof(host), len(view))

    def download_into(self, out) -> None:
        """Fills a writable bytes-like object (a numpy array) from the buffer's start (waits)."""
        view = memoryview(out).cast("B")
        host = (ctypes.c_char * len(view)).from_buffer(view)
        check_call(_capi.lib().ptxgate_buffer_download, self._live(), ctypes.addressof(host), len(view))

    def download(self, nbytes: Optional[int] = None) -> bytes:
        data = bytearray(self.nbytes if nbytes is None else nbytes)
        self.download_into(data)
        return bytes(data)

    def numpy(self):
        """A numpy copy of the buffer, of its dtype and shape (waits for the work that writes it)."""
        import numpy

        out = numpy.empty(self.shape, dtype=dt.numpy_dtype(self._code) if self._code != dt.UNKNOWN else numpy.uint8)
        self.download_into(out)
        return out

    def fill(self, value, *, stream: Optional["Stream"] = None) -> None:
        """Sets every element to ``value`` (a float is rounded to the buffer's float type) on
        ``stream`` (None: the current stream, else the legacy default stream)."""
        self._runtime.fill(self, value, stream=stream)

    def view(self, first: int, count: int) -> "BufferView":
        """Elements [first, first + count), for copies and fills."""
        return BufferView(self, first, count)

    def __repr__(self):
        if not self._handle:
            return "Buffer(freed)"
        shape = "x".join(str(d) for d in self.shape)
        return f"Buffer({self.dtype}[{shape}], device {self.device}, {self.nbytes} bytes)"


@dataclass(frozen=True)
class BufferView:
    """Elements [first, first + count) of a Buffer, in its element type."""

    buffer: Buffer
    first: int
    count: int


class HostBuffer(_Owned):
    """Page-locked host memory, for copies that overlap with compute. ``numpy()`` waits for the
    copies that write it, then gives the memory itself as a numpy array."""

    _free_name = "ptxgate_host_buffer_free"

    def __init__(self, runtime: "Runtime", shape: Dims, dtype: Any = "f32"):
        self._runtime = runtime
        self._handle = ctypes.c_void_p()
        self._code = dt.parse(dtype)
        self.shape = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
        check_call(_capi.lib().ptxgate_host_buffer_allocate, runtime._live(),
                   max(1, _elements(self.shape)) * dt.SIZES[self._code], ctypes.byref(self._handle))
        self.address = _capi.lib().ptxgate_host_buffer_data(self._handle)

    @property
    def nbytes(self) -> int:
        return _capi.lib().ptxgate_host_buffer_size(self._live())

    @property
    def dtype(self) -> str:
        return dt.name(self._code)

    def wait(self, for_write: bool = False) -> None:
        """Blocks until the copies that write this memory (``for_write``: or read it) are done."""
        check_call(_capi.lib().ptxgate_host_buffer_wait, self._live(), 1 if for_write else 0)

    def numpy(self, *, for_write: bool = False):
        """The memory as a numpy array (no copy), after the copies that write it (``for_write``:
        or read it) are done. Valid while this HostBuffer lives."""
        import numpy

        self.wait(for_write)
        raw = (ctypes.c_char * self.nbytes).from_address(self.address)
        return numpy.frombuffer(raw, dtype=dt.numpy_dtype(self._code), count=_elements(self.shape)).reshape(self.shape)

    def __repr__(self):
        shape = "x".join(str(d) for d in self.shape)
        return f"HostBuffer({self.dtype}[{shape}], pinned, {self.nbytes} bytes)" if self._handle else "HostBuffer(freed)"
