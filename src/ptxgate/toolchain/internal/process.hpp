// The one process runner of ptxgate: run a tool (ptxas, nvdisasm) with its output captured and a time limit.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <string>
#include <vector>

namespace ptxgate::toolchain {

/// What a finished child process left.
struct ProcessResult {
  int exit_status = -1;        ///< exit code, or 128 + signal number
  bool timed_out = false;      ///< stopped (SIGKILL to its process group) at the time limit
  std::string stdout_text;
  std::string stderr_text;
};

/// The most of a tool's standard output or error kept; a tool that writes more is an error.
inline constexpr uint64_t kMaxToolOutputBytes = 16 * 1024 * 1024;

/// The time limit of a tool run when PTXGATE_TOOL_TIMEOUT is not set.
inline constexpr std::chrono::seconds kDefaultToolTimeLimit{300};

/// The time limit of every tool run: $PTXGATE_TOOL_TIMEOUT seconds (0: none), else
/// kDefaultToolTimeLimit; the error text says why the variable's value is not a number.
[[nodiscard]] std::expected<std::chrono::milliseconds, std::string> tool_time_limit();

/// Runs argv[0] (a path, not searched in PATH) via posix_spawn in a process group of its own,
/// with stdin from /dev/null and stdout/stderr captured through files in a private temporary
/// directory. Past `time_limit` (0: none) the group is killed and the result says `timed_out`.
/// While it runs, the child's group and the directory are registered with
/// src/ptxgate/support/signal_cleanup.hpp, so an interrupted command leaves neither behind. The error text
/// says why the process could not be started or its output not read.
[[nodiscard]] std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv,
                                                                    std::chrono::milliseconds time_limit);

/// run_process with tool_time_limit() (an invalid PTXGATE_TOOL_TIMEOUT is the error).
[[nodiscard]] std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv);

/// "ptxas did not finish within 300 s ..." for a timed-out run of `what`, naming the limit and
/// how to change it.
[[nodiscard]] std::string timeout_message(const std::string& what, std::chrono::milliseconds time_limit);

/// The first `max_lines` lines of a tool's output, for a message.
[[nodiscard]] std::string first_lines(const std::string& text, size_t max_lines);

}  // namespace ptxgate::toolchain
