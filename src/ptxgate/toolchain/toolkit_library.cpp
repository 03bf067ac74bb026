// find_toolkit_library(): the toolkit's shared libraries, searched in the roots discover() uses.
#include "ptxgate/toolchain/toolkit_library.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ptxgate/toolchain/toolkit.hpp"

namespace ptxgate::toolchain {
namespace {

namespace fs = std::filesystem;

bool regular_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // follows symbolic links, as dlopen does
}

/// The numeric version after "lib<name>.so." (13 for libnvrtc.so.13, 0 when not a number).
unsigned soname_version(std::string_view file, std::string_view prefix) {
  unsigned v = 0;
  for (char c : file.substr(prefix.size())) {
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    v = v * 10 + unsigned(c - '0');
  }
  return v;
}

/// lib<name>.so in `dir`, else its newest versioned sibling; empty when neither exists.
std::string in_directory(const fs::path& dir, std::string_view name) {
  const std::string plain = fmt::format("lib{}.so", name);
  if (regular_file(dir / plain)) return (dir / plain).string();
  const std::string prefix = plain + ".";
  std::string best;
  unsigned best_version = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string file = it->path().filename().string();
    if (!file.starts_with(prefix) || !regular_file(it->path())) continue;
    unsigned v = soname_version(file, prefix);
    if (best.empty() || v > best_version) {
      best = it->path().string();
      best_version = v;
    }
  }
  return best;
}

}  // namespace

std::expected<std::string, std::string> find_toolkit_library(std::string_view name) {
  std::string env_name = fmt::format("PTXGATE_LIB{}", name);
  std::transform(env_name.begin(), env_name.end(), env_name.begin(),
                 [](char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); });
  if (const char* env = std::getenv(env_name.c_str()); env && *env) {
    if (regular_file(env)) return std::string(env);
    return std::unexpected(fmt::format("lib{}.so not found at '{}' (${})", name, env, env_name));
  }
  std::vector<std::string> searched;
  for (const auto& root : cuda_roots()) {
    for (const char* sub : {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"}) {
      fs::path dir = fs::path(root.path) / sub;
      if (std::string found = in_directory(dir, name); !found.empty()) return found;
      searched.push_back(fmt::format("{} ({})", dir.string(), root.origin));
    }
  }
  return std::unexpected(fmt::format("lib{}.so not found; searched: {}", name, fmt::join(searched, ", ")));
}

}  // namespace ptxgate::toolchain
