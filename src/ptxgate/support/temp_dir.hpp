// A private temporary directory (mkdtemp), removed with its contents when it goes out of scope.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <utility>

namespace ptxgate::support {

/// A directory made by mkdtemp (mode 0700), removed with its contents on destruction, and
/// registered for signal_cleanup.hpp's handlers, so that an interrupted command removes it too.
class TempDir {
 public:
  /// Creates `<parent>/<prefix>XXXXXX`; the error text says why it failed.
  [[nodiscard]] static std::expected<TempDir, std::string> create(const std::filesystem::path& parent,
                                                                  const std::string& prefix);
  /// create() under the system temporary directory ($TMPDIR, else /tmp).
  [[nodiscard]] static std::expected<TempDir, std::string> create_in_tmp(const std::string& prefix);
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), slot_(std::exchange(other.slot_, -1)) {
    other.path_.clear();
  }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  /// Keeps the directory (e.g. after renaming it into place): the destructor no longer removes it.
  void release();

 private:
  explicit TempDir(std::filesystem::path path);
  std::filesystem::path path_;
  int slot_ = -1;  ///< in the signal cleanup's table
};

}  // namespace ptxgate::support
