"""The two launch paths agree: the C extension's (python/ext/launch.c, ``kernel[...]`` when it is
built) and the ctypes path of the Python Launcher pass the driver the same parameters, on the same
stream, with the same waits, and refuse the same launches with the same Error, for every element
type and every kind of argument (over the stand-in driver)."""
import os
import types

import numpy as np
import pytest

import ptxgate
from ptxgate import _native
from ptxgate import runtime as R
from test_arrays import FakeTorchTensor, TorchDtype

# Every buffer element type and every scalar parameter type of the language (32 and 64 bits), one
# parameter each.
EVERY = """kernel every(out o: f32[], in b16: f16[], in bb: bf16[], in b8: u8[], in bi8: i8[], in bu16: u16[],
                    in bi16: i16[], in bi32: i32[], in bu32: u32[], in bi64: i64[], in bu64: u64[], in bf64: f64[],
                    s32: f32, s64: f64, si32: i32, su32: u32, si64: i64, su64: u64, flag: bool) { }
"""
SLOTS = 19
BUFFER_TYPES = ["f32", "f16", "bf16", "u8", "i8", "u16", "i16", "i32", "u32", "i64", "u64", "f64"]
SCALAR_SIZES = [4, 8, 4, 4, 8, 8, 4]
TYPESTR = {"f32": "<f4", "f16": "<f2", "u8": "|u1", "i8": "|i1", "u16": "<u2", "i16": "<i2", "i32": "<i4",
           "u32": "<u4", "i64": "<i8", "u64": "<u8", "f64": "<f8"}
SIZE = {"f32": 4, "f16": 2, "bf16": 2, "u8": 1, "i8": 1, "u16": 2, "i16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
        "f64": 8}
N = 64


@pytest.fixture(scope="module")
def ext():
    """The extension; required when the build made it (ctest names it), else the test skips."""
    module = _native.module()
    if module is None:
        if os.environ.get("PTXGATE_EXPECT_EXTENSION"):
            pytest.fail(f"the build made {os.environ['PTXGATE_EXPECT_EXTENSION']} but it is not used: {_native.reason}")
        pytest.skip(f"no launch extension: {_native.reason}")
    return module


@pytest.fixture
def runtime(fake_driver):
    rt = ptxgate.Runtime(disk_cache=False)
    yield rt
    rt.close()


class CaiArray:
    """A __cuda_array_interface__ v3 producer (Numba-like), read on every launch."""

    def __init__(self, pointer, typestr, n=N, stream=None, readonly=False, strides=None, device=0):
        self.pointer, self.typestr, self.n, self.stream, self.readonly, self.strides = \
            pointer, typestr, n, stream, readonly, strides
        self.device = types.SimpleNamespace(id=device)

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.n,), "typestr": self.typestr, "data": (self.pointer, self.readonly), "version": 3,
                "strides": self.strides, "stream": self.stream}


TORCH_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "u8": "uint8", "i8": "int8", "u16": "uint16",
               "i16": "int16", "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64", "f64": "float64"}
TORCH_DTYPES = {t: TorchDtype(name) for t, name in TORCH_NAMES.items()}


def Tensor(pointer, dtype, n=N, device=0, contiguous=True):  # noqa: N802 - stands for torch.Tensor
    return FakeTorchTensor(pointer, n, TORCH_DTYPES[dtype], device, contiguous)


def cupy_module(monkeypatch, current):
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(stream=types.SimpleNamespace(get_current_stream_ptr=lambda: current["ptr"]))
    monkeypatch.setitem(__import__("sys").modules, "cupy", cupy)

    class ndarray:  # CuPy's attributes as its Cython class exposes them
        __slots__ = ("dtype", "size", "data", "_c_contiguous")

        def __init__(self, pointer, dtype, n=N, contiguous=True, device=0):
            self.dtype, self.size, self._c_contiguous = np.dtype(dtype), n, contiguous
            self.data = types.SimpleNamespace(ptr=pointer, device_id=device)

        @property
        def __cuda_array_interface__(self):  # what the general path reads
            return {"shape": (self.size,), "typestr": self.dtype.str, "data": (self.data.ptr, False), "version": 3,
                    "strides": None if self._c_contiguous else (2 * self.dtype.itemsize,),
                    "stream": current["ptr"] or 1}

        @property
        def device(self):
            return types.SimpleNamespace(id=self.data.device_id)

    ndarray.__module__ = "cupy"
    return ndarray


