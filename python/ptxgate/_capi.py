"""ctypes declarations of libptxgate's C API (capi/ptxgate.h, version 1) and the library lookup."""
import ctypes
import os
import sys

API_VERSION = 3  # PTXGATE_CAPI_VERSION this binding was written for

OK, ERROR, USAGE = 0, 1, 2

DTYPE_UNKNOWN, DTYPE_BOOL, DTYPE_I32, DTYPE_U32, DTYPE_I64, DTYPE_U64, DTYPE_F32, DTYPE_F64 = range(8)
DTYPE_BY_NAME = {"bool": DTYPE_BOOL, "i32": DTYPE_I32, "u32": DTYPE_U32, "i64": DTYPE_I64,
                 "u64": DTYPE_U64, "f32": DTYPE_F32, "f64": DTYPE_F64}
NAME_OF_DTYPE = {v: k for k, v in DTYPE_BY_NAME.items()}

ARG_BUFFER, ARG_POINTER, ARG_SCALAR = 0, 1, 2

FORMAT_IR, FORMAT_PTX, FORMAT_CUBIN, FORMAT_FATBIN = range(4)  # ptxgate_module_format


class Diagnostic(ctypes.Structure):
    _fields_ = [("code", ctypes.c_char_p), ("severity", ctypes.c_int32), ("message", ctypes.c_char_p),
                ("file", ctypes.c_char_p), ("line", ctypes.c_uint32), ("column", ctypes.c_uint32),
                ("fix", ctypes.c_char_p)]


class CompileOptions(ctypes.Structure):
    _fields_ = [("target", ctypes.c_char_p), ("opt_level", ctypes.c_int32), ("cubin", ctypes.c_int32),
                ("cache_dir", ctypes.c_char_p), ("disk_cache", ctypes.c_int32)]


class CheckRequest(ctypes.Structure):
    _fields_ = [("input", ctypes.c_char_p), ("kernel", ctypes.c_char_p), ("grid", ctypes.c_char_p),
                ("block", ctypes.c_char_p), ("shared_bytes", ctypes.c_char_p), ("cooperative", ctypes.c_int32),
                ("profile", ctypes.c_char_p), ("args", ctypes.POINTER(ctypes.c_char_p)), ("arg_count", ctypes.c_size_t),
                ("empty_args", ctypes.c_int32), ("elements", ctypes.POINTER(ctypes.c_char_p)),
                ("element_count", ctypes.c_size_t), ("null_stream", ctypes.c_int32),
                ("require_explicit_stream", ctypes.c_int32), ("cache_dir", ctypes.c_char_p),
                ("signature", ctypes.c_char_p)]


class RuntimeOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int32), ("track_dependencies", ctypes.c_int32), ("cache_dir", ctypes.c_char_p),
                ("disk_cache", ctypes.c_int32), ("checked", ctypes.c_int32), ("checked_launches", ctypes.c_int32)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("dtype", ctypes.c_int32), ("device", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("buffer", ctypes.c_void_p), ("pointer", ctypes.c_uint64),
                ("elements", ctypes.c_uint64), ("bits", ctypes.c_uint64)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint64 * 3), ("block", ctypes.c_uint64 * 3),
                ("dynamic_shared_bytes", ctypes.c_uint64), ("cooperative", ctypes.c_int32)]


_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_S = ctypes.c_int  # ptxgate_status

