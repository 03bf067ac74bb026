"""The runtime over the build's stand-in libcuda: arguments bound and checked against the
signature, numpy arrays copied in and (for out/inout parameters) out, foreign streams borrowed,
and blocked launches never reaching the driver."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import ptxgate


@pytest.fixture
def runtime(fake_driver):
    rt = ptxgate.Runtime(disk_cache=False)
    yield rt
    rt.close()


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def test_runtime_and_kernel_signature(runtime, saxpy_source):
    assert runtime.device == 0 and runtime.target == "sm_90"
    k = runtime.compile(saxpy_source, "saxpy")
    assert k.name == "saxpy" and [p.name for p in k.info.params] == ["y", "x", "a", "n"]
    assert k.info.resources is not None


def test_numpy_arguments_are_copied_in_and_written_back(runtime, fake_driver, saxpy_source):
    k = runtime.compile(saxpy_source, "saxpy")
    y = np.arange(1000, dtype=np.float32)
    x = np.ones(1000, dtype=np.float32)
    fake_driver.set_param_sizes(8, 8, 4, 4)
    launches = fake_driver.ptxgate_fake_launches()
    uploads, downloads = fake_driver.ptxgate_fake_count(b"cuMemcpyHtoD"), fake_driver.ptxgate_fake_count(b"cuMemcpyDtoH")
    k.launch(4, [y, x, 2.0, 1000])
    assert fake_driver.ptxgate_fake_launches() == launches + 1
    assert fake_driver.ptxgate_fake_last_block(0) == 256
    assert fake_driver.ptxgate_fake_last_param(0) != 0
    assert fake_driver.ptxgate_fake_last_param(2) == f32_bits(2.0)
    assert fake_driver.ptxgate_fake_last_param(3) == 1000
    assert fake_driver.ptxgate_fake_count(b"cuMemcpyHtoD") == uploads + 2
    assert fake_driver.ptxgate_fake_count(b"cuMemcpyDtoH") == downloads + 1  # y (inout) only, not x (in)
    assert np.array_equal(y, np.arange(1000, dtype=np.float32))  # the fake runs no kernel: y round-trips


def test_wrong_arrays_and_scalars_are_refused_before_the_driver(runtime, fake_driver, saxpy_source):
    k = runtime.compile(saxpy_source, "saxpy")
    y = np.zeros(1000, dtype=np.float32)
    launches = fake_driver.ptxgate_fake_launches()
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [y, np.zeros(1000, dtype=np.float64), 2.0, 1000])
    assert info.value.codes == ["PG3010"] and "f64" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [y, y, np.float64(2.0), 1000])
    assert "PG3007" in info.value.codes
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [y, y, 2.0, -1])  # -1 does not fit u32
    assert "PG3007" in info.value.codes
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [y, y, 2.0])
    assert "PG3005" in info.value.codes
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [y, y, 2.0, 1000], block=512)
    assert "PG3105" in info.value.codes
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [2.0, y, 2.0, 1000])
    assert "PG3006" in info.value.codes
    assert fake_driver.ptxgate_fake_launches() == launches


def test_device_arrays_are_passed_in_place_with_their_device(runtime, fake_driver, saxpy_source):
    from test_arrays import FakeDeviceArray

    k = runtime.compile(saxpy_source, "saxpy")
    buf_y, buf_x = runtime.allocate(4000), runtime.allocate(4000)
    y = FakeDeviceArray(buf_y.device_pointer, (1000,), device=0)
    x = FakeDeviceArray(buf_x.device_pointer, (1000,))
    fake_driver.set_param_sizes(8, 8, 4, 4)
    k(4, y, x, 2.0, 1000)
    assert fake_driver.ptxgate_fake_last_param(0) == buf_y.device_pointer
    assert fake_driver.ptxgate_fake_last_param(1) == buf_x.device_pointer
    with pytest.raises(ptxgate.Error) as info:
        k(4, FakeDeviceArray(buf_y.device_pointer, (1000,), device=1), x, 2.0, 1000)
    assert info.value.codes == ["PG4008"]
    with pytest.raises(ptxgate.Error) as info:
        k(4, FakeDeviceArray(0, (1000,), device=0), x, 2.0, 1000)
    assert "PG3009" in info.value.codes


def test_a_scalar_the_proof_uses_is_part_of_the_verdict(runtime, fake_driver, saxpy_source):
    """saxpy writes y[i] for i < n: 1024 threads over 1000-float buffers are in bounds for
    n = 1000 and out of bounds for n = 1024, a launch of the same shape (PG3801, before the driver)."""
    k = runtime.compile(saxpy_source, "saxpy")
    buf_y, buf_x = runtime.allocate(4000), runtime.allocate(4000)
    from test_arrays import FakeDeviceArray

    y = FakeDeviceArray(buf_y.device_pointer, (1000,), device=0)
    x = FakeDeviceArray(buf_x.device_pointer, (1000,), device=0)
    k(4, y, x, 2.0, 1000)
    k(4, y, x, 3.0, 1000)
    launches = fake_driver.ptxgate_fake_launches()
    with pytest.raises(ptxgate.Error) as info:
        k(4, y, x, 2.0, 1024)
    assert "PG3801" in info.value.codes
    assert fake_driver.ptxgate_fake_launches() == launches
    k(4, y, x, 2.0, 1000)
    assert fake_driver.ptxgate_fake_launches() == launches + 1


def test_require_memory_proof_blocks_an_access_not_proven(fake_driver):
    gather = """kernel gather(out y: f32[], in idx: u32[], in x: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = x[idx[i]]; }
}
"""
    arrays = [np.zeros(64, dtype=np.float32), np.zeros(64, dtype=np.uint32), np.zeros(64, dtype=np.float32), 64]
    strict = ptxgate.Runtime(disk_cache=False, require_memory_proof=True)
    try:
        launches = fake_driver.ptxgate_fake_launches()
        with pytest.raises(ptxgate.Error) as info:
            strict.compile(gather, "gather").launch(1, arrays, block=64)
        assert "PG3802" in info.value.codes
        assert fake_driver.ptxgate_fake_launches() == launches
    finally:
        strict.close()
    lenient = ptxgate.Runtime(disk_cache=False)
    try:
        lenient.compile(gather, "gather").launch(1, arrays, block=64)  # x[idx[i]] is merely not proven
    finally:
        lenient.close()


def test_foreign_streams_are_borrowed_not_destroyed(runtime, fake_driver, saxpy_source):
    k = runtime.compile(saxpy_source, "saxpy")
    y = np.zeros(1000, dtype=np.float32)
    destroyed = fake_driver.ptxgate_fake_count(b"cuStreamDestroy")
    torch_like = type("TorchStream", (), {"cuda_stream": 0x7700})()
    k.launch(4, [y, y, 2.0, 1000], stream=torch_like)
    assert fake_driver.ptxgate_fake_last_stream() == 0x7700
    s = runtime.stream(0x7800)
    assert s.borrowed and s.handle == 0x7800
    k.launch(4, [y, y, 2.0, 1000], stream=s)
    assert fake_driver.ptxgate_fake_last_stream() == 0x7800
    s.synchronize()
    s.free()
    assert fake_driver.ptxgate_fake_count(b"cuStreamDestroy") == destroyed
    own = runtime.stream()
    assert not own.borrowed
    own.free()
    assert fake_driver.ptxgate_fake_count(b"cuStreamDestroy") == destroyed + 1


def test_buffers_round_trip(runtime):
    b = runtime.allocate(16)
    assert b.nbytes == 16
    b.upload(np.arange(4, dtype=np.int32))
    out = np.zeros(4, dtype=np.int32)
    b.download_into(out)
    assert out.tolist() == [0, 1, 2, 3]
    with pytest.raises(ptxgate.Error) as info:
        b.upload(bytes(17))
    assert info.value.codes == ["PG3008"]


def test_check_without_launching(runtime, fake_driver, saxpy_source):
    k = runtime.compile(saxpy_source, "saxpy")
    launches = fake_driver.ptxgate_fake_launches()
    ok, diags = k.check(4, block=1024)
    assert not ok and "PG3105" in [d.code for d in diags]
    ok, diags = k.check(4)
    assert ok
    assert fake_driver.ptxgate_fake_launches() == launches


def test_no_driver_is_pg4001(tmp_path):
    """In a fresh process whose driver library does not exist."""
    env = dict(os.environ, PTXGATE_CUDA_DRIVER=str(tmp_path / "libcuda-none.so.1"))
    code = ("import ptxgate\n"
            "try:\n    ptxgate.Runtime()\nexcept ptxgate.Error as e:\n    print(e.codes[0])\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.strip() == "PG4001", out.stderr


def test_foreign_modules_load_with_a_signature_and_cubins_for_another_architecture_are_refused(runtime, fake_driver):
    from conftest import ROOT

    ptx = os.path.join(ROOT, "tests", "unit", "ptx", "nvcc_saxpy.ptx")
    k = runtime.load_ptx(ptx, "_Z5saxpyifPKfPf", signature="i32, f32, f32[], f32[]")
    assert [p.type for p in k.info.params] == ["i32", "f32", "f32", "f32"]
    fake_driver.set_param_sizes(4, 4, 8, 8)
    x = np.ones(10, dtype=np.float32)
    with pytest.raises(ptxgate.Error) as info:
        k.launch(1, [10, 2.0, np.ones(10, dtype=np.float64), x])
    assert info.value.codes == ["PG3010"]
    with pytest.raises(ptxgate.Error) as info:
        runtime.load_cubin(os.path.join(ROOT, "tests", "golden", "ptx", "saxpy_sm80.cubin"), "_Z5saxpyifPKfPf")
    assert info.value.codes == ["PG2001"] and "sm_80" in info.value.text


def test_checked_runtime_passes_each_buffers_length_and_a_record(fake_driver, saxpy_source):
    rt = ptxgate.Runtime(disk_cache=False, checked=True)
    try:
        k = rt.compile(saxpy_source, "saxpy")
        y = np.zeros(1000, dtype=np.float32)
        x = np.ones(250, dtype=np.float32)
        fake_driver.set_param_sizes(8, 8, 4, 4, 8, 8, 8)
        k.launch(4, [y, x, 2.0, 250])
        assert fake_driver.ptxgate_fake_last_param(4) == 4000  # y's length in bytes, after the parameters
        assert fake_driver.ptxgate_fake_last_param(5) == 1000  # x's
        assert fake_driver.ptxgate_fake_last_param(6) != 0     # the launch's record
        rt.synchronize()  # the stand-in runs no kernel: nothing was stopped
    finally:
        rt.close()


def test_reset_after_a_sticky_fault_refuses_old_objects_and_gives_a_working_runtime(runtime, fake_driver, saxpy_source):
    import ctypes

    fake_driver.ptxgate_fake_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]
    illegal_address = 700
    k = runtime.compile(saxpy_source, "saxpy")
    old_buffer = runtime.allocate(4000)
    old_stream = runtime.stream()
    resets = fake_driver.ptxgate_fake_primary_resets()
    try:
        fake_driver.ptxgate_fake_fail(b"cuCtxSynchronize", illegal_address)
        with pytest.raises(ptxgate.Error) as info:
            runtime.synchronize()
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in info.value.text
        with pytest.raises(ptxgate.Error) as info:
            old_buffer.upload(bytes(16))
        assert info.value.codes == ["PG4003"]
        runtime.reset()
    finally:
        fake_driver.ptxgate_fake_fail(b"cuCtxSynchronize", 0)
    assert fake_driver.ptxgate_fake_primary_resets() == resets + 1
    launches = fake_driver.ptxgate_fake_launches()
    y = np.arange(1000, dtype=np.float32)
    for use in (lambda: k.launch(4, [y, y, 2.0, 1000]), lambda: old_buffer.upload(bytes(16)), old_stream.synchronize):
        with pytest.raises(ptxgate.Error) as info:
            use()
        assert info.value.codes[0] == "PG4010" and "Runtime::reset retired" in info.value.text
    assert fake_driver.ptxgate_fake_launches() == launches
    destroyed = fake_driver.ptxgate_fake_count(b"cuStreamDestroy")
    old_stream.free()  # its handle went with the old context: never destroyed through the driver
    old_buffer.free()
    assert fake_driver.ptxgate_fake_count(b"cuStreamDestroy") == destroyed
    fresh = runtime.compile(saxpy_source, "saxpy")
    fake_driver.set_param_sizes(8, 8, 4, 4)
    fresh.launch(4, [y, np.ones(1000, dtype=np.float32), 2.0, 1000])
    assert fake_driver.ptxgate_fake_launches() == launches + 1
    runtime.synchronize()


def launcher(path, kernel, *parts):
    """``kernel[parts]`` on one launch path: the Python Launcher's (ctypes), or the C extension's."""
    from ptxgate import _native
    from ptxgate.runtime import Launcher

    if path == "ctypes":
        return Launcher(kernel, *parts)
    if _native.module() is None:
        pytest.skip(f"no launch extension: {_native.reason}")
    return _native.wrap(Launcher(kernel, *parts))


def steady(launch):
    """The launcher took its steady path: the ctypes one its packer, the extension's the C walk."""
    return launch._pack is not None if hasattr(launch, "_pack") else launch.handed_over == 0


