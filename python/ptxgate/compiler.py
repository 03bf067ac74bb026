"""Offline calls: compile a .pg module (PTX, cubin, signatures, resources) and check a launch."""
import ctypes
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence, Tuple, Union

from . import _capi
from .diagnostics import Diagnostic, Error, check_call, call

PathOrSource = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Param:
    """One kernel parameter, in signature order."""

    name: str
    index: int
    kind: str               # "buffer" or "scalar"
    type: str               # element type of a buffer, or the scalar's type: bool i32 u32 i64 u64 f32 f64
    size_bytes: int         # bytes of the by-value slot (8 for a buffer's pointer)
    access: Optional[str]   # buffers: "in", "out" or "inout"

    @property
    def is_buffer(self):
        return self.kind == "buffer"


@dataclass(frozen=True)
class Resources:
    """What the compiled kernel consumes (ptxas offline, the driver at run time)."""

    registers_per_thread: int
    static_shared_bytes: int
    local_bytes: int
    max_threads_per_block: int
    barriers: int
    spill_store_bytes: int
    spill_load_bytes: int
    constant_bytes: int


@dataclass(frozen=True)
class KernelInfo:
    name: str
    params: Tuple[Param, ...]
    required_block: Optional[Tuple[int, int, int]]
    static_shared_bytes: int
    cooperative: bool
    uses_grid_sync: bool
    resources: Optional[Resources]

    @staticmethod
    def from_json(j):
        params = tuple(Param(p["name"], p["index"], p["kind"], p["type"], p["size_bytes"], p.get("access"))
                       for p in j["params"])
        block = tuple(j["required_block"]) if j.get("required_block") else None
        res = j.get("resources")
        resources = Resources(**{k: res[k] for k in Resources.__dataclass_fields__}) if res else None
        return KernelInfo(j["name"], params, block, j["static_shared_bytes"], j["cooperative"], j["uses_grid_sync"],
                          resources)


@dataclass(frozen=True)
class Module:
    """A compiled module: its PTX, its cubin (b"" when not asked for), and each kernel's
    signature and resources, by name."""

    target: str
    ptx: str
    cubin: bytes
    kernels: Dict[str, KernelInfo]
    warnings: Tuple[Diagnostic, ...] = ()


def _is_path(source_or_path) -> bool:
    if isinstance(source_or_path, os.PathLike):
        return True
    if not isinstance(source_or_path, str):
        raise TypeError(f"expected .pg text or a path, got {type(source_or_path).__name__}")
    return "\n" not in source_or_path and os.path.isfile(source_or_path)


def _b(s, what="a string argument"):
    """``s`` as the NUL-terminated bytes the C API takes: a NUL inside would silently cut it short
    there (a cache directory "a\\0b" would be "a"), so it is refused."""
    if s is None:
        return None
    b = os.fsencode(s) if isinstance(s, os.PathLike) else bytes(s) if isinstance(s, (bytes, bytearray)) else str(s).encode()
    if b"\0" in b:
        raise ValueError(f"{what} contains a NUL byte: {s!r}")
    return b


def _read_file(path: str) -> bytes:
    """The bytes of the file at ``path``; Error (PG5001) naming the path when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Error([Diagnostic("PG5001", "error", f"cannot read '{path}': {e.strerror or e}", file=path,
                                fix="pass the path of a readable file, or the module's text")]) from None


def compile(source_or_path: PathOrSource, target: str = "sm_90", *, cubin: bool = True, opt_level: int = 3,
            cache_dir: Optional[str] = None, disk_cache: bool = True, name: str = "<text>") -> Module:
    """Compiles a .pg module through the module cache. ``source_or_path`` is a path (a
    ``pathlib.Path``, or a string naming an existing file) or the module's text (``name`` then
    names it in diagnostics). ``cubin=True`` also runs ptxas (needs the CUDA Toolkit) for the
    cubin and each kernel's resources. Raises Error with the diagnostics on failure."""
    if isinstance(opt_level, bool) or not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise ValueError(f"opt_level must be an int from 0 to 3, not {opt_level!r}")
    lib = _capi.lib()
    options = _capi.CompileOptions()
    lib.ptxgate_compile_options_init(ctypes.byref(options))
    options.target = _b(target, "target")
    options.opt_level = opt_level
    options.cubin = 1 if cubin else 0
    options.cache_dir = _b(cache_dir, "cache_dir")
    options.disk_cache = 1 if disk_cache else 0
    handle = ctypes.c_void_p()
    if _is_path(source_or_path):
        warnings = check_call(lib.ptxgate_compile_file, _b(os.fspath(source_or_path), "the path"), ctypes.byref(options),
                              ctypes.byref(handle))
    else:
        text = source_or_path.encode()
        warnings = check_call(lib.ptxgate_compile, text, len(text), _b(name, "name"), ctypes.byref(options),
                              ctypes.byref(handle))
    try:
        size = ctypes.c_size_t()
        data = lib.ptxgate_module_cubin(handle, ctypes.byref(size))
        blob = ctypes.string_at(data, size.value) if size.value else b""
        kernels = {k["name"]: KernelInfo.from_json(k) for k in json.loads(lib.ptxgate_module_kernels_json(handle))}
        return Module(lib.ptxgate_module_target(handle).decode(), lib.ptxgate_module_ptx(handle).decode(), blob, kernels,
                      tuple(warnings))
    finally:
        lib.ptxgate_module_free(handle)