_SIGNATURES = {
    "ptxgate_api_version": (ctypes.c_int, []),
    "ptxgate_library_version": (ctypes.c_char_p, []),
    "ptxgate_diagnostics_count": (ctypes.c_size_t, [_P]),
    "ptxgate_diagnostics_get": (_S, [_P, ctypes.c_size_t, ctypes.POINTER(Diagnostic)]),
    "ptxgate_diagnostics_render": (ctypes.c_char_p, [_P, ctypes.c_char_p]),
    "ptxgate_diagnostics_free": (None, [_P]),
    "ptxgate_compile_options_init": (None, [ctypes.POINTER(CompileOptions)]),
    "ptxgate_compile": (_S, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(CompileOptions), _PP, _PP]),
    "ptxgate_compile_file": (_S, [ctypes.c_char_p, ctypes.POINTER(CompileOptions), _PP, _PP]),
    "ptxgate_read_ptx": (_S, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, _PP, _PP]),
    "ptxgate_module_format_of": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]),
    "ptxgate_module_ptx": (ctypes.c_char_p, [_P]),
    "ptxgate_module_cubin": (_P, [_P, ctypes.POINTER(ctypes.c_size_t)]),
    "ptxgate_module_target": (ctypes.c_char_p, [_P]),
    "ptxgate_module_kernels_json": (ctypes.c_char_p, [_P]),
    "ptxgate_module_free": (None, [_P]),
    "ptxgate_check": (_S, [ctypes.POINTER(CheckRequest), _PP, _PP]),
    "ptxgate_verdict_launchable": (ctypes.c_int, [_P]),
    "ptxgate_verdict_diagnostics": (_P, [_P]),
    "ptxgate_verdict_json": (ctypes.c_char_p, [_P]),
    "ptxgate_verdict_summary": (ctypes.c_char_p, [_P]),
    "ptxgate_verdict_free": (None, [_P]),
    "ptxgate_runtime_options_init": (None, [ctypes.POINTER(RuntimeOptions)]),
    "ptxgate_runtime_create": (_S, [ctypes.POINTER(RuntimeOptions), _PP, _PP]),
    "ptxgate_runtime_device": (ctypes.c_int, [_P]),
    "ptxgate_runtime_target": (ctypes.c_char_p, [_P]),
    "ptxgate_runtime_synchronize": (_S, [_P, _PP]),
    "ptxgate_runtime_reset": (_S, [_P, _PP]),
    "ptxgate_runtime_free": (None, [_P]),
    "ptxgate_runtime_compile": (_S, [_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p, _PP, _PP]),
    "ptxgate_runtime_load_ptx": (_S, [_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p, _PP, _PP]),
    "ptxgate_runtime_load_module": (_S, [_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.c_char_p, _PP, _PP]),
    "ptxgate_kernel_json": (ctypes.c_char_p, [_P]),
    "ptxgate_kernel_free": (None, [_P]),
    "ptxgate_buffer_allocate": (_S, [_P, ctypes.c_size_t, _PP, _PP]),
    "ptxgate_buffer_upload": (_S, [_P, _P, ctypes.c_size_t, _PP]),
    "ptxgate_buffer_download": (_S, [_P, _P, ctypes.c_size_t, _PP]),
    "ptxgate_buffer_device_pointer": (ctypes.c_uint64, [_P]),
    "ptxgate_buffer_size": (ctypes.c_size_t, [_P]),
    "ptxgate_buffer_free": (None, [_P]),
    "ptxgate_stream_create": (_S, [_P, _PP, _PP]),
    "ptxgate_stream_wrap": (_S, [_P, ctypes.c_size_t, _PP, _PP]),
    "ptxgate_stream_handle": (ctypes.c_size_t, [_P]),
    "ptxgate_stream_synchronize": (_S, [_P, _PP]),
    "ptxgate_stream_free": (None, [_P]),
    "ptxgate_kernel_launch": (_S, [_P, ctypes.POINTER(LaunchConfig), ctypes.POINTER(Arg), ctypes.c_size_t, _P, _PP]),
    "ptxgate_kernel_check": (_S, [_P, ctypes.POINTER(LaunchConfig), ctypes.POINTER(Arg), ctypes.c_size_t, _P, _PP]),
}


class LibraryNotFound(OSError):
    """libptxgate could not be loaded; the message lists where it was looked for."""


def _candidates():
    env = os.environ.get("PTXGATE_LIBRARY")
    if env:
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    names = ["libptxgate.so", "libptxgate.so.0"] if sys.platform != "darwin" else ["libptxgate.dylib"]
    return [os.path.join(here, n) for n in names] + names, False


def load_library():
    """Loads libptxgate: $PTXGATE_LIBRARY, else next to this package, else the loader's search path."""
    paths, from_env = _candidates()
    errors = []
    for path in paths:
        if os.sep in path and not os.path.exists(path):
            errors.append(f"{path}: no such file")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib, path
    where = "PTXGATE_LIBRARY" if from_env else "next to the package and on the loader's search path"
    raise LibraryNotFound(f"libptxgate not found ({where}): " + "; ".join(errors) +
                          ". Build it (scripts/build.sh) and set PTXGATE_LIBRARY=build/libptxgate.so")


_lib = None
_lib_path = None


def lib():
    """The loaded library (loaded on first use), with its C API version checked."""
    global _lib, _lib_path
    if _lib is None:
        loaded, path = load_library()
        version = loaded.ptxgate_api_version()
        if version != API_VERSION:
            raise LibraryNotFound(f"{path} has C API version {version}; this package speaks version {API_VERSION}: "
                                  "install the package and the library from the same ptxgate build")
        _lib, _lib_path = loaded, path
    return _lib


def library_path():
    lib()
    return _lib_path