PATHS = pytest.mark.parametrize("path", ["ctypes", "extension"])


@PATHS
def test_repeated_launches_take_the_packed_path_and_pass_the_same_arguments(runtime, fake_driver, saxpy_source, path):
    k = runtime.compile(saxpy_source, "saxpy")
    y, x = runtime.empty(1000, "f32"), runtime.empty(1000, "f32")
    fake_driver.set_param_sizes(8, 8, 4, 4)
    launch = launcher(path, k, 4, 256)
    seen = []
    for a, n in ((2.0, 1000), (np.float32(3.0), np.uint32(999)), (np.float32(3.0), np.uint32(998)), (2.5, 1000)):
        launch(y, x, a, n)  # the types of the call before make the packer; a change falls back, then repacks
        seen.append([fake_driver.ptxgate_fake_last_param(i) for i in range(4)])
    f32 = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]  # noqa: E731
    assert [s[2:] for s in seen] == [[f32(2.0), 1000], [f32(3.0), 999], [f32(3.0), 998], [f32(2.5), 1000]]
    assert all(s[:2] == [y.device_pointer, x.device_pointer] for s in seen)
    assert steady(launch)
    with pytest.raises(ptxgate.Error) as info:  # packed, then refused by the library: 2^40 does not fit u32
        launch(y, x, 2.5, 1 << 40)
    assert info.value.codes == ["PG3007"]
    y.free()
    with pytest.raises(ptxgate.Error) as info:  # a freed buffer, on the packed path
        launch(y, x, 2.5, 1000)
    assert "was freed" in info.value.text


