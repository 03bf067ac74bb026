"""Diagnostics as Python objects: the C API's records, and the Error that carries them."""
import ctypes
from dataclasses import dataclass
from typing import List, Optional

from . import _capi

SEVERITIES = ("error", "warning", "note")


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic: a stable code (``PG3105``), its severity, the message with the offending
    value and the limit, where it points (file, 1-based line and column; line 0: no source), and
    what to change."""

    code: str
    severity: str
    message: str
    file: str = ""
    line: int = 0
    column: int = 0
    fix: str = ""

    def __str__(self):
        where = f"{self.file}:{self.line}:{self.column}: " if self.line else (f"{self.file}: " if self.file else "")
        text = f"{where}{self.severity}[{self.code}]: {self.message}"
        return text + (f"\nfix: {self.fix}" if self.fix else "")


class Error(Exception):
    """A ptxgate call failed; ``diagnostics`` says why (``text`` renders them like the CLI)."""

    def __init__(self, diagnostics: List[Diagnostic], text: Optional[str] = None):
        self.diagnostics = list(diagnostics)
        self.text = text if text is not None else "\n".join(str(d) for d in self.diagnostics)
        super().__init__(self.text)

    @property
    def codes(self):
        return [d.code for d in self.diagnostics]


def _s(b):
    return b.decode("utf-8", "replace") if b else ""


def read(handle, free=True):
    """The diagnostics of a C list as (list of Diagnostic, rendered text); frees the list when asked."""
    lib = _capi.lib()
    if not handle:
        return [], ""
    try:
        out = []
        one = _capi.Diagnostic()
        for i in range(lib.ptxgate_diagnostics_count(handle)):
            if lib.ptxgate_diagnostics_get(handle, i, ctypes.byref(one)) != _capi.OK:
                continue
            severity = SEVERITIES[one.severity] if 0 <= one.severity < len(SEVERITIES) else "error"
            out.append(Diagnostic(_s(one.code), severity, _s(one.message), _s(one.file), one.line, one.column, _s(one.fix)))
        text = _s(lib.ptxgate_diagnostics_render(handle, b"text")) if out else ""
        return out, text
    finally:
        if free:
            lib.ptxgate_diagnostics_free(handle)


def call(fn, *args):
    """Calls a C API function whose last parameter receives a diagnostics list. Returns
    (status, diagnostics, text); raises nothing."""
    handle = ctypes.c_void_p()
    status = fn(*args, ctypes.byref(handle))
    diags, text = read(handle.value)
    return status, diags, text


def check_call(fn, *args):
    """Like call(), raising Error unless the status is OK; returns the warnings."""
    status, diags, text = call(fn, *args)
    if status != _capi.OK:
        if not diags:
            diags = [Diagnostic("PG9000", "error", f"{fn.__name__} failed without diagnostics")]
        raise Error(diags, text or None)
    return diags
