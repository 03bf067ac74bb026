// The C API's version and diagnostics lists.
#include "ptxgate/capi/internal/handles.hpp"

using namespace ptxgate;

extern "C" {

int ptxgate_api_version(void) { return PTXGATE_CAPI_VERSION; }

const char* ptxgate_library_version(void) { return PTXGATE_VERSION; }

size_t ptxgate_diagnostics_count(const ptxgate_diagnostics* list) { return list != nullptr ? list->list.size() : 0; }

ptxgate_status ptxgate_diagnostics_get(const ptxgate_diagnostics* list, size_t index, ptxgate_diagnostic* out) {
  if (list == nullptr || out == nullptr || index >= list->list.size()) return PTXGATE_USAGE;
  const diag::Diagnostic& d = list->list.items()[index];
  out->code = diag::info(d.code).name.data();  // a string literal of the code table
  out->severity = static_cast<int32_t>(d.severity);
  out->message = d.message.c_str();
  out->file = d.location.file.c_str();
  out->line = d.location.line;
  out->column = d.location.column;
  out->fix = d.fix.c_str();
  return PTXGATE_OK;
}

const char* ptxgate_diagnostics_render(ptxgate_diagnostics* list, const char* format) {
  if (list == nullptr || format == nullptr) return nullptr;
  auto f = diag::format_from_name(format);
  if (!f) return nullptr;
  try {
    list->rendered = diag::render(list->list, *f);
  } catch (...) {
    return nullptr;
  }
  return list->rendered.c_str();
}

void ptxgate_diagnostics_free(ptxgate_diagnostics* list) { delete list; }

}  // extern "C"