def test_kernel_launch_reuses_its_launcher_and_a_kernel_keeps_a_bounded_number(runtime, fake_driver, saxpy_source):
    """Kernel.launch takes the steady path of kernel[...] (one launcher per configuration, the
    extension's when it is there), and a grid new on every call does not grow the kernel."""
    from ptxgate import _native
    from ptxgate import runtime as R

    k = runtime.compile(saxpy_source, "saxpy")
    y, x = runtime.empty(1000, "f32"), runtime.empty(1000, "f32")
    fake_driver.set_param_sizes(8, 8, 4, 4)
    launches = fake_driver.ptxgate_fake_launches()
    for n in (1000, 999, 998):
        k.launch(4, [y, x, 2.0, n], block=256)
        assert fake_driver.ptxgate_fake_last_param(3) == n
    assert len(k._launchers) == 1
    (only,) = k._launchers.values()
    assert steady(only) and (not isinstance(only, R.Launcher)) == (_native.module() is not None)
    k.launch([4], [y, x, 2.0, 1000], block=256)  # a list grid: launched, not remembered
    assert len(k._launchers) == 1
    for grid in range(1, 101):
        k[grid, 256](y, x, 2.0, 1000)
        assert fake_driver.ptxgate_fake_last_block(0) == 256
    assert len(k._launchers) == R._MAX_LAUNCHERS
    assert fake_driver.ptxgate_fake_launches() == launches + 104
    with pytest.raises(ptxgate.Error) as info:  # a remembered launcher still refuses what it must
        k.launch(4, [y, x, 2.0, 1 << 40], block=256)
    assert info.value.codes == ["PG3007"]


