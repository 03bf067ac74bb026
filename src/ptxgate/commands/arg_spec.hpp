// The one argument-spec grammar (`--arg NAME=SPEC`) of the commands `check` and `run`.
// Parsing never materialises data: a spec is checked (numbers, types, ranges) and described;
// commands/arg_data turns a parsed spec into host data when a launch needs it.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::commands {

/// Largest COUNT of random:/fill:/iota: (elements).
inline constexpr uint64_t kMaxSpecElements = uint64_t{1} << 34;

/// One parsed `--arg` spec.
///   null                 a null device pointer (buffer parameters)
///   buffer:BYTES         a device buffer of BYTES bytes (contents unspecified)
///   random:COUNT[:SEED]  COUNT elements uniform in [-1, 1) (floats), [-1000, 1000] (signed),
///                        [0, 1000] (unsigned); seed 1 by default
///   fill:COUNT:VALUE     COUNT copies of VALUE (a literal of the element type)
///   iota:COUNT           0, 1, 2, ...
///   TYPE:VALUE           a scalar of TYPE (i32 u32 i64 u64 f32 f64 bool), whatever the parameter
///   PATH.npy             a .npy file (buffer parameters)
///   LITERAL              a scalar: of the parameter's type for a scalar parameter; for a buffer
///                        parameter or none, i32 (or i64 when it does not fit) for an integer,
///                        f32 for a literal with '.', 'e' or 'E'
///   PATH                 raw little-endian elements (buffer parameters; a path that is not a
///                        number literal: write ./1 for a file named 1)
/// COUNT, BYTES and SEED follow support::parse_count (decimal digits only). Scalar literals are
/// decimal or 0x hex integers, floats (an optional f suffix for f32), true/false/1/0 for bool.
struct ArgSpec {
  enum class Kind : uint8_t { null_pointer, device_bytes, random, fill, iota, npy_file, raw_file, scalar };
  Kind kind = Kind::scalar;
  ir::Type type = ir::Type::i32;  ///< the scalar's type, or the buffer's element type
  uint64_t count = 0;             ///< elements (random, fill, iota) or bytes (device_bytes)
  uint64_t seed = 1;              ///< random
  uint64_t bits = 0;              ///< the scalar's value, or fill's VALUE, as little-endian bits
  std::string path;               ///< npy_file, raw_file

  bool is_buffer() const { return kind != Kind::scalar; }
  /// Bytes of host data the spec stands for when known without reading a file.
  std::optional<uint64_t> known_bytes() const;
};

/// "NAME=SPEC" split at the first '='; PG5002 when there is none or NAME is empty.
[[nodiscard]] std::expected<std::pair<std::string, std::string>, diag::Diagnostics> split_assignment(
    std::string_view text, std::string_view option);

/// Parses `spec` for parameter `param` (nullptr: an argument past the kernel's parameters, as
/// `check` may describe). `name` names the argument in messages. PG5002 naming the spec and
/// what was expected.
[[nodiscard]] std::expected<ArgSpec, diag::Diagnostics> parse_arg_spec(std::string_view spec,
                                                                       const contract::ParamInfo* param,
                                                                       std::string_view name);

/// `text` parsed as a literal of `type` into its little-endian bits; nullopt when it does not
/// parse or fit.
[[nodiscard]] std::optional<uint64_t> parse_value_bits(std::string_view text, ir::Type type);

/// The argument-table entry a parsed spec describes (for check_launch).
[[nodiscard]] contract::ArgumentDesc describe_argument(const ArgSpec& spec);

/// PG5002 for argument `name`'s `spec`, saying what was `expected` (the parser's and the runtime's
/// materialisation's one message).
[[nodiscard]] diag::Diagnostics argument_spec_error(std::string_view name, std::string_view spec,
                                                    std::string_view expected);

/// The buffer forms, for messages ("a buffer spec for f32 elements: random:COUNT[:SEED], ...").
[[nodiscard]] std::string buffer_spec_forms(ir::Type element);

}  // namespace ptxgate::commands
