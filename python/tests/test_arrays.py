"""How launch arguments are read into the packed launch's words: numpy arrays of every element
type, __cuda_array_interface__ and DLPack objects (bf16 too), PyTorch-like tensors, scalars and
stream objects (no device needed)."""
import ctypes
import struct

import numpy as np
import pytest

import ptxgate
from ptxgate import _capi
from ptxgate import dtypes as dt
from ptxgate.arrays import FAST, HostArray, classify, converter_for, describe, packer_for
from ptxgate.runtime import stream_handle

DESC_DTYPE = lambda desc: (desc >> 4) & 0xFF  # noqa: E731
DESC_DEVICE = lambda desc: ((desc >> 12) & 0xFF) - 1  # noqa: E731
DESC_ELEMENTS = lambda desc: desc >> 20  # noqa: E731


class FakeDeviceArray:
    """An object that describes device memory the way CuPy and Numba do."""

    def __init__(self, pointer, shape, typestr="<f4", strides=None, device=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (pointer, False),
                                         "strides": strides, "version": 3}
        if device is not None:
            self.device = type("Device", (), {"id": device})()


ALL_NUMPY = [(np.float16, dt.F16), (np.float32, dt.F32), (np.float64, dt.F64), (np.int8, dt.I8), (np.uint8, dt.U8),
             (np.int16, dt.I16), (np.uint16, dt.U16), (np.int32, dt.I32), (np.uint32, dt.U32), (np.int64, dt.I64),
             (np.uint64, dt.U64)]


def test_numpy_arrays_of_every_element_type_are_host_arrays_with_their_dtype():
    for dtype, code in ALL_NUMPY:
        a = classify(np.zeros((4, 5), dtype=dtype), 0, "y")
        assert isinstance(a, HostArray) and a.dtype == code and a.elements == 20, dtype


def test_numpy_arrays_that_cannot_be_passed():
    with pytest.raises(ptxgate.Error) as info:
        classify(np.zeros(10, dtype=np.float32)[::2], 1, "x")
    assert info.value.codes == ["PG5002"] and "argument 1 ('x')" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        classify(np.zeros(10, dtype=np.complex64), 0, "y")
    assert info.value.codes == ["PG5002"] and "complex64" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        classify(np.zeros(10, dtype=">f4"), 0, "y")
    assert info.value.codes == ["PG5002"]


def test_cuda_array_interface_of_every_typestr_is_used_in_place():
    value, desc = classify(FakeDeviceArray(0x7000, (8, 4), device=1), 0, "y")
    assert value == 0x7000 and desc & 0xF == _capi.ARG_POINTER
    assert (DESC_DTYPE(desc), DESC_ELEMENTS(desc), DESC_DEVICE(desc)) == (dt.F32, 32, 1)
    for typestr, code in [("<f2", dt.F16), ("|i1", dt.I8), ("|u1", dt.U8), ("<i2", dt.I16), ("<u2", dt.U16),
                          ("<i8", dt.I64), ("<f8", dt.F64)]:
        value, desc = classify(FakeDeviceArray(0x7000, (8,), typestr=typestr), 0, "y")
        assert DESC_DTYPE(desc) == code and DESC_DEVICE(desc) == -1, typestr
    with pytest.raises(ptxgate.Error) as info:
        classify(FakeDeviceArray(0x7000, (8, 4), strides=(4, 32)), 0, "y")  # a transposed view
    assert info.value.codes == ["PG5002"]
    with pytest.raises(ptxgate.Error) as info:
        classify(FakeDeviceArray(0x7000, (8,), typestr="<V2"), 0, "y")  # bf16 has no typestr
    assert info.value.codes == ["PG5002"] and "DLPack" in info.value.text


