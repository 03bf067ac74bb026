"""How launch arguments are read: numpy arrays, __cuda_array_interface__ and DLPack objects,
scalars and stream objects (no device needed)."""
import struct

import numpy as np
import pytest

import ptxgate
from ptxgate import _capi
from ptxgate.arrays import DeviceArray, HostArray, classify, scalar
from ptxgate.runtime import stream_handle


class FakeDeviceArray:
    """An object that describes device memory the way CuPy and Numba do."""

    def __init__(self, pointer, shape, typestr="<f4", strides=None, device=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (pointer, False),
                                         "strides": strides, "version": 3}
        if device is not None:
            self.device = type("Device", (), {"id": device})()


def test_numpy_arrays_are_host_arrays_with_their_dtype():
    for dtype, code in [(np.float32, _capi.DTYPE_F32), (np.float64, _capi.DTYPE_F64), (np.int32, _capi.DTYPE_I32),
                        (np.uint32, _capi.DTYPE_U32), (np.int64, _capi.DTYPE_I64), (np.uint64, _capi.DTYPE_U64)]:
        a = classify(np.zeros((4, 5), dtype=dtype), 0, "y")
        assert isinstance(a, HostArray) and a.dtype == code and a.elements == 20


def test_numpy_arrays_that_cannot_be_passed():
    with pytest.raises(ptxgate.Error) as info:
        classify(np.zeros(10, dtype=np.float32)[::2], 1, "x")
    assert info.value.codes == ["PG5002"] and "argument 1 ('x')" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        classify(np.zeros(10, dtype=np.float16), 0, "y")
    assert info.value.codes == ["PG5002"] and "float16" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        classify(np.zeros(10, dtype=">f4"), 0, "y")
    assert info.value.codes == ["PG5002"]


def test_cuda_array_interface_is_used_in_place():
    a = classify(FakeDeviceArray(0x7000, (8, 4), device=1), 0, "y")
    assert isinstance(a, DeviceArray)
    assert (a.pointer, a.dtype, a.elements, a.device) == (0x7000, _capi.DTYPE_F32, 32, 1)
    contiguous = classify(FakeDeviceArray(0x7000, (8, 4), typestr="<i8", strides=(32, 8)), 0, "y")
    assert contiguous.dtype == _capi.DTYPE_I64 and contiguous.device == -1
    with pytest.raises(ptxgate.Error) as info:
        classify(FakeDeviceArray(0x7000, (8, 4), strides=(4, 32)), 0, "y")  # a transposed view
    assert info.value.codes == ["PG5002"]
    with pytest.raises(ptxgate.Error) as info:
        classify(FakeDeviceArray(0x7000, (8,), typestr="<f2"), 0, "y")
    assert info.value.codes == ["PG5002"]


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


def test_scalars():
    assert scalar(2.5, 0, "a", "f32") == (_capi.DTYPE_F32, struct.unpack("<I", struct.pack("<f", 2.5))[0])
    assert scalar(2.5, 0, "a", "f64") == (_capi.DTYPE_F64, struct.unpack("<Q", struct.pack("<d", 2.5))[0])
    assert scalar(2.5, 0, "a", None)[0] == _capi.DTYPE_F64
    assert scalar(np.float64(1.0), 0, "a", "f32")[0] == _capi.DTYPE_F64  # numpy scalars keep their type
    assert scalar(np.int32(-3), 0, "n", "i32") == (_capi.DTYPE_I32, (-3) & 0xFFFFFFFFFFFFFFFF)
    assert scalar(-3, 0, "n", "i32") == (_capi.DTYPE_I64, (-3) & 0xFFFFFFFFFFFFFFFF)
    assert scalar(1 << 63, 0, "n", "u64") == (_capi.DTYPE_U64, 1 << 63)
    assert scalar(True, 0, "flag", "bool") == (_capi.DTYPE_BOOL, 1)
    assert scalar(2, 0, "a", "f32") == scalar(2.0, 0, "a", "f32")
    for bad in ([1, 2], "3", 1 << 64, None):
        with pytest.raises(ptxgate.Error) as info:
            scalar(bad, 3, "n", "u32")
        assert info.value.codes == ["PG5002"]


def test_stream_objects():
    assert stream_handle(0x1234) == 0x1234
    assert stream_handle(type("TorchLike", (), {"cuda_stream": 0x10})()) == 0x10
    assert stream_handle(type("CupyLike", (), {"ptr": 0x20})()) == 0x20
    assert stream_handle(type("Protocol", (), {"__cuda_stream__": lambda self: (0, 0x30)})()) == 0x30
    with pytest.raises(ptxgate.Error) as info:
        stream_handle("default")
    assert info.value.codes == ["PG5002"]