def _read_text(source_or_path, name):
    if isinstance(source_or_path, (bytes, bytearray, memoryview)):  # a cubin (or PTX) already in memory
        return bytes(source_or_path), name
    if _is_path(source_or_path):
        path = os.fspath(source_or_path)
        return _read_file(path), path
    return source_or_path.encode(), name


def read_ptx(ptx_or_path: Union[PathOrSource, bytes], *, name: str = "<ptx>") -> Module:
    """Reads PTX or a cubin made by another compiler (nvcc -ptx / -cubin, NVRTC, Triton's
    ``compiled.asm["ptx"]`` / ``["cubin"]``; a path, PTX text, or the bytes). PTX: each launchable
    entry's signature as ptxgate derives it (a pointer is a buffer of type "void": any element
    type; see docs/foreign_ptx.md), with no cubin or resources. A cubin: ``target`` is its
    architecture, ``cubin`` its bytes, each entry's parameters by size (``param0``...: 8 bytes a
    "void" buffer, 4 bytes u32) and the resources recorded in it. Entries with a parameter a
    launch cannot pass are left out with a PG3007 warning; raises Error for text that is not PTX
    (PG1004), no entry (PG2006), or a fatbin or unreadable cubin (PG5001)."""
    lib = _capi.lib()
    text, label = _read_text(ptx_or_path, name)
    handle = ctypes.c_void_p()
    warnings = check_call(lib.ptxgate_read_ptx, text, len(text), _b(label, "name"), ctypes.byref(handle))
    try:
        kernels = {k["name"]: KernelInfo.from_json(k) for k in json.loads(lib.ptxgate_module_kernels_json(handle))}
        size = ctypes.c_size_t()
        data = lib.ptxgate_module_cubin(handle, ctypes.byref(size))
        blob = ctypes.string_at(data, size.value) if size.value else b""
        return Module(lib.ptxgate_module_target(handle).decode(), lib.ptxgate_module_ptx(handle).decode(), blob, kernels,
                      tuple(warnings))
    finally:
        lib.ptxgate_module_free(handle)


def _module_format(data: bytes) -> int:
    """The library's reading of what ``data`` is (IR, PTX, cubin or fatbin): PTX opens with its
    ``.version`` directive; words in a comment or a string decide nothing."""
    return _capi.lib().ptxgate_module_format_of(data, len(data))


@dataclass(frozen=True)
class Verdict:
    """The outcome of an offline check. ``status``: "launchable", "blocked", "error" (no verdict:
    the program or profile is wrong) or "usage_error" (an option's value). ``diagnostics`` as
    objects, ``text`` rendered like the CLI (with the summary line), ``json`` the CLI's
    ``--format json`` document (None without a verdict)."""

    status: str
    diagnostics: Tuple[Diagnostic, ...]
    text: str
    summary: str = ""
    json: Optional[dict] = None
    warnings: Tuple[Diagnostic, ...] = field(default=())

    @property
    def launchable(self):
        return self.status == "launchable"

    def __bool__(self):
        return self.launchable

    @property
    def codes(self):
        return [d.code for d in self.diagnostics]


def _dims(v) -> Optional[str]:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    return ",".join(str(int(x)) for x in v)


