"""ptxgate for Python: compile .pg kernels, check launches offline against device profiles, and
launch through the validating runtime with numpy arrays, PyTorch/CuPy tensors and scalars.

Pure Python over libptxgate's C API (ctypes); the library is found through $PTXGATE_LIBRARY,
next to this package, or on the loader's search path."""
from ._capi import API_VERSION, LibraryNotFound, library_path
from .compiler import KernelInfo, Module, Param, Resources, Verdict, check, compile, read_ptx
from .diagnostics import Diagnostic, Error
from .runtime import Buffer, Kernel, Runtime, Stream

__version__ = "0.1.0"

__all__ = ["API_VERSION", "Buffer", "Diagnostic", "Error", "Kernel", "KernelInfo", "LibraryNotFound", "Module", "Param",
           "Resources", "Runtime", "Stream", "Verdict", "check", "compile", "library_path", "read_ptx"]
