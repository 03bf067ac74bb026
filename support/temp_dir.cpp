// TempDir: mkdtemp on creation, remove_all on destruction.
#include "ptxgate/support/temp_dir.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

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

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace ptxgate::support
