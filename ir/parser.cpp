// TEMPORARY: replaced by the real parser.
#include "ir/parser.hpp"

namespace ptxgate::ir {

ParseResult parse(const diag::SourceFile& file, const Limits&) {
  ParseResult r;
  r.module.path = file.path();
  r.diagnostics.add(diag::Code::internal_error, "parser is not built yet");
  return r;
}

}  // namespace ptxgate::ir