class Paths:
    """Launches the same call through both paths and records what the driver saw."""

    def __init__(self, fake, kernel, grid=1, block=32, stream=None):
        self.fake, self.kernel, self.grid, self.block, self.stream = fake, kernel, grid, block, stream
        self.py = R.Launcher(kernel, grid, block, stream)
        self.c = _native.wrap(R.Launcher(kernel, grid, block, stream))
        assert self.c is not self.py

    def outcome(self, launcher, args, slots):
        fake = self.fake
        launches, waits = fake.ptxgate_fake_launches(), fake.ptxgate_fake_count(b"cuStreamWaitEvent")
        try:
            launcher(*args)
        except ptxgate.Error as e:
            return ("error", e.codes, e.text, fake.ptxgate_fake_launches() - launches)
        return ("ok", [fake.ptxgate_fake_last_param(i) for i in range(slots)], fake.ptxgate_fake_last_stream(),
                fake.ptxgate_fake_launches() - launches, fake.ptxgate_fake_count(b"cuStreamWaitEvent") - waits)

    def both(self, args, slots=0, handed=False, before_each=None):
        """The outcomes (first call, steady state) of each path, which must agree; ``handed``:
        whether the C path hands these arguments to the Python launcher (else it takes them).
        ``before_each``: what runs before each path's calls (the same history for both)."""
        handed_before = self.c.handed_over
        outcomes = []
        for launcher in (self.py, self.c):
            if before_each is not None:
                before_each()
            outcomes.append([self.outcome(launcher, args, slots) for _ in range(2)])
        py, c = outcomes
        assert c == py
        assert self.c.handed_over - handed_before == (2 if handed else 0)
        return c[0]


def every_args(rt, make, scalars=None):
    """Arguments for ``every``: the buffers made by ``make(dtype, pointer)``, then scalars."""
    keep = [rt.allocate(N * SIZE[t]) for t in BUFFER_TYPES]
    arrays = [make(t, b) for t, b in zip(BUFFER_TYPES, keep)]
    if scalars is None:
        scalars = [1.5, -2.25, -5, 4000000000, -(1 << 40), (1 << 64) - 1, True]
    return keep, arrays + list(scalars)


def test_every_dtype_through_buffers_and_python_scalars(ext, runtime, fake_driver):
    k = runtime.compile(EVERY, "every")
    fake_driver.set_param_sizes(*([8] * 12 + SCALAR_SIZES))
    keep, args = every_args(runtime, lambda t, b: runtime.empty(N, t))
    outcome = Paths(fake_driver, k).both(args, SLOTS)
    assert outcome[0] == "ok" and outcome[1][12] == 0x3FC00000 and outcome[1][18] == 1
    keep, args = every_args(runtime, lambda t, b: b)  # untyped buffers bind to any element type
    assert Paths(fake_driver, k).both(args, SLOTS)[0] == "ok"
    for value in (7, 7.0, True):  # a Python int, float or bool for each scalar parameter: bound or refused alike
        for index in range(12, SLOTS):
            args2 = list(args)
            args2[index] = value
            Paths(fake_driver, k).both(args2, SLOTS)


def test_every_dtype_through_cuda_array_interface_and_numpy_scalars(ext, runtime, fake_driver):
    k = runtime.compile(EVERY, "every")
    fake_driver.set_param_sizes(*([8] * 12 + SCALAR_SIZES))
    scalars = [np.float32(1.5), np.float64(-2.25), np.int32(-5), np.uint32(4000000000), np.int64(-(1 << 40)),
               np.uint64((1 << 64) - 1), np.bool_(True)]
    # bf16 through __cuda_array_interface__ has no typestr: a torch tensor carries it
    keep, args = every_args(runtime, lambda t, b: CaiArray(b.device_pointer, TYPESTR[t]) if t != "bf16"
                            else Tensor(b.device_pointer, t), scalars)
    outcome = Paths(fake_driver, k).both(args, SLOTS)
    assert outcome[0] == "ok" and outcome[1][:12] == [b.device_pointer for b in keep]
    assert outcome[1][15] == 4000000000 and outcome[1][17] == (1 << 64) - 1
    # Every numpy scalar type for every scalar parameter (the small ones, f16 among them, are
    # refused by the library's binding, the others bound or refused as their values fit).
    small = [np.float16(0.5), np.int8(-7), np.uint8(200), np.int16(-300), np.uint16(60000), np.float16(-2.0)]
    for value in small + scalars:
        for index in range(12, SLOTS):
            args2 = list(args)
            args2[index] = value
            Paths(fake_driver, k).both(args2, SLOTS)


