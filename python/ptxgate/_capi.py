"""ctypes declarations of libptxgate's C API (src/ptxgate/capi/ptxgate.h, version 3) and the library lookup."""
import ctypes
import os
import sys

API_VERSION = 3  # PTXGATE_CAPI_VERSION this binding was written for

OK, ERROR, USAGE = 0, 1, 2

ARG_BUFFER, ARG_POINTER, ARG_SCALAR, ARG_REAL, ARG_TENSOR_MAP = range(5)
MEMORY_DEVICE, MEMORY_PINNED, MEMORY_HOST = range(3)

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
                ("disk_cache", ctypes.c_int32), ("checked", ctypes.c_int32), ("checked_launches", ctypes.c_int32),
                ("profile_launches", ctypes.c_int32),
                ("stream_ordered", ctypes.c_int32), ("require_explicit_stream", ctypes.c_int32),
                ("pool_limit_bytes", ctypes.c_uint64), ("pool_keep_bytes", ctypes.c_uint64),
                ("opt_level", ctypes.c_int32), ("fp_mode", ctypes.c_int32),
                ("require_memory_proof", ctypes.c_int32)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("dtype", ctypes.c_int32), ("device", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("buffer", ctypes.c_void_p), ("pointer", ctypes.c_uint64),
                ("elements", ctypes.c_uint64), ("bits", ctypes.c_uint64), ("tensor_map", ctypes.c_void_p)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint64 * 3), ("block", ctypes.c_uint64 * 3),
                ("dynamic_shared_bytes", ctypes.c_uint64), ("cooperative", ctypes.c_int32)]


class CopyEnd(ctypes.Structure):
    _fields_ = [("memory", ctypes.c_int32), ("dtype", ctypes.c_int32), ("buffer", ctypes.c_void_p),
                ("pinned", ctypes.c_void_p), ("host", ctypes.c_void_p), ("offset", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64)]


class PoolUsage(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in
                ("reserved_bytes", "reserved_peak_bytes", "used_bytes", "used_peak_bytes", "live_bytes",
                 "live_peak_bytes", "allocations", "limit_bytes")]


class TensorMapDesc(ctypes.Structure):
    _fields_ = [("im2col", ctypes.c_int32), ("type", ctypes.c_char_p), ("rank", ctypes.c_uint32),
                ("dims", ctypes.c_uint64 * 5), ("strides", ctypes.c_uint64 * 4), ("box", ctypes.c_uint32 * 5),
                ("element_strides", ctypes.c_uint32 * 5), ("interleave", ctypes.c_char_p),
                ("swizzle", ctypes.c_char_p), ("l2_promotion", ctypes.c_char_p), ("oob_fill", ctypes.c_char_p),
                ("lower_corner", ctypes.c_int32 * 3), ("upper_corner", ctypes.c_int32 * 3),
                ("channels_per_pixel", ctypes.c_uint32), ("pixels_per_column", ctypes.c_uint32)]


class CollectiveEnd(ctypes.Structure):
    _fields_ = [("buffer", ctypes.c_void_p), ("first", ctypes.c_uint64), ("count", ctypes.c_uint64),
                ("dtype", ctypes.c_int32), ("reserved", ctypes.c_int32)]


