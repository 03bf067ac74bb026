// Internal helpers of the module cache: run a tool with captured output, and a private temporary directory.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <vector>

namespace ptxgate::module_cache {

/// What a finished child process left.
struct ProcessResult {
  int exit_status = -1;        ///< exit code, or 128 + signal number
  std::string stdout_text;
  std::string stderr_text;
};

/// A directory made by mkdtemp, removed with its contents on destruction.
class TempDir {
 public:
  /// Creates `<parent>/<prefix>XXXXXX`; the error text says why it failed.
  [[nodiscard]] static std::expected<TempDir, std::string> create(const std::filesystem::path& parent, const std::string& prefix);
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  /// Keeps the directory (e.g. after renaming it into place): the destructor no longer removes it.
  void release() { path_.clear(); }

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

/// Runs argv[0] (a path, not searched in PATH) via posix_spawn with stdin from
/// /dev/null and stdout/stderr captured through files in a private temporary
/// directory. The error text says why the process could not be started.
[[nodiscard]] std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv);

}  // namespace ptxgate::module_cache
