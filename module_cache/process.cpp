// Runs a tool via posix_spawn with captured output; private temporary directories.
#include "ptxgate/module_cache/internal/process.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

extern char** environ;

namespace ptxgate::module_cache {
namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

std::expected<TempDir, std::string> TempDir::create(const std::filesystem::path& parent, const std::string& prefix) {
  std::string pattern = (parent / (prefix + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return std::unexpected(fmt::format("cannot create a temporary directory in '{}': {}", parent.string(),
                                       std::strerror(errno)));
  return TempDir(std::filesystem::path(pattern));
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::unexpected(std::string("no program to run"));
  std::error_code ec;
  auto tmp_root = std::filesystem::temp_directory_path(ec);
  if (ec) tmp_root = "/tmp";
  auto dir = TempDir::create(tmp_root, "ptxgate-run-");
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
  result.stdout_text = read_all(out_path);
  result.stderr_text = read_all(err_path);
  return result;
}

}  // namespace ptxgate::module_cache
