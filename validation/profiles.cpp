// Device profiles: search directories, lookup by name or path, listing.
#include "ptxgate/validation/profiles.hpp"
#include "ptxgate/diagnostics/internal/json_checks.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace ptxgate::validation {
namespace fs = std::filesystem;

namespace {

// The directory holding libptxgate, found through a symbol of this library.
std::optional<fs::path> library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&profile_search_dirs), &info) == 0 || !info.dli_fname) return std::nullopt;
  std::error_code ec;
  auto p = fs::canonical(info.dli_fname, ec);
  if (ec) return std::nullopt;
  return p.parent_path();
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool looks_like_path(std::string_view s) {
  return s.find('/') != std::string_view::npos || (s.size() > 5 && s.ends_with(".json"));
}

diag::Location file_location(const fs::path& path) {
  diag::Location loc;
  loc.file = path.string();
  return loc;
}

}  // namespace

std::vector<fs::path> profile_search_dirs() {
  std::vector<fs::path> dirs;
  auto add = [&](const fs::path& p) {
    if (is_dir(p) && std::find(dirs.begin(), dirs.end(), p) == dirs.end()) dirs.push_back(p);
  };
  if (const char* env = std::getenv("PTXGATE_PROFILE_DIR"); env && *env) add(env);
  if (auto lib = library_dir()) {
    add(*lib / ".." / "share" / "ptxgate" / "profiles");
  }
#ifdef PTXGATE_SOURCE_DIR
  add(fs::path(PTXGATE_SOURCE_DIR) / "profiles");
#endif
  return dirs;
}

std::expected<DeviceCaps, diag::Diagnostics> load_profile_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diag::Diagnostics d;
    d.add(diag::Code::cannot_read_file, fmt::format("cannot read device profile '{}'", path.string()),
          file_location(path), "check the path, or give a profile name (`ptxgate devices --profiles`)");
    return std::unexpected(std::move(d));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  constexpr int kMaxNesting = 64;
  if (!diag::json_nesting_within(buffer.str(), kMaxNesting)) {
    diag::Diagnostics d;
    d.add(diag::Code::profile_malformed,
          fmt::format("device profile '{}' nests arrays or objects deeper than {} levels", path.string(), kMaxNesting),
          file_location(path), "a profile is one flat object; compare with `ptxgate devices --profile h100-sxm`");
    return std::unexpected(std::move(d));
  }
  auto j = nlohmann::json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions only to obtain the parser's position for the message.
    std::string detail = "syntax error";
    try {
      nlohmann::json reparsed = nlohmann::json::parse(buffer.str());
      (void)reparsed;
    } catch (const nlohmann::json::parse_error& e) {
      detail = e.what();
    }
    diag::Diagnostics d;
    d.add(diag::Code::profile_malformed, fmt::format("device profile '{}' is not valid JSON: {}", path.string(), detail),
          file_location(path), "fix the JSON syntax; compare with `ptxgate devices --profile h100-sxm`");
    return std::unexpected(std::move(d));
  }
  auto caps = caps_from_json(j, path.string());
  if (caps && caps->profile.empty()) caps->profile = path.stem().string();
  return caps;
}

std::expected<DeviceCaps, diag::Diagnostics> load_profile(std::string_view name_or_path) {
  if (looks_like_path(name_or_path)) return load_profile_file(fs::path(name_or_path));
  for (const auto& dir : profile_search_dirs()) {
    fs::path candidate = dir / (std::string(name_or_path) + ".json");
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return load_profile_file(candidate);
  }
  std::set<std::string> names;
  for (const auto& dir : profile_search_dirs()) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".json") names.insert(e.path().stem().string());
  }
  std::string available;
  for (const auto& n : names) available += (available.empty() ? "" : ", ") + n;
  diag::Diagnostics d;
  d.add(diag::Code::profile_not_found,
        fmt::format("no device profile named '{}'; available: {}", name_or_path,
                    available.empty() ? "(none found)" : available),
        {}, "pick one of the available names, or give the path of a profile JSON file");
  return std::unexpected(std::move(d));
}

std::expected<std::vector<ProfileEntry>, diag::Diagnostics> list_profiles() {
  std::vector<ProfileEntry> out;
  diag::Diagnostics errors;
  std::set<std::string> seen;
  for (const auto& dir : profile_search_dirs()) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string name = f.stem().string();
      if (!seen.insert(name).second) continue;
      auto caps = load_profile_file(f);
      if (!caps) {
        errors.append(caps.error());
        continue;
      }
      out.push_back({name, f, std::move(*caps)});
    }
  }
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace ptxgate::validation
