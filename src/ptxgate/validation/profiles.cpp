// Device profiles: search directories, lookup by name or path, listing.
#include "ptxgate/validation/profiles.hpp"
#include "ptxgate/diagnostics/internal/json_checks.hpp"
#include "ptxgate/support/files.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <set>

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
#ifdef PTXGATE_LIB_TO_PROFILES
    add(*lib / PTXGATE_LIB_TO_PROFILES);  // the install layout's relative path (GNUInstallDirs)
#else
    add(*lib / ".." / "share" / "ptxgate" / "profiles");
#endif
  }
#ifdef PTXGATE_SOURCE_DIR
  add(fs::path(PTXGATE_SOURCE_DIR) / "profiles");
#endif
  return dirs;
}

std::expected<DeviceCaps, diag::Diagnostics> parse_profile(std::string_view text, std::string_view origin) {
  diag::Location loc;
  loc.file = std::string(origin);
  constexpr int kMaxNesting = 64;
  if (!diag::json_nesting_within(text, kMaxNesting)) {
    diag::Diagnostics d;
    d.add(diag::Code::profile_malformed,
          fmt::format("device profile '{}' nests arrays or objects deeper than {} levels", origin, kMaxNesting), loc,
          "a profile is one flat object; compare with `ptxgate devices --profile h100-sxm`");
    return std::unexpected(std::move(d));
  }
  // The last object key the parser reached names the field of a number the parser refuses
  // (1e400 overflows a double: nlohmann reports out_of_range, not a syntax error).
  std::string last_key;
  nlohmann::json::parser_callback_t remember_key = [&](int, nlohmann::json::parse_event_t event,
                                                       nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && parsed.is_string()) last_key = parsed.get<std::string>();
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end(), remember_key);
  } catch (const nlohmann::json::out_of_range& e) {
    diag::Diagnostics d;
    d.add(diag::Code::profile_value_out_of_range,
          fmt::format("device profile field '{}' holds a number no integer or double can represent ({})",
                      last_key.empty() ? "(unknown)" : last_key, e.what()),
          loc, "give the field the device's value (see `ptxgate devices --profile h100-sxm`)");
    return std::unexpected(std::move(d));
  } catch (const nlohmann::json::exception& e) {
    diag::Diagnostics d;
    d.add(diag::Code::profile_malformed, fmt::format("device profile '{}' is not valid JSON: {}", origin, e.what()),
          loc, "fix the JSON syntax; compare with `ptxgate devices --profile h100-sxm`");
    return std::unexpected(std::move(d));
  }
  return caps_from_json(j, origin);
}

std::expected<DeviceCaps, diag::Diagnostics> load_profile_file(const fs::path& path) {
  support::ReadLimits limits;
  limits.max_bytes = kMaxProfileBytes;
  auto text = support::read_file(path.string(), limits);
  if (!text) {
    diag::Diagnostics d;
    d.add(diag::Code::cannot_read_file, fmt::format("cannot read device profile: {}", text.error().message),
          file_location(path), "check the path, or give a profile name (`ptxgate devices --profiles`)");
    return std::unexpected(std::move(d));
  }
  auto caps = parse_profile(*text, path.string());
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
