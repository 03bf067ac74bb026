"""Tensor maps (Hopper's TMA descriptors) built from a tensor: its shape, strides and element type
read from the tensor, the box and layout options given, every rule of the driver checked by the
library before the driver sees the description."""
import ctypes
from typing import Any, Optional, Sequence

from . import _capi
from . import dtypes as dt
from ._owned import _Owned, freed
from .diagnostics import Diagnostic, Error, check_call

# The element types a tensor map has, by C API dtype (TMA has no 8- or 16-bit signed integers).
_TMA_TYPE = {dt.U8: "u8", dt.U16: "u16", dt.U32: "u32", dt.I32: "i32", dt.U64: "u64", dt.I64: "i64", dt.F16: "f16",
             dt.F32: "f32", dt.F64: "f64", dt.BF16: "bf16"}


def _usage(message, fix):
    return Error([Diagnostic("PG5004", "error", message, fix=fix)])


def _layout(tensor):
    """(address, bytes available, dtype code, shape outermost first, strides in elements, keep)."""
    from .memory import Buffer

    if isinstance(tensor, Buffer):
        strides, inner = [], 1
        for d in reversed(tensor.shape):
            strides.insert(0, inner)
            inner *= d
        return None, tensor.nbytes, tensor._code, tuple(tensor.shape), tuple(strides), tensor
    module = type(tensor).__module__ or ""
    if module.startswith("torch") and hasattr(tensor, "data_ptr"):
        code = dt.from_torch(tensor.dtype)
        if tensor.get_device() < 0:
            raise _usage("a tensor map needs a GPU tensor; this one is on the host", "move the tensor to the GPU")
        storage = tensor.untyped_storage()
        available = storage.nbytes() - (tensor.data_ptr() - storage.data_ptr())
        return tensor.data_ptr(), available, code, tuple(tensor.shape), tuple(tensor.stride()), tensor
    if hasattr(tensor, "__cuda_array_interface__"):
        cai = tensor.__cuda_array_interface__
        code = dt.from_typestr(cai["typestr"])
        shape = tuple(cai["shape"])
        size = dt.SIZES.get(code, 1)
        if cai.get("strides"):
            strides = tuple(s // size for s in cai["strides"])
        else:
            strides, inner = [], 1
            for d in reversed(shape):
                strides.insert(0, inner)
                inner *= d
            strides = tuple(strides)
        extent = sum((d - 1) * s for d, s in zip(shape, strides)) + 1 if shape else 1
        return int(cai["data"][0]), extent * size, code, shape, strides, tensor
    raise _usage(f"a {type(tensor).__name__} is no tensor a map can describe",
                 "pass a ptxgate Buffer, a PyTorch tensor or an array with __cuda_array_interface__")


def tensor_map(runtime, tensor, box: Sequence[int], *, swizzle: str = "none", interleave: str = "none",
               l2_promotion: str = "none", oob_fill: str = "none", element_strides: Optional[Sequence[int]] = None,
               dtype: Any = None, tf32: bool = False) -> "TensorMap":
    """A tiled tensor map over ``tensor`` (a Buffer with a shape, a PyTorch tensor, or an array with
    ``__cuda_array_interface__``). ``box`` and ``element_strides`` are in the tensor's own order,
    outermost dimension first, like its shape; the map lists them innermost first, as the driver
    does. ``dtype`` overrides the element type (e.g. "u16" for the bits of an i16 tensor), ``tf32``
    reads f32 elements as tf32. The rules (alignment of the address and strides, box limits,
    swizzle against the box's inner bytes, the extent within the tensor's memory, sm_90+) are
    checked by the library: every violation raises at once (PG3701-PG3712). The tensor must
    outlive every launch that uses the map (the map keeps a reference)."""
    address, available, code, shape, strides, keep = _layout(tensor)
    if dtype is not None:
        code = dt.parse(dtype)
    type_name = _TMA_TYPE.get(code)
    if type_name is None:
        raise _usage(f"a tensor map has no {dt.name(code)} elements",
                     "use u8, u16, u32, i32, u64, i64, f16, bf16, f32 or f64 (dtype='u8' reads i8 bits)")
    if tf32:
        if code != dt.F32:
            raise _usage("tf32=True reads f32 elements; this tensor holds " + dt.name(code), "pass an f32 tensor")
        type_name = "tf32"
    rank = len(shape)
    if not 1 <= rank <= 5:
        raise _usage(f"a tensor map has 1 to 5 dimensions; this tensor has {rank}", "reshape the tensor")
    if len(box) != rank:
        raise _usage(f"box {tuple(box)} has {len(box)} dimensions, the tensor {rank}",
                     "give one box size per tensor dimension, outermost first")
    if strides[-1] != 1:
        raise _usage(f"the innermost dimension has stride {strides[-1]} elements; a tensor map reads it contiguously",
                     "pass a tensor whose last dimension is contiguous (tensor.contiguous())")
    size = dt.SIZES[code]
    d = _capi.TensorMapDesc()
    d.type = type_name.encode()
    d.rank = rank
    for i in range(rank):  # innermost first
        d.dims[i] = shape[rank - 1 - i]
        d.box[i] = int(box[rank - 1 - i])
        if element_strides is not None:
            d.element_strides[i] = int(element_strides[rank - 1 - i])
    for i in range(1, rank):
        d.strides[i - 1] = strides[rank - 1 - i] * size
    d.swizzle, d.interleave = swizzle.encode(), interleave.encode()
    d.l2_promotion, d.oob_fill = l2_promotion.encode(), oob_fill.encode()
    return TensorMap(runtime, d, tensor if address is None else None, address or 0, available, keep)


class TensorMap(_Owned):
    """An encoded tensor map: pass it for a ``tensor_map`` parameter. ``description`` says what it
    maps ("tiled bf16 tensor 64×64, box 64×64, swizzle 128B")."""

    _free_name = "ptxgate_tensor_map_free"

    def __init__(self, runtime, desc: _capi.TensorMapDesc, buffer, pointer: int, available: int, keep: Any):
        self._runtime = runtime
        self._handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_tensor_map_encode, runtime._live(), ctypes.byref(desc),
                   buffer._live() if buffer is not None else None, pointer, 0, available, ctypes.byref(self._handle))
        self._keep = keep
        self.description = _capi.lib().ptxgate_tensor_map_describe(self._handle).decode()

    _launch_kind = _capi.ARG_TENSOR_MAP  # the packer's descriptor: kind | _code << 4
    _code = 0

    def _launch_words(self, w):
        if not self._handle:
            raise freed(self)
        w.append(self._handle.value)
        w.append(_capi.ARG_TENSOR_MAP)
        return True

    def __repr__(self):
        return f"TensorMap({self.description})"
