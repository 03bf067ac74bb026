#!/usr/bin/env python3
"""Launches one kernel through the raw CUDA driver, with nothing of ptxgate in between.

Used by scripts/gpu_memsafe.sh to run the memory-safety cases *unchecked* under compute-sanitizer:
ptxgate itself refuses a launch it proves out of bounds, so the hardware's view of such a launch needs
a launcher that does no validation at all. Buffers are allocated with cuMemAlloc at exactly the bytes
the case gives (so memcheck's bounds are the case's bounds), scalars are packed in the parameter's type.

    raw_launch.py CASE.json

CASE.json (written by scripts/gpu_memsafe.sh from the case's RUN line and `ptxgate emit --emit meta`):
    {"ptx": "k.ptx", "kernel": "k", "grid": [x, y, z], "block": [x, y, z], "shared_bytes": N,
     "params": [{"name", "kind": "buffer"|"scalar", "type", "spec"}]}
Exit status: 0 when the launch and the synchronisation succeeded, 1 when the driver reported an error
(printed), 2 for a bad case file.
"""
import ctypes
import json
import os
import random
import struct
import sys

SCALAR_FORMATS = {
    "u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i", "u64": "<Q",
    "i64": "<q", "f32": "<f", "f64": "<d", "bool": "<B",
}
ELEMENT_BYTES = {"f16": 2, "bf16": 2}


def element_format(type_name):
    if type_name in SCALAR_FORMATS:
        return SCALAR_FORMATS[type_name]
    if type_name in ELEMENT_BYTES:
        return "<H"
    raise ValueError(f"unsupported element type {type_name!r}")


def half_bits(value, type_name):
    f32 = struct.unpack("<I", struct.pack("<f", value))[0]
    if type_name == "bf16":
        return f32 >> 16
    return struct.unpack("<H", struct.pack("<e", value))[0]


def pack_values(type_name, values):
    fmt = element_format(type_name)
    out = bytearray()
    for v in values:
        if type_name in ELEMENT_BYTES:
            out += struct.pack("<H", half_bits(float(v), type_name))
        elif type_name.startswith("f"):
            out += struct.pack(fmt, float(v))
        else:
            out += struct.pack(fmt, int(v) & ((1 << (8 * struct.calcsize(fmt))) - 1)
                               if fmt[1].isupper() else int(v))
    return bytes(out)


def buffer_bytes(param):
    """The bytes a buffer spec gives: buffer:BYTES (zeros), fill:COUNT:VALUE, iota:COUNT, random:COUNT[:SEED]."""
    spec, t = param["spec"], param["type"]
    kind, _, rest = spec.partition(":")
    if kind == "buffer":
        return bytes(int(rest))
    if kind == "fill":
        count, _, value = rest.partition(":")
        return pack_values(t, [float(value) if t.startswith(("f", "bf")) else int(value)] * int(count))
    if kind == "iota":
        return pack_values(t, range(int(rest)))
    if kind == "random":
        count, _, seed = rest.partition(":")
        rng = random.Random(int(seed) if seed else 0)
        if t.startswith(("f", "bf")):
            return pack_values(t, [rng.random() for _ in range(int(count))])
        return pack_values(t, [rng.randrange(0, 1 << 16) for _ in range(int(count))])
    raise ValueError(f"unsupported buffer spec {spec!r}")


def scalar_bytes(param):
    spec, t = param["spec"], param["type"]
    if ":" in spec:
        t, spec = spec.split(":", 1)
    if t == "bool":
        return struct.pack("<B", 1 if spec in ("true", "1") else 0)
    if t.startswith("f"):
        return struct.pack(SCALAR_FORMATS[t], float(spec))
    value = int(spec, 0)
    fmt = SCALAR_FORMATS[t]
    if fmt[1].isupper():
        value &= (1 << (8 * struct.calcsize(fmt))) - 1
    return struct.pack(fmt, value)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        case = json.load(f)
    base = os.path.dirname(os.path.abspath(sys.argv[1]))
    with open(os.path.join(base, case["ptx"]), "rb") as f:
        ptx = f.read() + b"\0"

    cuda = ctypes.CDLL("libcuda.so.1")

    def check(result, what):
        if result != 0:
            name = ctypes.c_char_p()
            cuda.cuGetErrorName(result, ctypes.byref(name))
            print(f"raw_launch: {what}: {name.value.decode() if name.value else result}")
            sys.exit(1)

    check(cuda.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    module = ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(ptx)), "cuModuleLoadData")
    func = ctypes.c_void_p()
    check(cuda.cuModuleGetFunction(ctypes.byref(func), module, case["kernel"].encode()), "cuModuleGetFunction")
    shared = int(case.get("shared_bytes", 0))
    if shared > 48 * 1024:
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
        check(cuda.cuFuncSetAttribute(func, 8, shared), "cuFuncSetAttribute")

    holders = []
    for p in case["params"]:
        if p["kind"] == "buffer":
            if p["spec"] == "null":
                holders.append(ctypes.c_uint64(0))
                continue
            data = buffer_bytes(p)
            ptr = ctypes.c_uint64()
            check(cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(len(data), 1))), "cuMemAlloc")
            if data:
                check(cuda.cuMemcpyHtoD_v2(ptr, ctypes.c_char_p(data), ctypes.c_size_t(len(data))), "cuMemcpyHtoD")
            holders.append(ctypes.c_uint64(ptr.value))
        else:
            raw = scalar_bytes(p)
            holders.append(ctypes.create_string_buffer(raw, len(raw)))
    params = (ctypes.c_void_p * max(len(holders), 1))(
        *[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
    g, b = case["grid"], case["block"]
    check(cuda.cuLaunchKernel(func, g[0], g[1], g[2], b[0], b[1], b[2], shared, None, params, None), "cuLaunchKernel")
    check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    print("raw_launch: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
