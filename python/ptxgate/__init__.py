"""ptxgate for Python: compile .pg kernels, check launches offline against device profiles, and
launch through the validating runtime on PyTorch/CuPy tensors, numpy arrays and scalars of every
type the language has, with events, copies, pools, graphs, tensor maps, several devices and NCCL.

Pure Python over libptxgate's C API (ctypes): the library is the one installed beside this
package (scripts/install_python.sh builds a wheel that bundles it), else $PTXGATE_LIBRARY, else
the build/ of the source checkout, else the loader's search path."""
from . import nccl
from ._capi import API_VERSION, LibraryNotFound, library_path
from .compiler import KernelInfo, Module, Param, Resources, Verdict, check, compile, read_ptx
from .devices import DeviceSet, devices
from .diagnostics import Diagnostic, Error
from .dtypes import float_bits
from .graphs import Graph, GraphExec
from .nccl import Communicator
from .memory import Buffer, BufferView, HostBuffer
from .runtime import Event, Kernel, KernelProfile, Launcher, PoolUsage, Profile, Runtime, Stream
from .tensor_map import TensorMap, tensor_map

__version__ = "0.3.0"

__all__ = ["API_VERSION", "Buffer", "BufferView", "Communicator", "DeviceSet", "Diagnostic", "Error", "Event", "Graph",
           "GraphExec", "HostBuffer", "Kernel", "KernelInfo", "KernelProfile", "Launcher", "LibraryNotFound", "Module",
           "Param", "PoolUsage", "Profile", "Resources", "Runtime", "Stream", "TensorMap", "Verdict", "check",
           "compile", "devices", "float_bits", "library_path", "nccl", "read_ptx", "tensor_map"]