def _strings(items: Sequence[str], what: str):
    arr = (ctypes.c_char_p * max(1, len(items)))(*[_b(s, what) for s in items])
    return arr, len(items)


def check(source_or_path: PathOrSource, kernel: str, *, grid="1", block=None, shared_bytes: int = 0,
          cooperative: bool = False, profile: Optional[str] = None, args: Optional[Union[Dict[str, str], Sequence[str]]] = None,
          elements: Optional[Dict[str, int]] = None, null_stream: bool = False, require_explicit_stream: bool = False,
          cache_dir: Optional[str] = None, signature: Optional[str] = None) -> Verdict:
    """Checks a launch offline against a device profile, as ``ptxgate check`` does (same
    grammar: ``grid`` an int, a tuple or "max"; ``args`` NAME=SPEC strings or a dict in signature
    order, ``[]`` for an empty table; ``elements`` buffer name -> elements the launch touches).
    The module is .pg source, or PTX or a cubin from another compiler (a ``.ptx`` / ``.cubin``
    path, or PTX text); ``signature`` restates such a kernel's parameter types ("f32[], u64, f32":
    a cubin records only their sizes)."""
    if _is_path(source_or_path):
        return _check_file(os.fspath(source_or_path), kernel, grid, block, shared_bytes, cooperative, profile, args,
                           elements, null_stream, require_explicit_stream, cache_dir, signature)
    text = source_or_path.encode()
    with tempfile.TemporaryDirectory(prefix="ptxgate-check-") as tmp:
        path = os.path.join(tmp, "module.ptx" if _module_format(text) == _capi.FORMAT_PTX else "module.pg")
        with open(path, "wb") as f:
            f.write(text)
        return _check_file(path, kernel, grid, block, shared_bytes, cooperative, profile, args, elements, null_stream,
                           require_explicit_stream, cache_dir, signature)


def _check_file(path, kernel, grid, block, shared_bytes, cooperative, profile, args, elements, null_stream,
                require_explicit_stream, cache_dir, signature=None):
    lib = _capi.lib()
    r = _capi.CheckRequest()
    r.input = _b(path, "the path")
    r.kernel = _b(kernel, "kernel")
    r.grid = _b(_dims(grid), "grid")
    r.block = _b(_dims(block), "block")
    r.shared_bytes = _b(str(shared_bytes), "shared_bytes")
    r.cooperative = 1 if cooperative else 0
    r.profile = _b(profile, "profile")
    if args is not None and not isinstance(args, (dict, list, tuple)):
        raise TypeError(f"args must be a dict of NAME: SPEC or a list of 'NAME=SPEC' strings, not {type(args).__name__}")
    specs = [f"{k}={v}" for k, v in args.items()] if isinstance(args, dict) else list(args or [])
    keep = []
    if specs:
        arr, n = _strings(specs, "an argument spec")
        keep.append(arr)
        r.args, r.arg_count = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p)), n
    r.empty_args = 1 if args is not None and not specs else 0
    if elements is not None and not isinstance(elements, dict):
        raise TypeError(f"elements must be a dict of buffer name: element count, not {type(elements).__name__}")
    counts = [f"{k}={int(v)}" for k, v in (elements or {}).items()]
    if counts:
        arr, n = _strings(counts, "an elements entry")
        keep.append(arr)
        r.elements, r.element_count = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p)), n
    r.null_stream = 1 if null_stream else 0
    r.require_explicit_stream = 1 if require_explicit_stream else 0
    r.cache_dir = _b(cache_dir, "cache_dir")
    r.signature = _b(signature, "signature")
    handle = ctypes.c_void_p()
    status, warnings, warnings_text = call(lib.ptxgate_check, ctypes.byref(r), ctypes.byref(handle))
    if status != _capi.OK:
        return Verdict("usage_error" if status == _capi.USAGE else "error", tuple(warnings), warnings_text)
    try:
        from .diagnostics import read
        diags, text = read(lib.ptxgate_verdict_diagnostics(handle), free=False)
        summary = lib.ptxgate_verdict_summary(handle).decode()
        document = json.loads(lib.ptxgate_verdict_json(handle))
        status = "launchable" if lib.ptxgate_verdict_launchable(handle) else "blocked"
        full_text = (text + summary + "\n") if text else summary + "\n"
        return Verdict(status, tuple(diags), full_text, summary, document, tuple(warnings))
    finally:
        lib.ptxgate_verdict_free(handle)
