// TEMPORARY: replaced by the real verifier.
#include "ir/verifier.hpp"

namespace ptxgate::ir {

diag::Diagnostics verify(Module&, const diag::SourceFile*, const Limits&) {
  diag::Diagnostics d;
  d.add(diag::Code::internal_error, "verifier is not built yet");
  return d;
}

}  // namespace ptxgate::ir
