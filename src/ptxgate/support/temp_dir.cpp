// TempDir: mkdtemp on creation (registered for the signal cleanup), remove_all on destruction.
#include "ptxgate/support/temp_dir.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "ptxgate/support/signal_cleanup.hpp"

namespace ptxgate::support {

std::expected<TempDir, std::string> TempDir::create(const std::filesystem::path& parent, const std::string& prefix) {
  std::string pattern = (parent / (prefix + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return std::unexpected(fmt::format("cannot create a temporary directory in '{}': {}", parent.string(),
                                       std::strerror(errno)));
  return TempDir(std::filesystem::path(pattern));
}

std::expected<TempDir, std::string> TempDir::create_in_tmp(const std::string& prefix) {
  std::error_code ec;
  auto root = std::filesystem::temp_directory_path(ec);
  if (ec) root = "/tmp";
  return create(root, prefix);
}

TempDir::TempDir(std::filesystem::path path) : path_(std::move(path)), slot_(register_temp_directory(path_.c_str())) {}

void TempDir::release() {
  unregister_temp_directory(std::exchange(slot_, -1));
  path_.clear();
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  unregister_temp_directory(slot_);  // after the removal: a signal meanwhile removes what is left
}

}  // namespace ptxgate::support
