// Checked mode's contract: the site table to and from JSON, and the violation record's bytes.
#include "ptxgate/contract/checked.hpp"

#include <algorithm>
#include <cstring>

#include "ptxgate/diagnostics/internal/json_checks.hpp"

namespace ptxgate::contract {

const CheckedSite* CheckedInfo::find(uint32_t id) const {
  auto it = std::lower_bound(sites.begin(), sites.end(), id, [](const CheckedSite& s, uint32_t v) { return s.id < v; });
  return it != sites.end() && it->id == id ? &*it : nullptr;
}

size_t CheckedInfo::guarded() const {
  return static_cast<size_t>(std::count_if(sites.begin(), sites.end(), [](const CheckedSite& s) { return s.guarded; }));
}

nlohmann::json to_json(const CheckedInfo& info) {
  nlohmann::json sites = nlohmann::json::array();
  for (const CheckedSite& s : info.sites) {
    nlohmann::json j = ir::to_json(s.access);
    j["id"] = s.id;
    j["guarded"] = s.guarded;
    sites.push_back(std::move(j));
  }
  return {{"sites", std::move(sites)}};
}

std::expected<CheckedInfo, std::string> checked_info_from_json(const nlohmann::json& j) {
  try {
    CheckedInfo info;
    for (const auto& js : j.at("sites")) {
      auto access = ir::source_access_from_json(js);
      if (!access) return std::unexpected(access.error());
      CheckedSite s;
      s.id = diag::json_integer<uint32_t>(js.at("id"));
      s.guarded = js.at("guarded").get<bool>();
      s.access = std::move(*access);
      if (!info.sites.empty() && s.id <= info.sites.back().id)
        return std::unexpected("checked sites must be listed once each, by increasing id");
      info.sites.push_back(std::move(s));
    }
    return info;
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(std::string("invalid checked-mode sites: ") + e.what());
  }
}

namespace {

template <class T>
T read_at(std::span<const std::byte, CheckedRecord::kBytes> bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

template <class T>
void write_at(std::array<std::byte, CheckedRecord::kBytes>& bytes, size_t offset, T v) {
  std::memcpy(bytes.data() + offset, &v, sizeof v);
}

}  // namespace

// The device and every supported host are little-endian: the bytes are read as they are.
CheckedRecord CheckedRecord::decode(std::span<const std::byte, kBytes> bytes) {
  CheckedRecord r;
  r.count = read_at<uint64_t>(bytes, kCount);
  r.site = read_at<uint32_t>(bytes, kSite);
  r.reason = read_at<uint32_t>(bytes, kReason);
  for (size_t c = 0; c < 3; ++c) {
    r.thread[c] = read_at<uint32_t>(bytes, kThread + 4 * c);
    r.block[c] = read_at<uint32_t>(bytes, kBlock + 4 * c);
  }
  r.value = read_at<uint64_t>(bytes, kValue);
  r.limit = read_at<uint64_t>(bytes, kLimit);
  return r;
}

std::array<std::byte, CheckedRecord::kBytes> CheckedRecord::encode() const {
  std::array<std::byte, kBytes> bytes{};
  write_at(bytes, kCount, count);
  write_at(bytes, kSite, site);
  write_at(bytes, kReason, reason);
  for (size_t c = 0; c < 3; ++c) {
    write_at(bytes, kThread + 4 * c, thread[c]);
    write_at(bytes, kBlock + 4 * c, block[c]);
  }
  write_at(bytes, kValue, value);
  write_at(bytes, kLimit, limit);
  return bytes;
}

}  // namespace ptxgate::contract
