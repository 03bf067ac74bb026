// The C API's kernel arguments and launch configurations as the backend's, shared by launches,
// checks, graph nodes and graph updates.
#pragma once

#include <cstddef>
#include <expected>

#include <boost/container/small_vector.hpp>

#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/capi/ptxgate.h"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::capi {

/// One launch's geometry and arguments, as Kernel::launch takes them.
struct Launch {
  runtime::LaunchConfig config;
  boost::container::small_vector<runtime::Arg, 16> args;
};

/// The C configuration as the backend's.
runtime::LaunchConfig launch_config(const ptxgate_launch_config& c);

/// Converts `count` C arguments for `kernel` (loaded on device `device`), after the checks only
/// the C API can make: the caller's element type and device against the parameter and the
/// runtime (PG3010, PG4008), an element count within its buffer (PG3008), a known kind and dtype
/// (PG5002). A scalar that binds to its parameter (runtime::bind_scalar: an integer that fits, a
/// real number within the float type's range) is handed over as a value of the parameter's own
/// type; one that does not is handed over as given, for the backend to explain (PG3007).
/// Fills `out` (no copy of the arguments is made on return).
[[nodiscard]] std::expected<void, diag::Diagnostics> prepare(const runtime::Kernel& kernel, int device,
                                                            const ptxgate_launch_config& config, const ptxgate_arg* args,
                                                            size_t count, Launch& out);

/// ptxgate_kernel_launch_packed's words as a configuration, a stream and the arguments' words
/// (PG5002 for a count past the largest signature or an unknown flag).
struct Unpacked {
  ptxgate_launch_config config{};
  ptxgate_stream* stream = nullptr;
  size_t count = 0;
  const uint64_t* arg_words = nullptr;  ///< `count` pairs (value, descriptor), read in place
};
[[nodiscard]] std::expected<void, diag::Diagnostics> unpack(const uint64_t* words, Unpacked& out);

/// prepare() for the packed form's arguments, converted from their words without a copy.
[[nodiscard]] std::expected<void, diag::Diagnostics> prepare_packed(const runtime::Kernel& kernel, int device,
                                                                   const Unpacked& u, Launch& out);

}  // namespace ptxgate::capi
