// Fuzz target: argument specs of `ptxgate run` and `ptxgate check` (NAME=SPEC, the one grammar of
// commands/arg_spec, scalar literals, buffer specs), .npy bytes, and the launch flags --grid, --block
// and --shared-bytes (commands/launch_flags; a first byte of 250 to 255).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ptxgate/commands/arg_data.hpp"
#include "ptxgate/commands/arg_spec.hpp"
#include "ptxgate/commands/launch_flags.hpp"
#include "ptxgate/commands/npy.hpp"

namespace {

using namespace ptxgate;

constexpr ir::Type kTypes[] = {ir::Type::error, ir::Type::void_, ir::Type::bool_, ir::Type::i32,
                               ir::Type::u32,   ir::Type::i64,   ir::Type::u64,   ir::Type::f32,
                               ir::Type::f64,   ir::Type::int_literal, ir::Type::float_literal};

/// Generated buffers are sized by COUNT (up to 2^34 elements by design); the fuzzer keeps
/// them small so that a run measures parsing, not memset. Paths are never opened.
constexpr uint64_t kMaxFuzzCount = 1u << 16;

bool generated_and_small(std::string_view spec) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return false;
  auto kind = spec.substr(0, colon);
  if (kind != "random" && kind != "fill" && kind != "iota") return false;
  auto rest = spec.substr(colon + 1);
  auto count = rest.substr(0, rest.find(':'));
  uint64_t n = 0;
  int base = 10;
  if (count.starts_with("0x") || count.starts_with("0X")) {
    count.remove_prefix(2);
    base = 16;
  }
  for (char c : count) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
    if (digit >= base) return true;  // malformed: the parser must reject it, cheap either way
    n = n * base + digit;
    if (n > kMaxFuzzCount) return false;
  }
  return true;
}

void check_array(const commands::HostArray& a) {
  const size_t element = ir::byte_size(a.type);
  if (a.bytes.size() % element != 0 || a.bytes.size() / element != a.count) __builtin_trap();
  for (size_t i = 0; i < a.count && i < 4; ++i) (void)a.format_element(i);
}

void fuzz_npy(std::span<const std::byte> bytes) {
  auto parsed = commands::parse_npy(bytes, "fuzz.npy");
  if (!parsed) {
    if (parsed.error().empty()) __builtin_trap();
    return;
  }
  check_array(*parsed);
  // What parses must encode and parse back to the same elements.
  auto encoded = commands::encode_npy(*parsed);
  if (!encoded) __builtin_trap();
  auto again = commands::parse_npy(*encoded, "again.npy");
  if (!again || again->type != parsed->type || again->count != parsed->count || again->bytes != parsed->bytes)
    __builtin_trap();
}

/// The grammar alone, for a buffer, a scalar or no parameter: never materialises, never opens a
/// path; what parses has a consistent description.
void fuzz_grammar(std::string_view text, ir::Type type, unsigned shape) {
  contract::ParamInfo p;
  p.name = "x";
  p.type = type;
  p.is_buffer = shape == 1;
  auto parsed = commands::parse_arg_spec(text, shape == 2 ? nullptr : &p, "x");
  if (!parsed) {
    if (parsed.error().empty()) __builtin_trap();
    return;
  }
  using K = commands::ArgSpec::Kind;
  if ((parsed->kind == K::random || parsed->kind == K::fill || parsed->kind == K::iota) &&
      (parsed->count == 0 || parsed->count > commands::kMaxSpecElements || !p.is_buffer || shape == 2))
    __builtin_trap();
  if ((parsed->kind == K::npy_file || parsed->kind == K::raw_file) && (parsed->path != text || !p.is_buffer || shape == 2))
    __builtin_trap();
  auto desc = commands::describe_argument(*parsed);
  if ((desc.kind == contract::ArgumentDesc::Kind::scalar) != (parsed->kind == K::scalar)) __builtin_trap();
  if (parsed->kind == K::scalar) {
    if (desc.size_bytes != ir::byte_size(parsed->type)) __builtin_trap();
    (void)commands::scalar_arg(*parsed).describe();
  }
}

}  // namespace

/// `text` as "GRID\nBLOCK\nSHARED": what parses is what was written; each bad flag is one PG5004.
void fuzz_launch_flags(std::string_view text) {
  std::string_view fields[3];
  for (auto& field : fields) {
    const size_t nl = text.find('\n');
    field = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  const auto [grid, block, shared] = fields;
  auto parsed = commands::parse_launch_flags(grid, block, shared);
  if (!parsed) {
    const auto& items = parsed.error().items();
    if (items.empty() || items.size() > 3) __builtin_trap();
    for (const auto& d : items)
      if (d.code != diag::Code::invalid_launch_option || d.fix.empty()) __builtin_trap();
    return;
  }
  if (parsed->grid_max != (grid == "max") || parsed->grid.has_value() != (!grid.empty() && grid != "max") ||
      parsed->block.has_value() != !block.empty() || shared.empty())
    __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  if (data[0] >= 250) {  // above the modes below, so the saved inputs keep their meaning
    fuzz_launch_flags(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
    return 0;
  }
  const unsigned mode = data[0] % 5;
  const ir::Type type = kTypes[data[1] % std::size(kTypes)];
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  switch (mode) {
    case 0: {
      auto split = commands::split_assignment(text, "--arg");
      if (split && (split->first.empty() || split->first.size() + split->second.size() + 1 != text.size()))
        __builtin_trap();
      if (!split && split.error().empty()) __builtin_trap();
      break;
    }
    case 1: {
      auto scalar = commands::parse_scalar(text, type, "x");
      if (scalar) {
        if (scalar->kind() != runtime::Arg::Kind::scalar) __builtin_trap();
        (void)scalar->describe();
      } else if (scalar.error().empty()) {
        __builtin_trap();
      }
      break;
    }
    case 2: {
      if (!generated_and_small(text)) break;
      auto buffer = commands::make_buffer_data(text, type, "x");
      if (buffer) {
        if (buffer->type != type || buffer->count == 0) __builtin_trap();
        check_array(*buffer);
      } else if (buffer.error().empty()) {
        __builtin_trap();
      }
      break;
    }
    case 4: fuzz_grammar(text, type, (data[0] / 5) % 3); break;
    default: fuzz_npy(std::as_bytes(std::span(text.data(), text.size()))); break;
  }
  return 0;
}
