// Checked mode's report: a launch's violation record (contract::CheckedRecord) as PG3804, naming
// the kernel, the launch, the access's source location, the thread, the block, the index and the length.
#pragma once

#include <string>

#include "ptxgate/contract/checked.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::validation {

/// Adds PG3804 for `record` when it holds a violation (count > 0): `kernel` is the kernel's name
/// (an access of a device function names its function too), `launch` names the launch ("launch #7
/// of kernel 'scale' grid=(4,1,1) block=(256,1,1) shared=0 on stream 0x..."), `file` the kernel's
/// source file (the location's path). A record naming no site of `sites` (a forged or stale record)
/// is reported as PG3804 without a location. Returns whether it added one.
bool report_checked_violation(diag::Diagnostics& out, const contract::CheckedInfo& sites,
                              const contract::CheckedRecord& record, const std::string& kernel,
                              const std::string& launch, const std::string& file);

}  // namespace ptxgate::validation
