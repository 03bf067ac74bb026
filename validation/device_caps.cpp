// DeviceCaps: JSON (device-profile format) serialisation and strict parsing.
#include "ptxgate/validation/device_caps.hpp"

#include <limits>

#include <fmt/format.h>

namespace ptxgate::validation {

std::string DeviceCaps::arch() const { return fmt::format("sm_{}{}", cc_major, cc_minor); }

nlohmann::json to_json(const DeviceCaps& c) {
  nlohmann::json j;
  if (!c.profile.empty()) j["profile"] = c.profile;
  j["name"] = c.name;
  j["cc_major"] = c.cc_major;
  j["cc_minor"] = c.cc_minor;
  j["sm_count"] = c.sm_count;
  j["warp_size"] = c.warp_size;
  j["max_threads_per_block"] = c.max_threads_per_block;
  j["max_block_dim"] = c.max_block_dim;
  j["max_grid_dim"] = c.max_grid_dim;
  j["max_threads_per_sm"] = c.max_threads_per_sm;
  j["max_blocks_per_sm"] = c.max_blocks_per_sm;
  j["registers_per_block"] = c.registers_per_block;
  j["registers_per_sm"] = c.registers_per_sm;
  j["max_registers_per_thread"] = c.max_registers_per_thread;
  j["register_allocation_unit"] = c.register_allocation_unit;
  j["shared_per_block"] = c.shared_per_block;
  j["shared_per_block_optin"] = c.shared_per_block_optin;
  j["shared_per_sm"] = c.shared_per_sm;
  j["reserved_shared_per_block"] = c.reserved_shared_per_block;
  j["shared_allocation_unit"] = c.shared_allocation_unit;
  j["cooperative_launch"] = c.cooperative_launch;
  return j;
}

namespace {

// Reads the fields of one profile object, collecting every problem as PG3603.
class FieldReader {
 public:
  FieldReader(const nlohmann::json& j, std::string_view origin) : j_(j), origin_(origin) {}

  const nlohmann::json* get(const char* field) {
    auto it = j_.find(field);
    if (it == j_.end()) {
      fail(field, "is missing");
      return nullptr;
    }
    return &*it;
  }

  void u32(const char* field, uint32_t& out, uint32_t min_value = 1) {
    if (auto* v = get(field)) out = checked_u32(field, *v, min_value);
  }

  void cc(const char* field, int& out, int min_value) {
    uint32_t v = 0;
    u32(field, v, static_cast<uint32_t>(min_value));
    out = static_cast<int>(v);
  }

  void dims(const char* field, std::array<uint32_t, 3>& out) {
    auto* v = get(field);
    if (!v) return;
    if (!v->is_array() || v->size() != 3) {
      fail(field, fmt::format("must be an array of 3 positive integers, got {}", v->dump()));
      return;
    }
    for (size_t i = 0; i < 3; ++i) out[i] = checked_u32(field, (*v)[i], 1);
  }

  void boolean(const char* field, bool& out) {
    auto* v = get(field);
    if (!v) return;
    if (!v->is_boolean()) {
      fail(field, fmt::format("must be true or false, got {}", v->dump()));
      return;
    }
    out = v->get<bool>();
  }

  void string(const char* field, std::string& out) {
    auto* v = get(field);
    if (!v) return;
    if (!v->is_string() || v->get_ref<const std::string&>().empty()) {
      fail(field, fmt::format("must be a non-empty string, got {}", v->dump()));
      return;
    }
    out = v->get<std::string>();
  }

  void fail(std::string_view field, std::string_view what) {
    diag::Location loc;
    loc.file = std::string(origin_);
    diags_.add(diag::Code::profile_incomplete, fmt::format("device profile field '{}' {}", field, what), loc,
               "give every field of the device-profile format (see `ptxgate devices --profile h100-sxm`)");
  }

  diag::Diagnostics& diags() { return diags_; }

 private:
  uint32_t checked_u32(const char* field, const nlohmann::json& v, uint32_t min_value) {
    if (!v.is_number_integer() || v.get<int64_t>() < static_cast<int64_t>(min_value) ||
        v.get<int64_t>() > std::numeric_limits<uint32_t>::max()) {
      fail(field, fmt::format("must be an integer in [{}, {}], got {}", min_value,
                              std::numeric_limits<uint32_t>::max(), v.dump()));
      return 0;
    }
    return static_cast<uint32_t>(v.get<int64_t>());
  }

  const nlohmann::json& j_;
  std::string_view origin_;
  diag::Diagnostics diags_;
};

}  // namespace

std::expected<DeviceCaps, diag::Diagnostics> caps_from_json(const nlohmann::json& j, std::string_view origin) {
  FieldReader r(j, origin);
  if (!j.is_object()) {
    r.fail("(top level)", fmt::format("must be a JSON object, got {}", j.type_name()));
    return std::unexpected(std::move(r.diags()));
  }
  DeviceCaps c;
  if (j.contains("profile")) r.string("profile", c.profile);
  r.string("name", c.name);
  r.cc("cc_major", c.cc_major, 1);
  r.cc("cc_minor", c.cc_minor, 0);
  r.u32("sm_count", c.sm_count);
  r.u32("warp_size", c.warp_size);
  r.u32("max_threads_per_block", c.max_threads_per_block);
  r.dims("max_block_dim", c.max_block_dim);
  r.dims("max_grid_dim", c.max_grid_dim);
  r.u32("max_threads_per_sm", c.max_threads_per_sm);
  r.u32("max_blocks_per_sm", c.max_blocks_per_sm);
  r.u32("registers_per_block", c.registers_per_block);
  r.u32("registers_per_sm", c.registers_per_sm);
  r.u32("max_registers_per_thread", c.max_registers_per_thread);
  r.u32("register_allocation_unit", c.register_allocation_unit);
  r.u32("shared_per_block", c.shared_per_block);
  r.u32("shared_per_block_optin", c.shared_per_block_optin);
  r.u32("shared_per_sm", c.shared_per_sm);
  r.u32("reserved_shared_per_block", c.reserved_shared_per_block, 0);
  r.u32("shared_allocation_unit", c.shared_allocation_unit);
  r.boolean("cooperative_launch", c.cooperative_launch);
  if (r.diags().empty()) {
    if (c.shared_per_block_optin < c.shared_per_block)
      r.fail("shared_per_block_optin",
             fmt::format("({}) is below shared_per_block ({})", c.shared_per_block_optin, c.shared_per_block));
    if (c.max_threads_per_block % c.warp_size != 0)
      r.fail("max_threads_per_block",
             fmt::format("({}) is not a multiple of warp_size ({})", c.max_threads_per_block, c.warp_size));
  }
  if (!r.diags().empty()) return std::unexpected(std::move(r.diags()));
  return c;
}

}  // namespace ptxgate::validation
