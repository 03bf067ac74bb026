"""The launch hot path in C when the build made it: ``_launch.abi3.so`` (python/ext/launch.c, a
CPython extension of the stable ABI) beside this package (a wheel) or beside the library the package
loaded (the build folder). ``kernel[grid, block]`` is then its Launcher, which walks the arguments in
C and hands what it does not take to the Python Launcher it wraps. Without the extension, or with
PTXGATE_EXTENSION=0, launches take the ctypes path: the same words, the same checks and errors."""
import ctypes
import importlib.machinery
import importlib.util
import os
from typing import Any, Optional

from . import _capi

FILE = "_launch.abi3.so"

_module: Any = None
_loaded = False
#: Why launches take the ctypes path ("" while the extension is used).
reason = ""


def _paths():
    yield os.path.join(os.path.dirname(os.path.abspath(__file__)), FILE)
    library = _capi.library_path()
    if os.sep in library:
        yield os.path.join(os.path.dirname(os.path.abspath(library)), FILE)


def _load(path: str):
    loader = importlib.machinery.ExtensionFileLoader("ptxgate._launch", path)
    spec = importlib.util.spec_from_file_location("ptxgate._launch", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def module() -> Optional[Any]:
    """The extension, set up (once), or None (``reason`` says why)."""
    global _module, _loaded, reason
    if _loaded:
        return _module
    _loaded = True
    if os.environ.get("PTXGATE_EXTENSION", "1") == "0":
        reason = "PTXGATE_EXTENSION=0"
        return None
    entry = ctypes.cast(_capi.lib().ptxgate_kernel_launch_packed, ctypes.c_void_p).value
    reason = f"no {FILE} beside the package or the library"
    for path in _paths():
        if not os.path.isfile(path):
            continue
        try:
            ext = _load(path)
        except ImportError as e:
            reason = f"{path}: {e}"
            continue
        # Loaded after the package's library, the extension's libptxgate.so.0 is that library (the
        # loader matches the soname); any other copy would see other handles.
        if ext.entry_address() != entry:
            reason = f"{path} calls another libptxgate than {_capi.library_path()}"
            continue
        from . import arrays
        from .runtime import SET, STATE, _raise_last

        ext.setup(STATE, ctypes.addressof(SET), _raise_last, arrays.native_kind, arrays._TORCH_DESC,
                  arrays._NUMPY_DESC, arrays._TYPESTR_DESC, arrays._device_of)
        _module, reason = ext, ""
        return ext
    return None


def wrap(launcher):
    """The C launcher over a Python ``runtime.Launcher``, or the Python one without the extension."""
    ext = module()
    if ext is None or launcher._n > 256:  # past the packed form's largest signature: the library explains
        return launcher
    stream = launcher._stream if launcher._explicit_stream else None
    return ext.Launcher(launcher, ctypes.addressof(launcher._kh),
                        ctypes.addressof(stream._handle) if stream is not None else 0)
