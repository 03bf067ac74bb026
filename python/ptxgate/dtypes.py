"""Element types: the IR's names and the C API's codes, and how numpy, PyTorch, CuPy,
``__cuda_array_interface__`` and DLPack spell each of them."""
from typing import Any, Optional

from . import _capi
from .diagnostics import Diagnostic, Error

UNKNOWN, BOOL, I32, U32, I64, U64, F32, F64, I8, U8, I16, U16, F16, BF16 = range(14)

#: The IR's name of each C API dtype code.
NAMES = {UNKNOWN: "unknown", BOOL: "bool", I32: "i32", U32: "u32", I64: "i64", U64: "u64", F32: "f32", F64: "f64",
         I8: "i8", U8: "u8", I16: "i16", U16: "u16", F16: "f16", BF16: "bf16"}
CODES = {name: code for code, name in NAMES.items()}
#: Bytes of one element (bool: 4, as a kernel parameter).
SIZES = {UNKNOWN: 1, BOOL: 4, I32: 4, U32: 4, I64: 8, U64: 8, F32: 4, F64: 8, I8: 1, U8: 1, I16: 2, U16: 2,
         F16: 2, BF16: 2}
FLOATS = (F16, BF16, F32, F64)
SIGNED = (I8, I16, I32, I64)

# Array-interface typestr (numpy's dtype.str, __cuda_array_interface__) without the byte order.
_TYPESTR = {"f2": F16, "f4": F32, "f8": F64, "i1": I8, "u1": U8, "i2": I16, "u2": U16, "i4": I32, "u4": U32,
            "i8": I64, "u8": U64}
TYPESTR_OF = {F16: "<f2", F32: "<f4", F64: "<f8", I8: "|i1", U8: "|u1", I16: "<i2", U16: "<u2", I32: "<i4",
              U32: "<u4", I64: "<i8", U64: "<u8"}
# DLPack (type code, bits): kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4.
_DLPACK = {(0, 8): I8, (0, 16): I16, (0, 32): I32, (0, 64): I64, (1, 8): U8, (1, 16): U16, (1, 32): U32,
           (1, 64): U64, (2, 16): F16, (2, 32): F32, (2, 64): F64, (4, 16): BF16}
# PyTorch's dtype names (torch.float32 is "torch.float32").
_TORCH = {"float16": F16, "bfloat16": BF16, "float32": F32, "float64": F64, "int8": I8, "uint8": U8, "int16": I16,
          "uint16": U16, "int32": I32, "uint32": U32, "int64": I64, "uint64": U64}
_TORCH_CACHE = {}


def name(code: int) -> str:
    return NAMES.get(code, f"dtype {code}")


def from_typestr(typestr: str) -> Optional[int]:
    """The code of an array-interface typestr ('<f2', '|u1'); None for big-endian or other data."""
    if len(typestr) < 3 or typestr[0] not in "<|=":
        return None
    return _TYPESTR.get(typestr[1:])


def from_dlpack(code: int, bits: int) -> Optional[int]:
    return _DLPACK.get((code, bits))


def from_torch(dtype: Any) -> Optional[int]:
    """The code of a torch.dtype (cached per dtype object: the launch path asks for it)."""
    code = _TORCH_CACHE.get(dtype)
    if code is None:
        code = _TORCH.get(str(dtype).rpartition(".")[2])
        if code is not None:
            _TORCH_CACHE[dtype] = code
    return code


def from_numpy(dtype: Any) -> Optional[int]:
    """The code of a numpy dtype; bfloat16 of ml_dtypes (numpy has none of its own) counts too."""
    if getattr(dtype, "name", "") == "bfloat16":
        return BF16
    return from_typestr(getattr(dtype, "str", ""))


def parse(dtype: Any) -> int:
    """The code of a dtype given as an IR name ('bf16'), a numpy or torch dtype, or a code."""
    if isinstance(dtype, int) and dtype in NAMES:
        return dtype
    if isinstance(dtype, str):
        if dtype in CODES:
            return CODES[dtype]
        aliases = {"float16": F16, "half": F16, "bfloat16": BF16, "float32": F32, "float": F32, "float64": F64,
                   "double": F64, "int8": I8, "uint8": U8, "int16": I16, "uint16": U16, "int32": I32, "uint32": U32,
                   "int64": I64, "uint64": U64}
        if dtype in aliases:
            return aliases[dtype]
    elif type(dtype).__module__.startswith("torch"):
        code = from_torch(dtype)
        if code is not None:
            return code
    else:
        try:
            import numpy

            code = from_numpy(numpy.dtype(dtype))
            if code is not None:
                return code
        except (ImportError, TypeError):
            pass
    raise Error([Diagnostic("PG5002", "error", f"{dtype!r} is not an element type ptxgate knows",
                            fix="name one of " + ", ".join(n for c, n in NAMES.items() if c not in (UNKNOWN, BOOL)))])


def numpy_dtype(code: int):
    """The numpy dtype of a code (bf16: ml_dtypes.bfloat16 when installed, else uint16 bits)."""
    import numpy

    if code == BF16:
        try:
            import ml_dtypes

            return numpy.dtype(ml_dtypes.bfloat16)
        except ImportError:
            return numpy.dtype(numpy.uint16)
    if code not in TYPESTR_OF:
        raise Error([Diagnostic("PG5002", "error", f"{name(code)} has no numpy dtype",
                                fix="view the memory as a typed buffer")])
    return numpy.dtype(TYPESTR_OF[code])


def float_bits(value: float, code: int) -> int:
    """The bits of ``value`` as a float of ``code`` (f16, bf16, f32, f64), rounded to nearest, ties
    to even, by the library (the IR's rounding); Error (PG5002) beyond the type's range."""
    from .diagnostics import check_call
    import ctypes

    out = ctypes.c_uint64()
    check_call(_capi.lib().ptxgate_float_bits, float(value), code, ctypes.byref(out))
    return out.value
