"""C API handles owned by Python objects: released once by ``free()``, at the latest when the
object is collected; a freed object raises Error (PG5002) when used."""
from . import _capi
from .diagnostics import Diagnostic, Error


class _Owned:
    """A C API handle this object owns. ``_free_name`` names the C API function that releases it;
    ``_remake`` is the fix line of the error raised when a freed object is used."""

    _free_name = ""
    _remake = ""
    _handle = None

    def free(self) -> None:
        # The handle object itself becomes NULL: launchers and graphs holding it then pass NULL,
        # which the library refuses (PG5002), never a freed pointer.
        if self._handle:
            getattr(_capi.lib(), self._free_name)(self._handle)
            self._handle.value = None

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def _live(self):
        if not self._handle:
            raise freed(self)
        return self._handle


def freed(obj) -> Error:
    what = type(obj).__name__
    return Error([Diagnostic("PG5002", "error", f"this {what} was freed",
                             fix=getattr(obj, "_remake", "") or f"make a new {what}")])
