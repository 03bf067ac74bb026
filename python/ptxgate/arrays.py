"""What a launch argument is, and its two 64-bit words for the packed launch: device memory used in
place (a ptxgate Buffer, a PyTorch tensor, a CuPy array, anything with ``__cuda_array_interface__``
or DLPack), a host array (numpy: copied in, and out for ``out``/``inout`` parameters), a tensor
map, or a scalar (Python ``int``, ``float`` and ``bool``, numpy scalars).

The words: a value (an address, a handle, a scalar's bits) and a descriptor
``kind | dtype << 4 | (device + 1) << 12 | elements << 20`` (src/ptxgate/capi/ptxgate.h,
ptxgate_kernel_launch_packed). The common types have a converter per exact type, found by one
dictionary lookup; anything else goes through ``describe``, which explains what it refuses."""
import ctypes
import math
import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from . import _capi
from . import dtypes as dt
from .diagnostics import Diagnostic, Error

MASK64 = (1 << 64) - 1
_F64 = struct.Struct("<d")
_F32 = struct.Struct("<f")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")
_MAX_ELEMENTS = 1 << 44

REAL = _capi.ARG_REAL
INTEGER = 5  # PTXGATE_ARG_INTEGER
U64_SCALAR = _capi.ARG_SCALAR | dt.U64 << 4
BOOL_SCALAR = _capi.ARG_SCALAR | dt.BOOL << 4
TENSOR_MAP = _capi.ARG_TENSOR_MAP


def _unsupported(index, name, what, fix):
    return Error([Diagnostic("PG5002", "error", f"argument {index} ('{name}'): {what}", fix=fix)])


def _not_contiguous(index, name, what):
    return Error([Diagnostic("PG5002", "error", f"argument {index} ('{name}'): {what} is not C-contiguous",
                             fix="pass a contiguous copy (numpy.ascontiguousarray, tensor.contiguous())")])


def pointer_words(address: int, code: int, elements: int, device: int):
    """The two words of device memory used in place."""
    return address, _capi.ARG_POINTER | code << 4 | (device + 1) << 12 | elements << 20


@dataclass
class HostArray:
    """A numpy array: uploaded before the launch, downloaded after it when the kernel writes it."""

    array: Any
    dtype: int
    elements: int


# ---------------------------------------------------------------- the fast converters


def _py_float(a, w):
    w.append(_U64.unpack(_F64.pack(a))[0])
    w.append(REAL)
    return True


def _py_int(a, w):
    if -0x8000000000000000 <= a <= 0x7FFFFFFFFFFFFFFF:
        w.append(a & MASK64)
        w.append(INTEGER)
        return True
    if 0 <= a <= MASK64:
        w.append(a)
        w.append(U64_SCALAR)
        return True
    return False


def _py_bool(a, w):
    w.append(1 if a else 0)
    w.append(BOOL_SCALAR)
    return True


def _torch_tensor(t, w):
    # Bail out (to describe(), which explains) for host tensors, layouts and types it refuses.
    device = t.get_device()
    if device < 0 or not t.is_contiguous():
        return False
    code = dt.from_torch(t.dtype)
    if code is None:
        return False
    n = t.numel()
    if n >= _MAX_ELEMENTS:
        return False
    w.append(t.data_ptr())
    w.append(_capi.ARG_POINTER | code << 4 | (device + 1) << 12 | n << 20)
    return True


def _numpy_scalar_converter(code: int) -> Callable:
    """A converter for numpy scalars of one type: they keep their type (validated strictly)."""
    desc = _capi.ARG_SCALAR | code << 4
    if code == dt.F32:
        def f32(a, w):
            w.append(_U32.unpack(_F32.pack(float(a)))[0])
            w.append(desc)
            return True
        return f32
    if code == dt.F64:
        def f64(a, w):
            w.append(_U64.unpack(_F64.pack(float(a)))[0])
            w.append(desc)
            return True
        return f64
    if code in (dt.F16, dt.BF16):
        def half(a, w):
            w.append(_U16.unpack(a.tobytes())[0])
            w.append(desc)
            return True
        return half
    if code == dt.BOOL:
        return _py_bool

    def integer(a, w):
        w.append(int(a) & MASK64)
        w.append(desc)
        return True
    return integer


