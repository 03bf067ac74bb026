// disassemble(): nvdisasm on a cubin in a private temporary directory.
#include "ptxgate/toolchain/disassemble.hpp"

#include <fmt/format.h>

#include "ptxgate/support/files.hpp"
#include "ptxgate/support/temp_dir.hpp"
#include "ptxgate/toolchain/internal/process.hpp"
#include "ptxgate/toolchain/toolkit.hpp"

namespace ptxgate::toolchain {
namespace {

std::unexpected<diag::Diagnostics> failure(std::string message, std::string fix) {
  diag::Diagnostics d;
  d.add(diag::Code::disassembler_unavailable, std::move(message), {}, std::move(fix));
  return std::unexpected(std::move(d));
}

}  // namespace

std::expected<std::string, diag::Diagnostics> disassemble(std::string_view cubin, std::string_view arch) {
  auto nvdisasm = find_nvdisasm();
  if (!nvdisasm) return std::unexpected(nvdisasm.error());
  if (cubin.empty()) return failure(fmt::format("no {} cubin to disassemble", arch), "check the ptxas installation");
  auto dir = support::TempDir::create_in_tmp("ptxgate-nvdisasm-");
  if (!dir) return failure("cannot prepare nvdisasm input: " + dir.error(), "set TMPDIR to a writable directory");
  const auto path = (dir->path() / "module.cubin").string();
  if (auto written = support::write_file_atomically(path, cubin); !written)
    return failure(fmt::format("cannot write nvdisasm input '{}'", path), "set TMPDIR to a writable directory with free space");
  auto limit = tool_time_limit();
  if (!limit) return failure(limit.error(), "set PTXGATE_TOOL_TIMEOUT to a number of seconds (0: no limit)");
  auto run = run_process({*nvdisasm, "-c", path}, *limit);
  if (!run) return failure(fmt::format("cannot run {}: {}", *nvdisasm, run.error()), "check the nvdisasm binary (PTXGATE_NVDISASM)");
  if (run->timed_out)
    return failure(timeout_message(*nvdisasm, *limit), "raise the limit: PTXGATE_TOOL_TIMEOUT=SECONDS (0: no limit)");
  if (run->exit_status != 0)
    return failure(fmt::format("{} exited with status {} on the {} cubin: {}", *nvdisasm, run->exit_status, arch,
                               first_lines(run->stderr_text + run->stdout_text, 20)),
                   "use the nvdisasm of the toolkit whose ptxas built the cubin (CUDA_HOME or PTXGATE_NVDISASM)");
  return std::move(run->stdout_text);
}

}  // namespace ptxgate::toolchain
