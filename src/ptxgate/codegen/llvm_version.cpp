// The LLVM version ptxgate was built with.
#include <llvm/Config/llvm-config.h>

#include "ptxgate/codegen/codegen.hpp"

namespace ptxgate::codegen {

std::string llvm_version() { return LLVM_VERSION_STRING; }

}  // namespace ptxgate::codegen