# Exact type -> converter; types are added as they are first seen (see converter_for).
FAST: Dict[type, Callable] = {float: _py_float, int: _py_int, bool: _py_bool}
_REFUSED = object()


def converter_for(kind: type) -> Optional[Callable]:
    """The fast converter of values of exactly ``kind``, worked out once per type; None when values
    of that type take the general path (``describe``)."""
    f = FAST.get(kind, _REFUSED)
    if f is not _REFUSED:
        return f
    f = None
    module = kind.__module__ or ""
    if module.startswith("torch") and kind.__name__ in ("Tensor", "Parameter"):
        f = _torch_tensor
    elif module == "numpy" or module.startswith("ml_dtypes"):
        try:
            import numpy

            if issubclass(kind, numpy.generic):
                code = numpy.dtype(kind).kind == "b" and dt.BOOL or dt.from_numpy(numpy.dtype(kind))
                if code is not None:
                    f = _numpy_scalar_converter(code)
        except (ImportError, TypeError):
            f = None
    else:
        handle = getattr(kind, "_launch_words", None)  # ptxgate's Buffer and TensorMap
        if handle is not None:
            f = handle
    FAST[kind] = f
    return f


def _inline_scalar(kind: type):
    """(struct format of the value word, descriptor) of a scalar type whose value struct packs as
    its converter would (integers sign- or zero-extended to 64 bits, f32 bits in the low half);
    None for other types (they go through their converter)."""
    if kind is float:
        return "d", REAL
    if kind is int:
        return "q", INTEGER  # beyond int64: struct.error, and the converter's u64 path
    if kind is bool:
        return "?7x", BOOL_SCALAR
    if (kind.__module__ or "") != "numpy" or converter_for(kind) is None:
        return None
    import numpy

    code = dt.BOOL if numpy.dtype(kind).kind == "b" else dt.from_numpy(numpy.dtype(kind))
    desc = _capi.ARG_SCALAR | (code or 0) << 4
    if code == dt.BOOL:
        return "?7x", desc
    if code in (dt.I8, dt.I16, dt.I32, dt.I64):
        return "q", desc
    if code in (dt.U8, dt.U16, dt.U32, dt.U64):
        return "Q", desc
    if code == dt.F32:
        return "f4x", desc
    if code == dt.F64:
        return "d", desc
    return None


class _DescOf(dict):
    """An element type object (a torch.dtype, a numpy dtype, a typestr) -> the descriptor of device
    memory of it (``ARG_POINTER | code << 4``) and its element size, or None: worked out once."""

    def __init__(self, code_of: Callable[[Any], Optional[int]]):
        super().__init__()
        self._code_of = code_of

    def __missing__(self, key):
        try:
            code = self._code_of(key)
        except Exception:  # noqa: BLE001 - not an element type: the general path explains
            code = None
        value = None if code is None else (_capi.ARG_POINTER | code << 4, dt.SIZES[code])
        try:
            self[key] = value
        except TypeError:  # unhashable: not remembered
            pass
        return value


_TORCH_DESC = _DescOf(dt.from_torch)
_NUMPY_DESC = _DescOf(dt.from_numpy)
_TYPESTR_DESC = _DescOf(lambda t: dt.from_typestr(t) if isinstance(t, str) else None)