def test_every_dtype_through_torch_and_cupy(ext, runtime, fake_driver, monkeypatch):
    k = runtime.compile(EVERY, "every")
    fake_driver.set_param_sizes(*([8] * 12 + SCALAR_SIZES))
    keep, args = every_args(runtime, lambda t, b: Tensor(b.device_pointer, t))
    assert Paths(fake_driver, k).both(args, SLOTS)[0] == "ok"
    current = {"ptr": 0}
    ndarray = cupy_module(monkeypatch, current)
    numpy_of = {t: (np.dtype(TYPESTR[t]) if t != "bf16" else None) for t in BUFFER_TYPES}
    keep, args = every_args(runtime, lambda t, b: ndarray(b.device_pointer, numpy_of[t]) if t != "bf16"
                            else Tensor(b.device_pointer, t))
    paths = Paths(fake_driver, k)
    outcome = paths.both(args, SLOTS)  # CuPy's legacy default stream (1) is the launch's: no wait
    assert outcome[0] == "ok" and outcome[4] == 0


def test_scalars_beyond_their_parameter_and_arguments_of_the_wrong_type(ext, runtime, fake_driver):
    k = runtime.compile(EVERY, "every")
    fake_driver.set_param_sizes(*([8] * 12 + SCALAR_SIZES))
    paths = Paths(fake_driver, k)
    keep, good = every_args(runtime, lambda t, b: runtime.empty(N, t))
    cases = [
        (12, 1e300, "PG3007", False),          # beyond f32
        (15, 1 << 32, "PG3007", False),        # beyond u32
        (17, -1, "PG3007", False),             # a negative u64
        (17, 1 << 64, "PG5002", True),         # beyond 64 bits: the Python path explains
        (17, -(1 << 63) - 1, "PG5002", True),
        (12, np.float64(1.0), "PG3007", False),  # a numpy f64 for an f32 parameter
        (0, runtime.empty(N, "f64"), "PG3010", False),  # the dtype names both types
        (1, Tensor(keep[1].device_pointer, "bf16"), "PG3010", False),  # bf16 for f16
        (0, Tensor(keep[0].device_pointer, "f32", device=1), "PG4008", False),
        (0, Tensor(keep[0].device_pointer, "f32", device=-1), "PG5002", True),  # on the CPU
        (0, Tensor(keep[0].device_pointer, "f32", contiguous=False), "PG5002", True),
        (0, "text", "PG5002", True),
        (0, CaiArray(keep[0].device_pointer, ">f4"), "PG5002", True),  # big-endian
        (2, CaiArray(keep[2].device_pointer, "<V2"), "PG5002", True),
        (3, CaiArray(keep[3].device_pointer, ["|u1"]), "PG5002", True),  # a typestr that is no string
    ]
    for index, value, code, handed in cases:
        args = list(good)
        args[index] = value
        outcome = paths.both(args, SLOTS, handed=handed)
        assert outcome[0] == "error" and code in outcome[1] and outcome[3] == 0, (index, value, outcome)
        if code == "PG3010":
            assert "f32" in outcome[2] or "f16" in outcome[2]
    assert "PG3005" in paths.both(good[:-1], handed=True)[1]  # one argument short