def test_a_kernel_without_parameters_launches_on_the_stream_of_each_call(runtime, fake_driver):
    k = runtime.compile("@workgroup(32)\nkernel nothing() { }\n", "nothing")
    s1, s2 = runtime.stream(), runtime.stream()
    launch = k[1, 32]
    before = fake_driver.ptxgate_fake_launches()
    for s in (s1, s1, s2, None, s1):
        if s is None:
            launch()
            assert fake_driver.ptxgate_fake_last_stream() == 0  # the legacy default stream
        else:
            with s:
                launch()
            assert fake_driver.ptxgate_fake_last_stream() == s.handle
    assert fake_driver.ptxgate_fake_launches() == before + 5
    with pytest.raises(ptxgate.Error) as info:  # arguments for a kernel without parameters
        launch(1)
    assert [d.code for d in info.value.diagnostics if d.severity == "error"] == ["PG3005"]
    s1.free()
    with s1, pytest.raises(ptxgate.Error) as info:
        launch()
    assert "was freed" in info.value.text


class StreamedArray:
    """A __cuda_array_interface__ v3 producer whose fields change between calls (read per launch)."""

    def __init__(self, pointer, n, stream=None, readonly=False):
        self.pointer, self.n, self.stream, self.readonly = pointer, n, stream, readonly

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.n,), "typestr": "<f4", "data": (self.pointer, self.readonly), "version": 3,
                "strides": None, "stream": self.stream}