def _cupy_stream_reader():
    """How the stream CuPy's ``__cuda_array_interface__`` names (v3) is read: (a function, the
    attribute of its result that is the handle or None for the result itself, the stream a handle
    of 0 stands for: 1, the legacy default stream, or 2, the per-thread one). None when CuPy exports
    no stream (CUPY_CUDA_ARRAY_INTERFACE_SYNC=0)."""
    import os

    import cupy

    util = getattr(cupy, "_util", None)
    if not getattr(util, "CUDA_ARRAY_INTERFACE_SYNC", True):
        return None
    default = 2 if os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM") == "1" else 1
    ptr = getattr(getattr(cupy.cuda, "stream", None), "get_current_stream_ptr", None)
    if ptr is not None:
        return ptr, None, default
    # Stream objects are cached per thread by CuPy: this is one call and an attribute.
    return cupy.cuda.get_current_stream, "ptr", default


def _cupy_stream():
    """How the packer reads CuPy's stream: (an expression giving it, its names: CUPY_DEFAULT the
    stream a handle of 0 stands for), or None (see _cupy_stream_reader)."""
    reader = _cupy_stream_reader()
    if reader is None:
        return None
    fn, field, default = reader
    return "CUPY_FN()" + (f".{field}" if field else ""), {"CUPY_FN": fn, "CUPY_DEFAULT": default}


def _cupy_contiguity(kind: type):
    """The attribute of a cupy.ndarray that says it is C-contiguous (older CuPy: flags.c_contiguous)."""
    return "_c_contiguous" if hasattr(kind, "_c_contiguous") else ("flags", "c_contiguous")


def _is_cai_type(kind: type) -> bool:
    try:
        return "__cuda_array_interface__" in dir(kind)
    except Exception:  # noqa: BLE001
        return False


def _c_contiguous_cai(cai, itemsize) -> bool:
    return _c_contiguous(tuple(cai["shape"]), cai.get("strides"), itemsize)


def _inline(kind: type, i: int, writes: bool, env: Dict[str, Any]):
    """How the packer writes argument ``i`` of type ``kind`` without a call per argument: (format,
    lines that read it and ``return None`` for what the general path must explain, the two word
    expressions, the variable holding the stream the array was produced on or None); None when
    the type has no packing."""
    a = f"a{i}"
    inline = _inline_scalar(kind)
    if inline is not None:
        return inline[0] + "Q", [], [a, str(inline[1])], None
    module = kind.__module__ or ""
    if module.startswith("torch") and kind.__name__ in ("Tensor", "Parameter"):
        env["TORCH"] = _TORCH_DESC
        return "QQ", [f"d{i} = {a}.get_device()", f"t{i} = TORCH[{a}.dtype]",
                      f"if d{i} < 0 or t{i} is None or not {a}.is_contiguous(): return None",
                      f"n{i} = {a}.numel()", f"if n{i} >= MAXE: return None"], \
            [f"{a}.data_ptr()", f"t{i}[0] | (d{i} + 1) << 12 | n{i} << 20"], None
    if module.startswith("cupy") and kind.__name__ == "ndarray":
        env["NUMPY"] = _NUMPY_DESC
        contiguity = _cupy_contiguity(kind)
        contiguous = f"{a}.{contiguity if isinstance(contiguity, str) else '.'.join(contiguity)}"
        lines = [f"t{i} = NUMPY[{a}.dtype]", f"if t{i} is None or not {contiguous}: return None",
                 f"n{i} = {a}.size", f"if n{i} >= MAXE: return None", f"m{i} = {a}.data"]
        stream = None
        if "CUPY_STREAM" not in env:  # one stream for every CuPy array of the call: read once
            env["CUPY_STREAM"] = _cupy_stream()
            if env["CUPY_STREAM"] is not None:
                expression, names = env["CUPY_STREAM"]
                env.update(names)
                lines.append(f"cs = {expression} or CUPY_DEFAULT")
                stream = "cs"
        return "QQ", lines, [f"m{i}.ptr", f"t{i}[0] | (m{i}.device_id + 1) << 12 | n{i} << 20"], stream
    handle = getattr(kind, "_launch_words", None)
    if handle is not None:  # a ptxgate Buffer or TensorMap: its handle (a freed one raises)
        env[f"F{i}"] = handle
        return "QQ", [f"h{i} = {a}._handle.value", f"if not h{i}: F{i}({a}, [])"], \
            [f"h{i}", f"{kind._launch_kind} | {a}._code << 4"], None
    if module != "numpy" and _is_cai_type(kind):  # __cuda_array_interface__, read on every call
        env["TYPESTR"], env["CONTIGUOUS"], env["DEVICE_OF"] = _TYPESTR_DESC, _c_contiguous_cai, _device_of
        lines = [f"x{i} = {a}.__cuda_array_interface__", f"t{i} = TYPESTR[x{i}['typestr']]",
                 f"if t{i} is None or x{i}.get('strides') is not None and not CONTIGUOUS(x{i}, t{i}[1]): return None",
                 f"p{i}, r{i} = x{i}['data']", f"s{i} = x{i}.get('stream')", f"if s{i} == 0: return None",
                 f"n{i} = PROD(x{i}['shape'])", f"if n{i} >= MAXE: return None"]
        if writes:
            lines.append(f"if r{i}: return None")
        return "QQ", lines, [f"p{i}", f"t{i}[0] | (DEVICE_OF({a}) + 1) << 12 | n{i} << 20"], f"s{i}"
    f = converter_for(kind)  # the rest (f16 and bf16 numpy scalars): a converter call
    if f is None:
        return None
    env[f"F{i}"] = f
    return "QQ", [f"w{i} = []", f"if not F{i}({a}, w{i}): return None"], [f"w{i}[0]", f"w{i}[1]"], None