class FakeDLPack:
    """A CUDA tensor through DLPack, built by hand: data pointer, dtype (code, bits), shape."""

    class _Device(ctypes.Structure):
        _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]

    class _Type(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

    class _Tensor(ctypes.Structure):
        pass

    _Tensor._fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _Type),
                        ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                        ("byte_offset", ctypes.c_uint64)]

    def __init__(self, pointer, shape, code, bits, device=0, strides=None):
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(shape))(*strides) if strides else None
        self.tensor = self._Tensor(pointer, self._Device(2, device), len(shape), self._Type(code, bits, 1),
                                   ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)),
                                   ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64)) if strides else None, 0)
        self.device_id = device

    def __dlpack_device__(self):
        return (2, self.device_id)

    def __dlpack__(self, stream=None):
        make = ctypes.pythonapi.PyCapsule_New
        make.restype = ctypes.py_object
        make.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return make(ctypes.addressof(self.tensor), b"dltensor", None)


def test_dlpack_carries_every_type_bf16_by_its_bfloat_code():
    for (code, bits), want in [((4, 16), dt.BF16), ((2, 16), dt.F16), ((0, 8), dt.I8), ((1, 16), dt.U16),
                               ((2, 32), dt.F32), ((1, 64), dt.U64)]:
        value, desc = classify(FakeDLPack(0x9000, (3, 5), code, bits, device=0), 0, "x")
        assert value == 0x9000 and DESC_DTYPE(desc) == want and DESC_ELEMENTS(desc) == 15, (code, bits)
    with pytest.raises(ptxgate.Error) as info:
        classify(FakeDLPack(0x9000, (3,), 5, 64), 0, "x")  # complex
    assert info.value.codes == ["PG5002"]
    with pytest.raises(ptxgate.Error) as info:
        classify(FakeDLPack(0x9000, (3, 5), 4, 16, strides=(1, 3)), 0, "x")
    assert info.value.codes == ["PG5002"] and "C-contiguous" in info.value.text


def test_dlpack_of_a_host_tensor_is_refused():
    a = np.zeros(4, dtype=np.float32)
    if not hasattr(a, "__dlpack__"):
        pytest.skip("this numpy has no DLPack")

    class HostOnly:
        def __dlpack__(self, stream=None):
            return a.__dlpack__()

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    with pytest.raises(ptxgate.Error) as info:
        classify(HostOnly(), 2, "z")
    assert info.value.codes == ["PG5002"] and "not CUDA" in info.value.text


def words(obj):
    w = []
    f = converter_for(type(obj))
    assert f is not None and f(obj, w), obj
    return w


def test_python_scalars_are_untyped_numbers_and_numpy_scalars_keep_their_type():
    assert words(2.5) == [struct.unpack("<Q", struct.pack("<d", 2.5))[0], _capi.ARG_REAL]
    assert words(-3) == [(-3) & 0xFFFFFFFFFFFFFFFF, 5]  # PTXGATE_ARG_INTEGER
    assert words(1 << 63) == [1 << 63, _capi.ARG_SCALAR | dt.U64 << 4]
    assert words(True) == [1, _capi.ARG_SCALAR | dt.BOOL << 4]
    assert words(np.float32(1.5)) == [struct.unpack("<I", struct.pack("<f", 1.5))[0], _capi.ARG_SCALAR | dt.F32 << 4]
    assert words(np.float64(1.5))[1] == _capi.ARG_SCALAR | dt.F64 << 4
    assert words(np.float16(1.0)) == [0x3C00, _capi.ARG_SCALAR | dt.F16 << 4]
    assert words(np.int8(-1)) == [0xFFFFFFFFFFFFFFFF, _capi.ARG_SCALAR | dt.I8 << 4]
    assert words(np.uint16(65535)) == [65535, _capi.ARG_SCALAR | dt.U16 << 4]
    assert words(np.bool_(True)) == [1, _capi.ARG_SCALAR | dt.BOOL << 4]
    assert converter_for(np.ndarray) is None  # arrays take the general path (they are copied)
    for bad in ([1, 2], "3", None):
        with pytest.raises(ptxgate.Error) as info:
            describe(bad, 3, "n", "u32")
        assert info.value.codes == ["PG5002"] and "argument 3 ('n')" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        describe(1 << 64, 3, "n", "u64")
    assert "does not fit 64 bits" in info.value.text


class FakeTorchTensor:
    """Stands for torch.Tensor in the fast converter's eyes (module and class name)."""

    def __init__(self, pointer, numel, dtype, device=0, contiguous=True):
        self._p, self._n, self.dtype, self._d, self._c = pointer, numel, dtype, device, contiguous

    def get_device(self):
        return self._d

    def is_contiguous(self):
        return self._c

    def numel(self):
        return self._n

    def data_ptr(self):
        return self._p