class Collective(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("op", ctypes.c_int32), ("root", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("send", CollectiveEnd), ("recv", CollectiveEnd)]


_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_S = ctypes.c_int  # ptxgate_status
_U32P = ctypes.POINTER(ctypes.c_uint32)
_SZ = ctypes.c_size_t
_U64 = ctypes.c_uint64
_I32 = ctypes.c_int32
_CP = ctypes.c_char_p

_SIGNATURES = {
    "ptxgate_api_version": (ctypes.c_int, []),
    "ptxgate_library_version": (_CP, []),
    "ptxgate_dtype_name": (_CP, [_I32]),
    "ptxgate_dtype_size": (_SZ, [_I32]),
    "ptxgate_float_bits": (_S, [ctypes.c_double, _I32, ctypes.POINTER(_U64), _PP]),
    "ptxgate_text_data": (_CP, [_P]),
    "ptxgate_text_free": (None, [_P]),
    "ptxgate_diagnostics_count": (_SZ, [_P]),
    "ptxgate_diagnostics_get": (_S, [_P, _SZ, ctypes.POINTER(Diagnostic)]),
    "ptxgate_diagnostics_render": (_CP, [_P, _CP]),
    "ptxgate_diagnostics_free": (None, [_P]),
    "ptxgate_compile_options_init": (None, [ctypes.POINTER(CompileOptions)]),
    "ptxgate_compile": (_S, [_CP, _SZ, _CP, ctypes.POINTER(CompileOptions), _PP, _PP]),
    "ptxgate_compile_file": (_S, [_CP, ctypes.POINTER(CompileOptions), _PP, _PP]),
    "ptxgate_read_ptx": (_S, [_CP, _SZ, _CP, _PP, _PP]),
    "ptxgate_module_format_of": (ctypes.c_int, [_CP, _SZ]),
    "ptxgate_module_ptx": (_CP, [_P]),
    "ptxgate_module_cubin": (_P, [_P, ctypes.POINTER(_SZ)]),
    "ptxgate_module_target": (_CP, [_P]),
    "ptxgate_module_kernels_json": (_CP, [_P]),
    "ptxgate_module_free": (None, [_P]),
    "ptxgate_check": (_S, [ctypes.POINTER(CheckRequest), _PP, _PP]),
    "ptxgate_verdict_launchable": (ctypes.c_int, [_P]),
    "ptxgate_verdict_diagnostics": (_P, [_P]),
    "ptxgate_verdict_json": (_CP, [_P]),
    "ptxgate_verdict_summary": (_CP, [_P]),
    "ptxgate_verdict_free": (None, [_P]),
    "ptxgate_runtime_options_init": (None, [ctypes.POINTER(RuntimeOptions)]),
    "ptxgate_runtime_create": (_S, [ctypes.POINTER(RuntimeOptions), _PP, _PP]),
    "ptxgate_runtime_device": (ctypes.c_int, [_P]),
    "ptxgate_runtime_target": (_CP, [_P]),
    "ptxgate_runtime_json": (_CP, [_P]),
    "ptxgate_runtime_synchronize": (_S, [_P, _PP]),
    "ptxgate_runtime_reset": (_S, [_P, _PP]),
    "ptxgate_runtime_free": (None, [_P]),
    "ptxgate_devices_json": (_S, [_PP, _PP]),
    "ptxgate_runtime_compile": (_S, [_P, _CP, _SZ, _CP, _CP, _PP, _PP]),
    "ptxgate_runtime_load_ptx": (_S, [_P, _CP, _SZ, _CP, _CP, _PP, _PP]),
    "ptxgate_runtime_load_module": (_S, [_P, _CP, _SZ, _CP, _CP, _CP, _PP, _PP]),
    "ptxgate_kernel_json": (_CP, [_P]),
    "ptxgate_kernel_free": (None, [_P]),
    "ptxgate_buffer_allocate": (_S, [_P, _SZ, _PP, _PP]),
    "ptxgate_buffer_allocate_array": (_S, [_P, _SZ, _I32, _P, _PP, _PP]),
    "ptxgate_buffer_dtype": (_I32, [_P]),
    "ptxgate_buffer_device": (ctypes.c_int, [_P]),
    "ptxgate_buffer_fill_bytes": (_S, [_P, ctypes.c_uint8, _PP]),
    "ptxgate_buffer_upload": (_S, [_P, _P, _SZ, _PP]),
    "ptxgate_buffer_download": (_S, [_P, _P, _SZ, _PP]),
    "ptxgate_buffer_device_pointer": (_U64, [_P]),
    "ptxgate_buffer_size": (_SZ, [_P]),
    "ptxgate_buffer_free": (None, [_P]),
    "ptxgate_stream_create": (_S, [_P, _PP, _PP]),
    "ptxgate_stream_wrap": (_S, [_P, _SZ, _PP, _PP]),
    "ptxgate_stream_handle": (_SZ, [_P]),
    "ptxgate_stream_synchronize": (_S, [_P, _PP]),
    "ptxgate_stream_free": (None, [_P]),
    "ptxgate_event_create": (_S, [_P, _PP, _PP]),
    "ptxgate_event_record": (_S, [_P, _P, _PP]),
    "ptxgate_event_synchronize": (_S, [_P, _PP]),
    "ptxgate_event_query": (_S, [_P, ctypes.POINTER(_I32), _PP]),
    "ptxgate_event_elapsed_ms": (_S, [_P, _P, ctypes.POINTER(ctypes.c_float), _PP]),
    "ptxgate_stream_wait_event": (_S, [_P, _P, _PP]),
    "ptxgate_event_free": (None, [_P]),
    "ptxgate_host_buffer_allocate": (_S, [_P, _SZ, _PP, _PP]),
    "ptxgate_host_buffer_data": (_P, [_P]),
    "ptxgate_host_buffer_size": (_SZ, [_P]),
    "ptxgate_host_buffer_wait": (_S, [_P, _I32, _PP]),
    "ptxgate_host_buffer_free": (None, [_P]),
    "ptxgate_copy_async": (_S, [_P, ctypes.POINTER(CopyEnd), ctypes.POINTER(CopyEnd), _PP]),
    "ptxgate_copy_peer_async": (_S, [_P, ctypes.POINTER(CopyEnd), ctypes.POINTER(CopyEnd), _PP]),
    "ptxgate_fill_async": (_S, [_P, ctypes.POINTER(CopyEnd), ctypes.c_uint32, ctypes.c_uint32, _PP]),
    "ptxgate_runtime_pool_usage": (_S, [_P, ctypes.POINTER(PoolUsage), _PP]),
    "ptxgate_runtime_pool_trim": (_S, [_P, _U64, _PP]),
    "ptxgate_runtime_pool_reset_peaks": (_S, [_P, _PP]),
    "ptxgate_runtime_profile": (_S, [_P, _I32, _PP, _PP]),
    "ptxgate_kernel_launch": (_S, [_P, ctypes.POINTER(LaunchConfig), ctypes.POINTER(Arg), _SZ, _P, _PP]),
    "ptxgate_kernel_check": (_S, [_P, ctypes.POINTER(LaunchConfig), ctypes.POINTER(Arg), _SZ, _P, _PP]),
    "ptxgate_take_last_diagnostics": (_P, []),
    # The two entries a binding calls in a loop take their handles as they are (a c_void_p and a
    # bytes object): no argtypes, so ctypes converts nothing on the hot path.
    "ptxgate_kernel_launch_packed": (_S, None),
    "ptxgate_graph_exec_replay": (_S, None),
    "ptxgate_graph_create": (_S, [_P, _PP, _PP]),
    "ptxgate_graph_add_launch": (_S, [_P, _P, ctypes.POINTER(LaunchConfig), ctypes.POINTER(Arg), _SZ, _U32P, _PP]),
    "ptxgate_graph_add_copy": (_S, [_P, ctypes.POINTER(CopyEnd), ctypes.POINTER(CopyEnd), _U32P, _PP]),
    "ptxgate_graph_add_fill": (_S, [_P, ctypes.POINTER(CopyEnd), ctypes.c_uint32, ctypes.c_uint32, _U32P, _PP]),
    "ptxgate_graph_size": (_SZ, [_P]),
    "ptxgate_graph_dependencies": (_SZ, [_P, ctypes.c_uint32, _U32P, _SZ]),
    "ptxgate_graph_instantiate": (_S, [_P, _PP, _PP]),
    "ptxgate_graph_free": (None, [_P]),
    "ptxgate_graph_exec_launch": (_S, [_P, _P, _PP]),
    "ptxgate_graph_exec_update": (_S, [_P, ctypes.c_uint32, ctypes.POINTER(LaunchConfig), ctypes.POINTER(Arg), _SZ,
                                       _PP]),
    "ptxgate_graph_exec_replays": (_U64, [_P]),
    "ptxgate_graph_exec_size": (_SZ, [_P]),
    "ptxgate_graph_exec_free": (None, [_P]),
    "ptxgate_tensor_map_encode": (_S, [_P, ctypes.POINTER(TensorMapDesc), _P, _U64, _U64, _U64, _PP, _PP]),
    "ptxgate_tensor_map_describe": (_CP, [_P]),
    "ptxgate_tensor_map_free": (None, [_P]),
    "ptxgate_device_set_open": (_S, [ctypes.POINTER(ctypes.c_int), _SZ, ctypes.POINTER(RuntimeOptions), _I32, _PP,
                                     _PP]),
    "ptxgate_device_set_size": (_SZ, [_P]),
    "ptxgate_device_set_runtime": (_P, [_P, _SZ]),
    "ptxgate_device_set_peer_enabled": (ctypes.c_int, [_P, _SZ, _SZ]),
    "ptxgate_device_set_free": (None, [_P]),
    "ptxgate_nccl_unique_id": (_S, [ctypes.c_char_p, _PP]),
    "ptxgate_communicator_init_all": (_S, [_PP, _SZ, _PP, _PP]),
    "ptxgate_communicator_init_rank": (_S, [_P, ctypes.c_int, ctypes.c_int, _CP, _PP, _PP]),
    "ptxgate_communicator_rank": (ctypes.c_int, [_P]),
    "ptxgate_communicator_size": (ctypes.c_int, [_P]),
    "ptxgate_communicator_device": (ctypes.c_int, [_P]),
    "ptxgate_communicator_synchronize": (_S, [_P, _P, _PP]),
    "ptxgate_communicator_free": (None, [_P]),
    "ptxgate_collective_run": (_S, [_P, _P, ctypes.POINTER(Collective), _PP]),
    "ptxgate_group_create": (_S, [_PP, _PP]),
    "ptxgate_group_add": (_S, [_P, _P, _P, ctypes.POINTER(Collective), _PP]),
    "ptxgate_group_end": (_S, [_P, _PP]),
    "ptxgate_group_free": (None, [_P]),
}


class LibraryNotFound(OSError):
    """libptxgate could not be loaded; the message lists where it was looked for."""


def _candidates():
    env = os.environ.get("PTXGATE_LIBRARY")
    if env:
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    names = ["libptxgate.so", "libptxgate.so.0"] if sys.platform != "darwin" else ["libptxgate.dylib"]
    # The wheel bundles the library beside the package; a source checkout has it in build/.
    beside = [os.path.join(here, n) for n in names]
    checkout = [os.path.join(os.path.dirname(os.path.dirname(here)), "build", n) for n in names]
    return beside + checkout + names, False


def _preload_bundled(directory):
    """Loads the shared libraries a wheel bundles beside the package (ptxgate/_libs) by soname, so
    libptxgate's own needs resolve to them; in dependency order, retrying what failed before."""
    libs = os.path.join(directory, "_libs")
    if not os.path.isdir(libs):
        return
    pending = sorted(os.path.join(libs, n) for n in os.listdir(libs))
    while pending:
        failed = []
        for path in pending:
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                failed.append(path)
        if len(failed) == len(pending):
            return  # the loader will say what is missing
        pending = failed


def load_library():
    """Loads libptxgate: $PTXGATE_LIBRARY, else the one bundled beside this package, else the
    build/ of the source checkout the package is in, else the loader's search path."""
    paths, from_env = _candidates()
    errors = []
    for path in paths:
        if os.sep in path and not os.path.exists(path):
            errors.append(f"{path}: no such file")
            continue
        if os.sep in path:
            _preload_bundled(os.path.dirname(path))
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
            continue
        missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
        if missing:
            errors.append(f"{path}: lacks {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib, path
    where = "PTXGATE_LIBRARY" if from_env else "beside the package, in the checkout's build/ and on the loader's search path"
    raise LibraryNotFound(f"libptxgate not found ({where}): " + "; ".join(errors) +
                          ". Install the package with its library (scripts/install_python.sh), or build it "
                          "(scripts/build.sh) and set PTXGATE_LIBRARY=build/libptxgate.so")


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