def native_kind(kind: type):
    """What the C launch path (python/ext/launch.c) does with arguments of exactly ``kind``, decided
    once per type as ``_inline`` decides for the packer: (the kind's name, the descriptor's kind and
    dtype bits of a scalar or a ptxgate object, what the walk needs: torch.Tensor's methods, or
    CuPy's contiguity attribute and stream reader). "python": the Python launcher's path."""
    if kind is float:
        return "float", REAL, None
    if kind is int:
        return "int", INTEGER, None
    if kind is bool:
        return "bool", BOOL_SCALAR, None
    module = kind.__module__ or ""
    if module.startswith("torch") and kind.__name__ in ("Tensor", "Parameter"):
        return "torch", 0, (kind.get_device, kind.is_contiguous, kind.numel, kind.data_ptr)
    if module.startswith("cupy") and kind.__name__ == "ndarray":
        reader = _cupy_stream_reader()
        return "cupy", 0, (_cupy_contiguity(kind),) + (reader if reader is not None else (None, None, 1))
    if getattr(kind, "_launch_words", None) is not None:  # a ptxgate Buffer or TensorMap
        return "owned", kind._launch_kind, None
    if module != "numpy" and _is_cai_type(kind):
        return "cai", 0, None
    if converter_for(kind) is not None and (module == "numpy" or module.startswith("ml_dtypes")):
        import numpy

        code = dt.BOOL if numpy.dtype(kind).kind == "b" else dt.from_numpy(numpy.dtype(kind))
        desc = _capi.ARG_SCALAR | (code or 0) << 4
        names = {dt.BOOL: "numpy_bool", dt.F32: "f32", dt.F64: "f64", dt.F16: "half", dt.BF16: "half"}
        names.update({c: "signed" for c in dt.SIGNED})
        names.update({c: "unsigned" for c in (dt.U8, dt.U16, dt.U32, dt.U64)})
        if code in names:
            return names[code], desc, None
    return "python", 0, None