@PATHS
def test_cuda_array_interface_v3_stream_readonly_and_pointer_are_read_on_every_launch(runtime, fake_driver, saxpy_source,
                                                                                     path):
    k = runtime.compile(saxpy_source, "saxpy")
    y, x, x2 = runtime.allocate(4000), runtime.allocate(4000), runtime.allocate(4000)
    s, producer = runtime.stream(), runtime.stream()
    fake_driver.set_param_sizes(8, 8, 4, 4)
    launch = launcher(path, k, 4, 256, s)
    ya, xa = StreamedArray(y.device_pointer, 1000), StreamedArray(x.device_pointer, 1000)
    waits = lambda: fake_driver.ptxgate_fake_count(b"cuStreamWaitEvent")  # noqa: E731
    for stream, expected in ((None, 0), (producer.handle, 1), (s.handle, 0), (producer.handle, 1)):
        xa.stream = stream
        for _ in range(2):  # the first call takes the general path, the second the packer
            before = waits()
            launch(ya, xa, 2.0, 1000)
            assert waits() - before == expected, stream
    assert steady(launch)
    xa.pointer = x2.device_pointer  # the array's data moved: the next launch passes the new pointer
    launch(ya, xa, 2.0, 1000)
    assert fake_driver.ptxgate_fake_last_param(1) == x2.device_pointer
    xa.readonly = True  # a read-only array for the 'in' parameter is fine
    launch(ya, xa, 2.0, 1000)
    ya.readonly = True  # ... for the 'inout' one it is refused, packed or not
    for _ in range(2):
        with pytest.raises(ptxgate.Error) as info:
            launch(ya, xa, 2.0, 1000)
        assert info.value.codes == ["PG5002"] and "read-only" in info.value.text and "argument 0 ('y')" in info.value.text
    ya.readonly, xa.stream = False, 0  # version 3 refuses stream 0
    with pytest.raises(ptxgate.Error) as info:
        launch(ya, xa, 2.0, 1000)
    assert info.value.codes == ["PG5002"] and "stream 0" in info.value.text


