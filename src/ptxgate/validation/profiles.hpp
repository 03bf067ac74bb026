// Device profiles: JSON files of DeviceCaps shipped in profiles/, found by name or read from a path.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/device_caps.hpp"

namespace ptxgate::validation {

/// The profile used when none is named (`ptxgate check` without --device-profile).
inline constexpr std::string_view kDefaultProfile = "h100-sxm";

/// Directories searched for `NAME.json`, in order: $PTXGATE_PROFILE_DIR, the install's
/// share/ptxgate/profiles (relative to libptxgate), then the source tree's profiles/.
/// Only directories that exist are returned.
std::vector<std::filesystem::path> profile_search_dirs();

/// The largest profile file read (a profile is about 1 KiB); larger files are refused unread.
inline constexpr uint64_t kMaxProfileBytes = 1024 * 1024;

/// Parses profile text. PG3602 for malformed JSON, PG3603 for a missing field or a wrong JSON
/// type, PG3604 for a value outside its physical range (a number too large for any JSON number
/// type, like 1e400, included), each naming the field. `origin` names the text in messages.
[[nodiscard]] std::expected<DeviceCaps, diag::Diagnostics> parse_profile(std::string_view text, std::string_view origin);

/// Reads one profile file (a regular file of at most kMaxProfileBytes, checked before reading)
/// and parses it; PG5001 when the file cannot be read.
[[nodiscard]] std::expected<DeviceCaps, diag::Diagnostics> load_profile_file(const std::filesystem::path& path);

/// A NAME (looked up in profile_search_dirs()) or a PATH (contains '/' or ends in .json).
/// PG3601 for an unknown name, listing the available ones.
[[nodiscard]] std::expected<DeviceCaps, diag::Diagnostics> load_profile(std::string_view name_or_path);

/// One available profile.
struct ProfileEntry {
  std::string name;                 ///< file stem, the NAME accepted by load_profile
  std::filesystem::path path;
  DeviceCaps caps;
};

/// Every profile found, sorted by name; the first directory wins on duplicate names.
/// Profiles that fail to parse are reported in the error (all of them).
[[nodiscard]] std::expected<std::vector<ProfileEntry>, diag::Diagnostics> list_profiles();

}  // namespace ptxgate::validation