def packer_for(types, writes=()) -> Optional[Callable]:
    """A function ``pack(args, head, stream, launch_stream=None, wait=None)`` for arguments of
    exactly these types: the packed request's argument words after ``head`` (bytes of the first
    eight words) and the stream word, read without a call per argument and made by one
    ``struct`` call; or None when an argument's type differs from ``types`` or a value needs the
    general path (which explains what it refuses). ``writes[i]``: parameter ``i`` is written (a
    read-only ``__cuda_array_interface__`` array is refused there). An array that names the
    stream it was produced on (``__cuda_array_interface__`` v3, CuPy's current stream) other than
    ``launch_stream``'s (a ptxgate Stream; None: the legacy default stream) has
    ``wait(launch_stream, stream)``
    called before the words are returned. Equal, word for word, to what the general path makes.
    None when a type has no packing."""
    lines, fmt, fields, env, streams = [], "<Q", ["stream"], {"MAXE": _MAX_ELEMENTS}, []
    for i, kind in enumerate(types):
        env[f"T{i}"] = kind
        spec = _inline(kind, i, bool(writes[i]) if i < len(writes) else False, env)
        if spec is None:
            return None
        f, body, words, stream = spec
        fmt += f
        lines += ["    " + line for line in body]
        fields += words
        if stream is not None:
            streams.append(stream)
    env["S"] = struct.Struct(fmt)
    env["PROD"] = math.prod
    names = ", ".join(f"a{i}" for i in range(len(types)))
    check = " or ".join(f"type(a{i}) is not T{i}" for i in range(len(types))) or "False"
    source = "def pack(args, head, stream, launch_stream=None, wait=None):\n"
    if types:
        source += f"    {names}{',' if len(types) == 1 else ''} = args\n"
    source += f"    if {check}: return None\n" + "".join(line + "\n" for line in lines)
    source += f"    data = head + S.pack({', '.join(fields)})\n"
    if streams:
        source += "    cu = 1 if launch_stream is None else launch_stream._cu\n"
        for j, v in enumerate(streams):  # each producer's stream once
            seen = "".join(f" and {v} != {w}" for w in streams[:j])
            source += f"    if {v} is not None and {v} != cu{seen}: wait(launch_stream, {v})\n"
    source += "    return data\n"
    exec(compile(source, f"<ptxgate packer {len(types)} arguments>", "exec"), env)
    return env["pack"]


# ---------------------------------------------------------------- the general path


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


def _from_cuda_array_interface(obj, index, name, writes=False, streams=None):
    cai = obj.__cuda_array_interface__
    shape = tuple(cai["shape"])
    stream = cai.get("stream")
    if stream == 0 or not (stream is None or isinstance(stream, int)):
        raise _unsupported(index, name, f"its __cuda_array_interface__ names stream {stream!r}",
                           "a producer names the stream its data is ready on: None, 1 (the legacy default stream), "
                           "2 (the per-thread default stream) or a CUstream (version 3 refuses 0)")
    if writes and cai["data"][1]:
        raise _unsupported(index, name, "a read-only array (__cuda_array_interface__) for a parameter the kernel writes",
                           "pass a writable array, or a copy of this one")
    code = dt.from_typestr(cai["typestr"])
    if code is None:
        raise _unsupported(index, name, f"an array of typestr {cai['typestr']!r}",
                           "buffers hold i8 u8 i16 u16 i32 u32 i64 u64 f16 f32 f64 (little-endian) through "
                           "__cuda_array_interface__; bf16 through DLPack or a torch tensor")
    if not _c_contiguous(shape, cai.get("strides"), dt.SIZES[code]):
        raise _not_contiguous(index, name, "the device array")
    if stream is not None and streams is not None:
        streams.append(stream)
    return pointer_words(int(cai["data"][0]), code, math.prod(shape), _device_of(obj)), obj


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13


def _from_dlpack(obj, index, name):
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
    code = dt.from_dlpack(tensor.dtype.code, tensor.dtype.bits)
    if code is None or tensor.dtype.lanes != 1:
        raise _unsupported(index, name, f"a DLPack tensor of type code {tensor.dtype.code}, {tensor.dtype.bits} bits",
                           "buffers hold i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64")
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    itemsize = tensor.dtype.bits // 8
    strides = None if not tensor.strides else [tensor.strides[i] * itemsize for i in range(tensor.ndim)]
    if not _c_contiguous(shape, strides, itemsize):
        raise _not_contiguous(index, name, "the DLPack tensor")
    elements = 1
    for d in shape:
        elements *= d
    return pointer_words((tensor.data or 0) + tensor.byte_offset, code, elements, device_id), (obj, capsule)


