"""What a launch argument is: a host array (numpy: copied in and out), device memory described
by ``__cuda_array_interface__`` or DLPack (PyTorch, CuPy, Numba: used in place), or a scalar."""
import ctypes
from dataclasses import dataclass
from typing import Any, Optional, Tuple

from . import _capi
from .diagnostics import Diagnostic, Error

# typestr kind+size (numpy's and __cuda_array_interface__'s) -> the C API's dtype.
_TYPESTR = {"f4": _capi.DTYPE_F32, "f8": _capi.DTYPE_F64, "i4": _capi.DTYPE_I32, "u4": _capi.DTYPE_U32,
            "i8": _capi.DTYPE_I64, "u8": _capi.DTYPE_U64}
# DLPack (type code, bits) -> dtype: kDLInt 0, kDLUInt 1, kDLFloat 2.
_DLPACK = {(0, 32): _capi.DTYPE_I32, (1, 32): _capi.DTYPE_U32, (0, 64): _capi.DTYPE_I64, (1, 64): _capi.DTYPE_U64,
           (2, 32): _capi.DTYPE_F32, (2, 64): _capi.DTYPE_F64}
_KDL_CPU, _KDL_CUDA, _KDL_CUDA_MANAGED = 1, 2, 13


def _unsupported(index, name, what, fix):
    return Error([Diagnostic("PG5002", "error", f"argument {index} ('{name}'): {what}", fix=fix)])


def _not_contiguous(index, name, what):
    return Error([Diagnostic("PG5002", "error", f"argument {index} ('{name}'): {what} is not C-contiguous",
                             fix="pass a contiguous copy (numpy.ascontiguousarray, tensor.contiguous())")])


@dataclass
class DeviceArray:
    """Device memory used in place."""

    pointer: int
    dtype: int
    elements: int
    device: int            # CUDA ordinal, -1 unknown
    keep_alive: Any = None  # the object (or DLPack capsule) that owns the memory


@dataclass
class HostArray:
    """A numpy array: uploaded before the launch, downloaded after it when the kernel writes it."""

    array: Any
    dtype: int
    elements: int


def _dtype_of_typestr(typestr: str) -> Optional[int]:
    if len(typestr) < 3 or typestr[0] not in "<|=":
        return None  # big-endian data cannot be passed as is
    return _TYPESTR.get(typestr[1:])


def _c_contiguous(shape, strides, itemsize) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _device_of(obj) -> int:
    dev = getattr(obj, "device", None)
    for attr in ("index", "id"):  # torch.device.index, cupy.cuda.Device.id
        value = getattr(dev, attr, None)
        if isinstance(value, int):
            return value
    return -1


def _from_cuda_array_interface(obj, index, name) -> DeviceArray:
    cai = obj.__cuda_array_interface__
    shape = tuple(cai["shape"])
    dtype = _dtype_of_typestr(cai["typestr"])
    if dtype is None:
        raise _unsupported(index, name, f"an array of typestr {cai['typestr']!r}",
                           "buffers hold f32, f64, i32, u32, i64 or u64 (little-endian)")
    itemsize = int(cai["typestr"][2:])
    if not _c_contiguous(shape, cai.get("strides"), itemsize):
        raise _not_contiguous(index, name, "the device array")
    elements = 1
    for d in shape:
        elements *= d
    return DeviceArray(int(cai["data"][0]), dtype, elements, _device_of(obj), obj)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