FakeTorchTensor.__module__ = "torch"
FakeTorchTensor.__name__ = "Tensor"


class TorchDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


def test_torch_tensors_of_every_dtype_pass_their_pointer_device_and_count():
    FAST.pop(FakeTorchTensor, None)
    for name, code in [("bfloat16", dt.BF16), ("float16", dt.F16), ("uint8", dt.U8), ("int8", dt.I8),
                       ("int16", dt.I16), ("uint16", dt.U16), ("float32", dt.F32), ("int64", dt.I64)]:
        value, desc = words(FakeTorchTensor(0x5000, 77, TorchDtype(name), device=1))
        assert value == 0x5000 and (DESC_DTYPE(desc), DESC_ELEMENTS(desc), DESC_DEVICE(desc)) == (code, 77, 1), name
    w = []
    assert not converter_for(FakeTorchTensor)(FakeTorchTensor(0x5000, 7, TorchDtype("float32"), contiguous=False), w)
    with pytest.raises(ptxgate.Error) as info:  # the general path explains
        describe(FakeTorchTensor(0x5000, 7, TorchDtype("float32"), contiguous=False), 0, "x", None)
    assert "C-contiguous" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        describe(FakeTorchTensor(0x5000, 7, TorchDtype("complex64")), 0, "x", None)
    assert "complex64" in info.value.text
    with pytest.raises(ptxgate.Error) as info:  # on the CPU (get_device() -1): refused, not copied
        describe(FakeTorchTensor(0x5000, 7, TorchDtype("float32"), device=-1), 0, "x", None)
    assert info.value.codes == ["PG5002"] and "on the CPU" in info.value.text and "tensor.cuda()" in info.value.text


def test_dtype_names_and_spellings():
    assert dt.parse("bf16") == dt.BF16 and dt.parse("bfloat16") == dt.BF16 and dt.parse(np.float16) == dt.F16
    assert dt.parse("uint8") == dt.U8 and dt.parse(np.dtype("<i2")) == dt.I16
    with pytest.raises(ptxgate.Error):
        dt.parse("complex")


def test_stream_objects():
    assert stream_handle(0x1234) == 0x1234
    assert stream_handle(type("TorchLike", (), {"cuda_stream": 0x10})()) == 0x10
    assert stream_handle(type("CupyLike", (), {"ptr": 0x20})()) == 0x20
    assert stream_handle(type("Protocol", (), {"__cuda_stream__": lambda self: (0, 0x30)})()) == 0x30
    with pytest.raises(ptxgate.Error) as info:
        stream_handle("default")
    assert info.value.codes == ["PG5002"]


def test_a_packer_packs_word_for_word_what_the_converters_append():
    values = [1.5, -7, 1 << 62, True, False, np.int8(-3), np.uint8(250), np.int16(-300), np.uint16(65535),
              np.int32(-5), np.uint32(4000000000), np.int64(-(1 << 40)), np.uint64((1 << 64) - 1),
              np.float32(0.1), np.float64(-2.5), np.bool_(True), np.float16(1.5), float("nan"),
              FakeTorchTensor(0x7000, 99, TorchDtype("bfloat16"), device=0)]
    FAST.pop(FakeTorchTensor, None)
    head = bytes(range(64))
    pack = packer_for(tuple(type(v) for v in values))
    expected = [0x1234]
    for v in values:
        assert converter_for(type(v))(v, expected), v
    assert pack(values, head, 0x1234) == head + struct.pack(f"<{len(expected)}Q", *expected)
    assert pack(values[1:] + values[:1], head, 0) is None  # other types: the caller converts one by one
    single = packer_for((int,))
    assert single([5], head, 0) == head + struct.pack("<3Q", 0, 5, 5)  # 5: PTXGATE_ARG_INTEGER
    with pytest.raises(struct.error):  # beyond int64: the caller falls back to the converter (u64)
        single([1 << 63], head, 0)
    assert packer_for((list,)) is None  # no converter