def _from_numpy(obj, index, name) -> HostArray:
    code = dt.from_numpy(obj.dtype)
    if code is None:
        raise _unsupported(index, name, f"a numpy array of dtype {obj.dtype}",
                           "buffers hold int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16 bfloat16 "
                           "float32 float64 elements")
    if not obj.flags["C_CONTIGUOUS"]:
        raise _not_contiguous(index, name, "the numpy array")
    return HostArray(obj, code, obj.size)


def _torch_general(obj, index, name):
    if obj.get_device() < 0:  # as PyTorch does, a tensor on the CPU is not moved behind the caller's back
        raise _unsupported(index, name, "a PyTorch tensor on the CPU",
                           "move it to the GPU first (tensor.cuda()), or pass tensor.numpy() to have it copied in and out")
    if not obj.is_contiguous():
        raise _not_contiguous(index, name, "the tensor")
    code = dt.from_torch(obj.dtype)
    if code is None:
        raise _unsupported(index, name, f"a tensor of {obj.dtype}",
                           "buffers hold int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16 bfloat16 "
                           "float32 float64 elements")
    return pointer_words(obj.data_ptr(), code, obj.numel(), obj.get_device()), None


def describe(obj, index: int, name: str, param_type: Optional[str], writes: bool = False, streams=None):
    """The general path: ((value, descriptor), keep-alive) for device memory, a HostArray for a
    numpy array, or ((value, descriptor), None) for a scalar. Raises Error (PG5002) naming the
    argument for anything it cannot pass (a read-only ``__cuda_array_interface__`` array where
    ``writes``). The stream a ``__cuda_array_interface__`` array names (version 3: the consumer
    orders its work after that stream's) is appended to ``streams``."""
    words: List[int] = []
    kind = type(obj)
    fast = converter_for(kind)
    if fast is not None and fast is not _torch_tensor and fast(obj, words):
        return (words[0], words[1]), None
    module = kind.__module__ or ""
    if module.startswith("torch") and hasattr(obj, "data_ptr"):
        return _torch_general(obj, index, name)
    if isinstance(obj, int) and not isinstance(obj, bool):
        raise _unsupported(index, name, f"the integer {obj} does not fit 64 bits", "pass a smaller value")
    try:
        has_cai = hasattr(obj, "__cuda_array_interface__")
    except Exception as e:  # a library may refuse to describe some arrays
        raise _unsupported(index, name, f"its __cuda_array_interface__ is refused: {e}",
                           "pass the array through DLPack, or a contiguous copy") from None
    if has_cai:
        return _from_cuda_array_interface(obj, index, name, writes, streams)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__") and not hasattr(obj, "__array_interface__"):
        return _from_dlpack(obj, index, name)
    if module == "numpy" and kind.__name__ == "ndarray":
        return _from_numpy(obj, index, name)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj, index, name)
    if module == "numpy" and hasattr(obj, "dtype"):
        raise _unsupported(index, name, f"a numpy scalar of dtype {obj.dtype}",
                           "pass a scalar of a number type (float32, int64, ...) or a Python number")
    raise _unsupported(index, name, f"a {kind.__name__} is neither an array nor a scalar",
                       "pass a GPU tensor (PyTorch, CuPy, __cuda_array_interface__ or DLPack), a ptxgate Buffer, "
                       "a numpy array, a TensorMap, an int, a float or a bool")


def classify(obj, index: int, name: str):
    """For callers that only ask what ``obj`` is: a HostArray, device-memory words, or None for a
    scalar."""
    described = describe(obj, index, name, None)
    if isinstance(described, HostArray):
        return described
    (value, desc), _ = described
    return (value, desc) if desc & 0xF in (_capi.ARG_POINTER, _capi.ARG_BUFFER) else None
