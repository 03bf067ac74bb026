// run_process: posix_spawn with stdin from /dev/null and output captured in a private temporary directory.
#include "ptxgate/toolchain/internal/process.hpp"

#include <cerrno>
#include <cstring>
#include <sstream>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "ptxgate/support/files.hpp"
#include "ptxgate/support/temp_dir.hpp"

extern char** environ;

namespace ptxgate::toolchain {

std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::unexpected(std::string("no program to run"));
  auto dir = support::TempDir::create_in_tmp("ptxgate-run-");
  if (!dir) return std::unexpected(dir.error());
  const auto out_path = (dir->path() / "stdout").string();
  const auto err_path = (dir->path() / "stderr").string();

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return std::unexpected(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return std::unexpected(fmt::format("waitpid for '{}' failed: {}", argv[0], std::strerror(errno)));
  }
  ProcessResult result;
  if (WIFEXITED(status)) {
    result.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_status = 128 + WTERMSIG(status);
  }
  support::ReadLimits limits;
  limits.max_bytes = kMaxToolOutputBytes;
  auto out = support::read_file(out_path, limits);
  if (!out) return std::unexpected(fmt::format("output of '{}': {}", argv[0], out.error().message));
  auto err = support::read_file(err_path, limits);
  if (!err) return std::unexpected(fmt::format("output of '{}': {}", argv[0], err.error().message));
  result.stdout_text = std::move(*out);
  result.stderr_text = std::move(*err);
  return result;
}

std::string first_lines(const std::string& text, size_t max_lines) {
  std::istringstream in(text);
  std::string out;
  size_t n = 0;
  for (std::string line; std::getline(in, line) && n < max_lines; ++n) out += (n ? "\n" : "") + line;
  return out;
}

}  // namespace ptxgate::toolchain
