// DeviceCaps: JSON (device-profile format) serialisation and strict parsing.
#include "ptxgate/validation/device_caps.hpp"

#include <limits>

#include <fmt/format.h>

namespace ptxgate::validation {

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

// Physically meaningful bounds of each numeric profile field. They are generous (several times
// any device shipped so far) but keep every product and sum the checks and cuda_occupancy.h form
// within 32-bit int arithmetic, so that no profile can make the occupancy model wrap.
struct FieldRange {
  uint32_t min, max;
};
constexpr uint32_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr FieldRange kCcMajor{1, 99}, kCcMinor{0, 9};
constexpr FieldRange kSmCount{1, 4096};
constexpr FieldRange kWarpSize{1, 64};
constexpr FieldRange kThreadsPerBlock{1, 4096};
constexpr FieldRange kBlockDim{1, 4096};
constexpr FieldRange kGridDim{1, 2147483647};
constexpr FieldRange kThreadsPerSm{1, 16384};
constexpr FieldRange kBlocksPerSm{1, 1024};
constexpr FieldRange kRegisters{1, 4 * kMiB};
constexpr FieldRange kRegistersPerThread{1, 1024};
constexpr FieldRange kRegisterUnit{1, 65536};
constexpr FieldRange kShared{1, 64 * kMiB};
constexpr FieldRange kReservedShared{0, 1 * kMiB};
constexpr FieldRange kSharedUnit{1, 64 * kKiB};

bool power_of_two(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Reads the fields of one profile object: a missing field or a wrong JSON type is PG3603, a
// number outside its range or inconsistent with another field PG3604, every problem reported.
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

  void u32(const char* field, uint32_t& out, FieldRange range) {
    if (auto* v = get(field)) out = checked_u32(field, *v, range);
  }

  void cc(const char* field, int& out, FieldRange range) {
    uint32_t v = 0;
    u32(field, v, range);
    out = static_cast<int>(v);
  }

  void dims(const char* field, std::array<uint32_t, 3>& out, FieldRange range) {
    auto* v = get(field);
    if (!v) return;
    if (!v->is_array() || v->size() != 3) {
      fail(field, fmt::format("must be an array of 3 positive integers, got {}", v->dump()));
      return;
    }
    for (size_t i = 0; i < 3; ++i)
      out[i] = checked_u32(fmt::format("{}[{}]", field, i), (*v)[i], range);
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
    diags_.add(diag::Code::profile_incomplete, fmt::format("device profile field '{}' {}", field, what), location(),
               "give every field of the device-profile format (see `ptxgate devices --profile h100-sxm`)");
  }

  void out_of_range(std::string_view field, std::string_view value, std::string_view what, std::string fix) {
    diags_.add(diag::Code::profile_value_out_of_range,
               fmt::format("device profile field '{}' = {} {}", field, value, what), location(), std::move(fix));
  }

  diag::Diagnostics& diags() { return diags_; }

 private:
  diag::Location location() const {
    diag::Location loc;
    loc.file = std::string(origin_);
    return loc;
  }

  uint32_t checked_u32(std::string_view field, const nlohmann::json& v, FieldRange range) {
    if (!v.is_number()) {
      fail(field, fmt::format("must be an integer in [{}, {}], got {}", range.min, range.max, v.dump()));
      return 0;
    }
    bool in_range = false;
    if (v.is_number_unsigned()) in_range = v.get<uint64_t>() >= range.min && v.get<uint64_t>() <= range.max;
    else if (v.is_number_integer()) in_range = v.get<int64_t>() >= int64_t{range.min} && v.get<int64_t>() <= int64_t{range.max};
    if (!v.is_number_integer() || !in_range) {
      out_of_range(field, v.dump(),
                   fmt::format("is outside its range: an integer in [{}, {}]", range.min, range.max),
                   fmt::format("give '{}' the device's value (see `ptxgate devices --profile h100-sxm`)", field));
      return 0;
    }
    return static_cast<uint32_t>(v.get<uint64_t>());
  }

  const nlohmann::json& j_;
  std::string_view origin_;
  diag::Diagnostics diags_;
};

// Relations between fields that every device satisfies; each violation names both fields.
void check_consistency(const DeviceCaps& c, FieldReader& r) {
  auto value = [](uint64_t v) { return fmt::format("{}", v); };
  auto relation = [&](const char* field, uint64_t v, bool ok, std::string what) {
    if (!ok) r.out_of_range(field, value(v), what, fmt::format("give '{}' the device's value", field));
  };
  relation("warp_size", c.warp_size, power_of_two(c.warp_size), "is not a power of two");
  relation("shared_allocation_unit", c.shared_allocation_unit, power_of_two(c.shared_allocation_unit),
           "is not a power of two");
  relation("register_allocation_unit", c.register_allocation_unit, power_of_two(c.register_allocation_unit),
           "is not a power of two");
  relation("shared_per_block_optin", c.shared_per_block_optin, c.shared_per_block_optin >= c.shared_per_block,
           fmt::format("is below shared_per_block ({})", c.shared_per_block));
  relation("shared_per_block_optin", c.shared_per_block_optin, c.shared_per_block_optin <= c.shared_per_sm,
           fmt::format("is above shared_per_sm ({})", c.shared_per_sm));
  relation("max_threads_per_block", c.max_threads_per_block, c.max_threads_per_block % c.warp_size == 0,
           fmt::format("is not a multiple of warp_size ({})", c.warp_size));
  relation("max_threads_per_sm", c.max_threads_per_sm, c.max_threads_per_sm % c.warp_size == 0,
           fmt::format("is not a multiple of warp_size ({})", c.warp_size));
  relation("registers_per_block", c.registers_per_block, c.registers_per_block <= c.registers_per_sm,
           fmt::format("is above registers_per_sm ({})", c.registers_per_sm));
  for (int i = 0; i < 3; ++i)
    relation(i == 0 ? "max_block_dim[0]" : i == 1 ? "max_block_dim[1]" : "max_block_dim[2]", c.max_block_dim[i],
             c.max_block_dim[i] <= c.max_threads_per_block,
             fmt::format("is above max_threads_per_block ({})", c.max_threads_per_block));
}

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
  r.cc("cc_major", c.cc_major, kCcMajor);
  r.cc("cc_minor", c.cc_minor, kCcMinor);
  r.u32("sm_count", c.sm_count, kSmCount);
  r.u32("warp_size", c.warp_size, kWarpSize);
  r.u32("max_threads_per_block", c.max_threads_per_block, kThreadsPerBlock);
  r.dims("max_block_dim", c.max_block_dim, kBlockDim);
  r.dims("max_grid_dim", c.max_grid_dim, kGridDim);
  r.u32("max_threads_per_sm", c.max_threads_per_sm, kThreadsPerSm);
  r.u32("max_blocks_per_sm", c.max_blocks_per_sm, kBlocksPerSm);
  r.u32("registers_per_block", c.registers_per_block, kRegisters);
  r.u32("registers_per_sm", c.registers_per_sm, kRegisters);
  r.u32("max_registers_per_thread", c.max_registers_per_thread, kRegistersPerThread);
  r.u32("register_allocation_unit", c.register_allocation_unit, kRegisterUnit);
  r.u32("shared_per_block", c.shared_per_block, kShared);
  r.u32("shared_per_block_optin", c.shared_per_block_optin, kShared);
  r.u32("shared_per_sm", c.shared_per_sm, kShared);
  r.u32("reserved_shared_per_block", c.reserved_shared_per_block, kReservedShared);
  r.u32("shared_allocation_unit", c.shared_allocation_unit, kSharedUnit);
  r.boolean("cooperative_launch", c.cooperative_launch);
  if (r.diags().empty()) check_consistency(c, r);
  if (!r.diags().empty()) return std::unexpected(std::move(r.diags()));
  return c;
}

}  // namespace ptxgate::validation
