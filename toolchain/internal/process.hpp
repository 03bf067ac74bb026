// The one process runner of ptxgate: run a tool (ptxas) with its output captured.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

namespace ptxgate::toolchain {

/// What a finished child process left.
struct ProcessResult {
  int exit_status = -1;        ///< exit code, or 128 + signal number
  std::string stdout_text;
  std::string stderr_text;
};

/// The most of a tool's standard output or error kept; a tool that writes more is an error.
inline constexpr uint64_t kMaxToolOutputBytes = 16 * 1024 * 1024;

/// Runs argv[0] (a path, not searched in PATH) via posix_spawn with stdin from /dev/null
/// and stdout/stderr captured through files in a private temporary directory. The error
/// text says why the process could not be started or its output not read.
[[nodiscard]] std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv);

/// The first `max_lines` lines of a tool's output, for a message.
[[nodiscard]] std::string first_lines(const std::string& text, size_t max_lines);

}  // namespace ptxgate::toolchain