def test_cuda_array_interface_streams_read_only_and_strides(ext, runtime, fake_driver):
    saxpy = """kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) { }"""
    k = runtime.compile(saxpy, "saxpy")
    fake_driver.set_param_sizes(8, 8, 4, 4)
    y, x = runtime.allocate(4000), runtime.allocate(4000)
    s, producer = runtime.stream(), runtime.stream()
    for launch_stream in (s, None):
        paths = Paths(fake_driver, k, 4, 256, launch_stream)
        for stream, waits in ((None, 0), (producer.handle, 1), (s.handle, 0 if launch_stream else 1), (1, int(bool(launch_stream))),
                              (2, 1)):
            ya, xa = CaiArray(y.device_pointer, "<f4", 1000), CaiArray(x.device_pointer, "<f4", 1000, stream=stream)
            outcome = paths.both([ya, xa, 2.0, 1000], 4)
            assert outcome[0] == "ok" and outcome[4] == waits, (launch_stream, stream, outcome)
        xa = CaiArray(x.device_pointer, "<f4", 1000, readonly=True)  # read-only for 'in' is fine
        assert paths.both([CaiArray(y.device_pointer, "<f4", 1000), xa, 2.0, 1000], 4)[0] == "ok"
        ya = CaiArray(y.device_pointer, "<f4", 1000, readonly=True)  # ... for 'inout' it is refused
        outcome = paths.both([ya, xa, 2.0, 1000], 4, handed=True)
        assert outcome[1] == ["PG5002"] and "read-only" in outcome[2] and "argument 0 ('y')" in outcome[2]
        outcome = paths.both([CaiArray(y.device_pointer, "<f4", 1000), CaiArray(x.device_pointer, "<f4", 1000, stream=0),
                              2.0, 1000], 4, handed=True)
        assert outcome[1] == ["PG5002"] and "stream 0" in outcome[2]
        strided = CaiArray(x.device_pointer, "<f4", 1000, strides=(4,))  # contiguous strides: the Python path takes it
        assert paths.both([CaiArray(y.device_pointer, "<f4", 1000), strided, 2.0, 1000], 4, handed=True)[0] == "ok"
        strided = CaiArray(x.device_pointer, "<f4", 500, strides=(8,))
        outcome = paths.both([CaiArray(y.device_pointer, "<f4", 1000), strided, 2.0, 1000], 4, handed=True)
        assert outcome[1] == ["PG5002"] and "C-contiguous" in outcome[2]
        outcome = paths.both([CaiArray(y.device_pointer, "<f4", 2000), CaiArray(x.device_pointer, "<f4", 1000), 2.0, 1000], 4)
        assert outcome[0] == "ok"


def test_cupy_streams_and_refusals(ext, runtime, fake_driver, monkeypatch):
    current = {"ptr": 0}
    ndarray = cupy_module(monkeypatch, current)
    k = runtime.compile("""kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) { }""", "saxpy")
    fake_driver.set_param_sizes(8, 8, 4, 4)
    y, x = runtime.allocate(4000), runtime.allocate(4000)
    s = runtime.stream()
    paths = Paths(fake_driver, k, 4, 256, s)
    ya, xa = ndarray(y.device_pointer, np.float32, 1000), ndarray(x.device_pointer, np.float32, 1000)
    for ptr, waits in ((0, 1), (s.handle, 0), (0x9900, 1)):
        current["ptr"] = ptr
        outcome = paths.both([ya, xa, np.float32(2.0), np.uint32(1000)], 4)
        assert outcome[0] == "ok" and outcome[4] == waits and outcome[1][:2] == [y.device_pointer, x.device_pointer]
    outcome = paths.both([ya, ndarray(x.device_pointer, np.float64, 500), np.float32(2.0), np.uint32(1000)], 4)
    assert "PG3010" in outcome[1] and "f64" in outcome[2]
    outcome = paths.both([ya, ndarray(x.device_pointer, np.float32, 1000, contiguous=False), 2.0, 1000], 4, handed=True)
    assert outcome[1] == ["PG5002"] and "C-contiguous" in outcome[2]
    outcome = paths.both([ya, ndarray(x.device_pointer, np.complex64, 1000), 2.0, 1000], 4, handed=True)
    assert outcome[1] == ["PG5002"]