def _from_dlpack(obj, index, name) -> DeviceArray:
    device_type, device_id = obj.__dlpack_device__()
    if device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        raise _unsupported(index, name, f"a DLPack tensor on device type {device_type} (not CUDA)",
                           "move it to the GPU first, or pass a numpy array (copied)")
    capsule = obj.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    # A DLManagedTensor starts with its DLTensor. The capsule stays unconsumed (its name is kept),
    # so its destructor frees the tensor when the capsule goes after the launch.
    tensor = _DLTensor.from_address(get(capsule, b"dltensor"))
    key = (tensor.dtype.code, tensor.dtype.bits)
    if key not in _DLPACK or tensor.dtype.lanes != 1:
        raise _unsupported(index, name, f"a DLPack tensor of type code {key[0]}, {key[1]} bits",
                           "buffers hold f32, f64, i32, u32, i64 or u64")
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    strides = None if not tensor.strides else [tensor.strides[i] * (tensor.dtype.bits // 8) for i in range(tensor.ndim)]
    if not _c_contiguous(shape, strides, tensor.dtype.bits // 8):
        raise _not_contiguous(index, name, "the DLPack tensor")
    elements = 1
    for d in shape:
        elements *= d
    return DeviceArray((tensor.data or 0) + tensor.byte_offset, _DLPACK[key], elements, device_id, (obj, capsule))


def _from_numpy(obj, index, name) -> HostArray:
    dtype = _dtype_of_typestr(obj.dtype.str)
    if dtype is None:
        raise _unsupported(index, name, f"a numpy array of dtype {obj.dtype}",
                           "buffers hold float32, float64, int32, uint32, int64 or uint64")
    if not obj.flags["C_CONTIGUOUS"]:
        raise _not_contiguous(index, name, "the numpy array")
    return HostArray(obj, dtype, obj.size)


def classify(obj, index: int, name: str):
    """DeviceArray, HostArray, or None when ``obj`` is not an array (then it may be a scalar)."""
    try:
        has_cai = hasattr(obj, "__cuda_array_interface__")
    except Exception as e:  # e.g. PyTorch refuses a tensor that requires grad
        raise _unsupported(index, name, f"its __cuda_array_interface__ is refused: {e}",
                           "pass tensor.detach() (or an array without autograd)") from None
    if has_cai:
        return _from_cuda_array_interface(obj, index, name)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__") and not hasattr(obj, "__array_interface__"):
        return _from_dlpack(obj, index, name)
    if type(obj).__module__ == "numpy" and type(obj).__name__ == "ndarray":
        return _from_numpy(obj, index, name)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj, index, name)
    return None


def _float_bits(value: float, dtype: int) -> int:
    if dtype == _capi.DTYPE_F32:
        return ctypes.c_uint32.from_buffer(ctypes.c_float(value)).value
    return ctypes.c_uint64.from_buffer(ctypes.c_double(value)).value


def scalar(obj, index: int, name: str, param_type: Optional[str]) -> Tuple[int, int]:
    """(dtype, bits) of a scalar. A numpy scalar keeps its own type (validated strictly); a
    Python float (or an int, for a float parameter) takes the parameter's float type, a Python
    int is an i64 (converted by the library when it fits the parameter), a bool is a bool."""
    if isinstance(obj, bool):
        return _capi.DTYPE_BOOL, int(obj)
    if type(obj).__module__ == "numpy" and hasattr(obj, "dtype"):
        if obj.dtype.kind == "b":
            return _capi.DTYPE_BOOL, int(bool(obj))
        dtype = _dtype_of_typestr(obj.dtype.str)
        if dtype is None:
            raise _unsupported(index, name, f"a numpy scalar of dtype {obj.dtype}",
                               "pass float32, float64, int32, uint32, int64 or uint64")
        if dtype in (_capi.DTYPE_F32, _capi.DTYPE_F64):
            return dtype, _float_bits(float(obj), dtype)
        return dtype, int(obj) & 0xFFFFFFFFFFFFFFFF
    if isinstance(obj, int) and param_type in ("f32", "f64"):
        obj = float(obj)  # a Python int for a float parameter is that number
    if isinstance(obj, int):
        if obj >= 1 << 63:
            if obj >= 1 << 64:
                raise _unsupported(index, name, f"the integer {obj} does not fit 64 bits", "pass a smaller value")
            return _capi.DTYPE_U64, obj
        if obj < -(1 << 63):
            raise _unsupported(index, name, f"the integer {obj} does not fit 64 bits", "pass a smaller value")
        return _capi.DTYPE_I64, obj & 0xFFFFFFFFFFFFFFFF
    if isinstance(obj, float):
        dtype = _capi.DTYPE_F32 if param_type == "f32" else _capi.DTYPE_F64
        return dtype, _float_bits(obj, dtype)
    raise _unsupported(index, name, f"a {type(obj).__name__} is neither an array nor a scalar",
                       "pass a numpy array, a GPU tensor (__cuda_array_interface__ or DLPack), a ptxgate Buffer, "
                       "an int, a float or a bool")