@PATHS
@pytest.mark.parametrize("exposes_ptr", [True, False])
def test_cupy_arrays_are_packed_and_wait_for_cupy_s_current_stream(runtime, fake_driver, saxpy_source, monkeypatch,
                                                                   exposes_ptr, path):
    import types

    current = {"ptr": 0}
    cupy = types.ModuleType("cupy")
    if exposes_ptr:  # cupy.cuda.stream.get_current_stream_ptr(), where a CuPy has it
        cupy.cuda = types.SimpleNamespace(stream=types.SimpleNamespace(get_current_stream_ptr=lambda: current["ptr"]))
    else:  # else cupy.cuda.get_current_stream().ptr
        cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: types.SimpleNamespace(ptr=current["ptr"]))
    monkeypatch.setitem(sys.modules, "cupy", cupy)

    class ndarray:  # CuPy's attributes as its Cython class exposes them
        __slots__ = ("dtype", "size", "data", "_c_contiguous")

        def __init__(self, pointer, n, dtype=np.float32, contiguous=True):
            self.dtype, self.size, self._c_contiguous = np.dtype(dtype), n, contiguous
            self.data = types.SimpleNamespace(ptr=pointer, device_id=0)

        @property
        def __cuda_array_interface__(self):
            return {"shape": (self.size,), "typestr": self.dtype.str, "data": (self.data.ptr, False), "version": 3,
                    "strides": None if self._c_contiguous else (8,), "stream": current["ptr"] or 1}

    ndarray.__module__ = "cupy"
    k = runtime.compile(saxpy_source, "saxpy")
    y, x = runtime.allocate(4000), runtime.allocate(4000)
    s = runtime.stream()
    fake_driver.set_param_sizes(8, 8, 4, 4)
    launch = launcher(path, k, 4, 256, s)
    ya, xa = ndarray(y.device_pointer, 1000), ndarray(x.device_pointer, 1000)
    waits = lambda: fake_driver.ptxgate_fake_count(b"cuStreamWaitEvent")  # noqa: E731
    for ptr, expected in ((0, 1), (s.handle, 0), (0, 1)):  # CuPy's legacy default stream, then the launch's
        current["ptr"] = ptr
        for _ in range(2):
            before = waits()
            launch(ya, xa, np.float32(2.0), np.uint32(1000))
            assert waits() - before == expected, ptr  # one wait for both arrays
            assert [fake_driver.ptxgate_fake_last_param(i) for i in range(2)] == [y.device_pointer, x.device_pointer]
    assert steady(launch)
    with pytest.raises(ptxgate.Error) as info:  # another dtype: the signature check names both types
        launch(ya, ndarray(x.device_pointer, 500, dtype=np.float64), np.float32(2.0), np.uint32(1000))
    assert "PG3010" in info.value.codes
    with pytest.raises(ptxgate.Error) as info:
        launch(ya, ndarray(x.device_pointer, 1000, contiguous=False), np.float32(2.0), np.uint32(1000))
    assert info.value.codes == ["PG5002"] and "C-contiguous" in info.value.text