def test_host_arrays_freed_objects_streams_and_graphs(ext, runtime, fake_driver):
    k = runtime.compile("""kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) { }""", "saxpy")
    fake_driver.set_param_sizes(8, 8, 4, 4)
    paths = Paths(fake_driver, k, 4, 256)
    host = np.arange(1000, dtype=np.float32)
    assert paths.both([host, host, 2.0, 1000], handed=True)[0] == "ok"  # numpy arrays: copied by the Python path
    y, x = runtime.empty(1000, "f32"), runtime.empty(1000, "f32")
    s = runtime.stream()
    with s:  # the current stream of the thread
        outcome = paths.both([y, x, 2.0, 1000], 4)
        assert outcome[0] == "ok" and outcome[2] == s.handle

    def on_s():
        with s:
            paths.py(y, x, 2.0, 1000)
    outcome = paths.both([y, x, 2.0, 1000], 4, before_each=on_s)  # the legacy default stream, after s:
    assert outcome[2] == 0 and outcome[4] == 1  # dependency tracking waits for s
    s.free()
    with s:
        outcome = paths.both([y, x, 2.0, 1000], handed=True)
        assert outcome[0] == "error" and "was freed" in outcome[2]
    x.free()
    outcome = paths.both([y, x, 2.0, 1000], handed=True)
    assert outcome[0] == "error" and "was freed" in outcome[2]
    x = runtime.empty(1000, "f32")
    g = runtime.graph()
    launcher = k[4, 256]
    assert not isinstance(launcher, R.Launcher)  # the extension's
    with g:  # a graph records the launch: handed to the Python path
        launcher(y, x, 2.0, 1000)
    assert len(g) == 1 and launcher.handed_over == 1
    assert repr(launcher) == repr(launcher.python)


def test_a_kernel_without_parameters_and_explicit_streams(ext, runtime, fake_driver):
    k = runtime.compile("@workgroup(32)\nkernel nothing() { }\n", "nothing")
    s1 = runtime.stream()
    for stream in (None, s1, runtime.stream(0x7700)):
        outcome = Paths(fake_driver, k, 1, 32, stream).both([])
        assert outcome[0] == "ok" and outcome[2] == (stream.handle if stream else 0)
    paths = Paths(fake_driver, k, 1, 32, s1)
    s1.free()
    outcome = paths.both([], handed=True)
    assert outcome[0] == "error" and "was freed" in outcome[2]
    assert Paths(fake_driver, k, 1, 32).both([1], handed=True)[1][0] == "PG3005"
    with pytest.raises(ptxgate.Error) as info:  # geometry the library refuses, on the C path
        k[1, 2048]()
    assert "PG3105" in info.value.codes or "PG3102" in info.value.codes


LAUNCH_ONCE = """
import ptxgate
from ptxgate import _native, runtime as R
rt = ptxgate.Runtime(disk_cache=False)
k = rt.compile("kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) { }", "saxpy")
y = rt.empty(1000, "f32")
k[4, 256](y, y, 2.0, 1000)
print(type(k[4, 256]).__module__, _native.reason)
"""


@pytest.mark.parametrize("how", ["switched off", "absent"])
def test_without_the_extension_launches_take_the_ctypes_path_and_say_nothing(fake_driver, tmp_path, how):
    import shutil
    import subprocess
    import sys

    env = dict(os.environ)
    if how == "switched off":
        env["PTXGATE_EXTENSION"] = "0"
    else:  # a library with no extension beside it
        shutil.copy(ptxgate.library_path(), tmp_path / "libptxgate.so")
        env["PTXGATE_LIBRARY"] = str(tmp_path / "libptxgate.so")
    run = subprocess.run([sys.executable, "-c", LAUNCH_ONCE], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert run.returncode == 0 and run.stderr == "", run.stderr
    module, reason = run.stdout.strip().split(" ", 1)
    assert module == "ptxgate.runtime"
    assert reason == ("PTXGATE_EXTENSION=0" if how == "switched off" else
                      "no _launch.abi3.so beside the package or the library")


def test_a_kernel_and_its_launchers_are_collected(ext, runtime, fake_driver):
    """kernel -> its launchers -> the Python launcher -> kernel is a cycle the collector frees."""
    import gc
    import weakref

    k = runtime.compile("@workgroup(32)\nkernel nothing() { }\n", "nothing")
    launcher = k[1, 32]
    launcher()
    assert not isinstance(launcher, R.Launcher)
    alive = weakref.ref(k)
    del k, launcher
    gc.collect()
    assert alive() is None
