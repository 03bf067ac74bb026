// check_launch: every launch check (arguments, geometry, shared memory, registers, cooperative, warnings).
#include "ptxgate/validation/check.hpp"

#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "ptxgate/ir/block_granule.hpp"
#include "ptxgate/validation/internal/race_memo.hpp"
#include "ptxgate/support/thread_object.hpp"

namespace ptxgate::validation {
namespace {

using diag::Code;

std::string dims(const std::array<uint64_t, 3>& d) { return fmt::format("{}x{}x{}", d[0], d[1], d[2]); }
std::string dims(const std::array<uint32_t, 3>& d) { return fmt::format("{}x{}x{}", d[0], d[1], d[2]); }

bool mul_overflows(const std::array<uint64_t, 3>& d, uint64_t& product) {
  uint64_t p = 1;
  for (uint64_t v : d)
    if (__builtin_mul_overflow(p, v, &p)) return true;
  product = p;
  return false;
}

constexpr const char* kAxis[3] = {"x", "y", "z"};

// Collects diagnostics at one location; the Diagnostics vector is touched only on a problem.
struct Reporter {
  diag::Diagnostics& out;
  const diag::Location& location;
  void add(Code code, std::string message, std::string fix) { out.add(code, std::move(message), location, std::move(fix)); }
};

std::string_view kind_name(contract::ArgumentDesc::Kind k) {
  return k == contract::ArgumentDesc::Kind::buffer ? "buffer" : k == contract::ArgumentDesc::Kind::tensor_map ? "tensor map" : "scalar";
}

/// The kind of argument parameter `p` takes.
contract::ArgumentDesc::Kind expected_kind(const contract::ParamInfo& p) {
  return p.is_buffer                      ? contract::ArgumentDesc::Kind::buffer
         : p.type == ir::Type::tensor_map ? contract::ArgumentDesc::Kind::tensor_map
                                          : contract::ArgumentDesc::Kind::scalar;
}

/// Whether every argument of `args` (one per parameter of `kernel`) passes check_arguments'
/// per-argument checks: the common case, decided without a branch per argument (a new launch
/// shape checks every argument); the reporting loop then only runs for a launch with a problem.
bool arguments_clean(const contract::KernelInfo& kernel, const std::vector<contract::ArgumentDesc>& args) {
  bool bad = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const contract::ArgumentDesc& a = args[i];
    const contract::ParamInfo& p = kernel.params[i];
    const auto kind = expected_kind(p);
    bad |= a.slot_is_null | (a.kind != kind);
    if (p.is_buffer)
      bad |= a.pointer_is_null | (p.alignment > 1 && a.address.value_or(0) % p.alignment != 0);
    else
      bad |= kind == contract::ArgumentDesc::Kind::scalar && a.size_bytes != p.size_bytes;
  }
  return !bad;
}

void check_arguments(const contract::KernelInfo& kernel, const contract::LaunchPlan& plan, Reporter& r) {
  if (plan.function_is_null)
    r.add(Code::null_function, fmt::format("function handle for kernel '{}' is null", kernel.name),
          "load the module and resolve the function before launching it");
  if (plan.stream_is_null && plan.stream_policy == contract::StreamPolicy::require_explicit)
    r.add(Code::null_stream, "launch on the null (legacy default) stream, which the stream policy forbids",
          "pass a stream created by the runtime, or allow the legacy default stream in the policy");
  if (!plan.arguments_known) return;
  const auto& args = plan.arguments;
  if (args.empty() && !kernel.params.empty()) {
    r.add(Code::empty_argument_table,
          fmt::format("argument table is empty; kernel '{}' takes {} parameter{}", kernel.name, kernel.params.size(),
                      kernel.params.size() == 1 ? "" : "s"),
          "pass one argument per kernel parameter, in signature order");
    return;
  }
  if (args.size() == kernel.params.size() && plan.required_elements.empty() && arguments_clean(kernel, args)) return;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].slot_is_null)
      r.add(Code::null_argument_slot, fmt::format("argument slot {} is a null pointer", i),
            "every slot of the argument table must point at the argument's value");
  if (args.size() != kernel.params.size())
    r.add(Code::argument_count_mismatch,
          fmt::format("{} argument{} given; kernel '{}' takes {}", args.size(), args.size() == 1 ? "" : "s",
                      kernel.name, kernel.params.size()),
          "pass exactly one argument per kernel parameter");
  size_t n = std::min(args.size(), kernel.params.size());
  for (size_t i = 0; i < n; ++i) {
    const auto& a = args[i];
    const auto& p = kernel.params[i];
    const auto expected = expected_kind(p);
    if (a.kind != expected &&
        (a.kind == contract::ArgumentDesc::Kind::tensor_map || expected == contract::ArgumentDesc::Kind::tensor_map)) {
      r.add(Code::tensor_map_argument_mismatch,
            fmt::format("argument {} is a {} but parameter '{}' is a {}", i, kind_name(a.kind), p.name,
                        kind_name(expected)),
            expected == contract::ArgumentDesc::Kind::tensor_map
                ? fmt::format("pass a tensor map encoded over the tensor's buffer (runtime::encode_tensor_map) for "
                              "'{}'; its checks (PG3701-PG3711) run before the driver encodes it",
                              p.name)
                : fmt::format("pass a {} for parameter '{}'; tensor maps bind to `tensor_map` parameters only",
                              kind_name(expected), p.name));
      continue;
    }
    if (a.kind != expected) {
      r.add(Code::argument_kind_mismatch,
            fmt::format("argument {} is a {} but parameter '{}' is a {}", i, kind_name(a.kind), p.name,
                        kind_name(expected)),
            fmt::format("pass a {} for parameter '{}'", kind_name(expected), p.name));
      continue;
    }
    if (!p.is_buffer && expected != contract::ArgumentDesc::Kind::tensor_map && a.size_bytes != p.size_bytes)
      r.add(Code::argument_size_mismatch,
            fmt::format("argument {} is {} bytes wide but parameter '{}' ({}) is {} bytes", i, a.size_bytes, p.name,
                        ir::type_name(p.type), p.size_bytes),
            fmt::format("pass a {} value for parameter '{}'", ir::type_name(p.type), p.name));
    if (p.is_buffer && a.pointer_is_null && !a.slot_is_null)
      r.add(Code::null_buffer, fmt::format("argument {} (buffer '{}') is a null device pointer", i, p.name),
            fmt::format("allocate a device buffer for '{}'", p.name));
    else if (p.is_buffer && p.alignment > 1 && a.address && *a.address % p.alignment != 0)
      report_misaligned_buffer(r.out, kernel, i, *a.address, r.location);
  }
  for (auto [index, elements] : plan.required_elements) {
    if (index >= n || !kernel.params[index].is_buffer || args[index].kind != contract::ArgumentDesc::Kind::buffer) continue;
    const auto& a = args[index];
    if (!a.buffer_bytes) continue;
    unsigned elem = ir::byte_size(kernel.params[index].type);
    unsigned __int128 needed = static_cast<unsigned __int128>(elements) * elem;
    if (needed > *a.buffer_bytes)
      r.add(Code::buffer_too_small,
            fmt::format("buffer '{}' (argument {}) holds {} bytes but the launch touches {} elements of {} = {} bytes",
                        kernel.params[index].name, index, *a.buffer_bytes, elements,
                        ir::type_name(kernel.params[index].type), static_cast<uint64_t>(std::min<unsigned __int128>(needed, UINT64_MAX))),
            fmt::format("allocate at least {} elements for '{}', or launch over fewer elements", elements,
                        kernel.params[index].name));
  }
}

/// What the checks learn about a launch and hand on to the later ones.
struct Facts {
  bool block_given = false;       ///< the plan names a block (or says explicitly that it does)
  uint64_t threads = 0, blocks = 0;
  bool threads_known = false, blocks_known = false;
  bool geometry_ok = true;        ///< every geometry check passed
  bool resources_ok = true;       ///< shared memory and registers fit
  bool threads_fit = false;       ///< 1 <= threads <= the device's per-block limit
  std::array<uint64_t, 3> block{0, 0, 0};  ///< the effective block
  size_t opt_in_note_at = SIZE_MAX;  ///< where the PG3202 note goes when it was not formatted
};

// PG3107: a kernel with a cluster shape runs its grid as whole clusters (the driver refuses a grid
// that is not a multiple of the shape on every axis); one whose cluster is chosen at launch
// (.explicitcluster without a shape) cannot be launched by ptxgate's launches, which pass none.
void check_clusters(const contract::KernelInfo& kernel, const std::array<uint64_t, 3>& grid, Reporter& r, Facts& f) {
  const auto& c = kernel.cluster_dims;
  if (kernel.has_cluster_dims()) {
    std::string axes;
    for (int i = 0; i < 3; ++i)
      if (c[i] != 0 && grid[i] % c[i] != 0)
        axes += fmt::format("{}grid.{} = {} is not a multiple of {}", axes.empty() ? "" : ", ", kAxis[i], grid[i],
                            c[i]);
    if (axes.empty()) return;
    std::array<uint64_t, 3> fitting{};
    for (int i = 0; i < 3; ++i) fitting[i] = (grid[i] + c[i] - 1) / c[i] * c[i];
    r.add(Code::cluster_shape_mismatch,
          fmt::format("grid {} is not a whole number of the {} thread block clusters kernel '{}' runs in ({}): "
                      "the driver refuses it",
                      dims(grid), dims(c), kernel.name, axes),
          fmt::format("launch a grid that is a multiple of {} on every axis, e.g. --grid {},{},{}", dims(c), fitting[0],
                      fitting[1], fitting[2]));
    f.geometry_ok = false;
  } else if (kernel.explicit_cluster) {
    r.add(Code::cluster_shape_mismatch,
          fmt::format("kernel '{}' is declared .explicitcluster without a cluster shape: its clusters are given at "
                      "launch, and ptxgate's launches give none yet",
                      kernel.name),
          "give the kernel a cluster shape (.reqnctapercluster X, Y, Z; __cluster_dims__(X, Y, Z) in CUDA C++)");
    f.geometry_ok = false;
  }
}

// The grid's parts of the geometry checks (check_geometry runs them in its order; check_new_grid
// runs them alone). PG3101: a zero grid dimension.
void check_grid_zero(const std::array<uint64_t, 3>& grid, Reporter& r, Facts& f) {
  if (grid[0] != 0 && grid[1] != 0 && grid[2] != 0) [[likely]]
    return;
  r.add(Code::zero_dimension, fmt::format("grid {} has a zero dimension", dims(grid)),
        "every grid dimension must be at least 1");
  f.geometry_ok = false;
}

// The grid's block count (PG3106 when it overflows).
void check_grid_blocks(const std::array<uint64_t, 3>& grid, const DeviceCaps& caps, Reporter& r, Facts& f) {
  f.blocks_known = !mul_overflows(grid, f.blocks);
  if (f.blocks_known) [[likely]]
    return;
  r.add(Code::geometry_overflow, fmt::format("grid {} has more blocks than 2^64", dims(grid)),
        fmt::format("keep each grid dimension within the device limit {}", dims(caps.max_grid_dim)));
  f.geometry_ok = false;
}

// PG3104: each grid dimension against the device's.
void check_grid_dims(const std::array<uint64_t, 3>& grid, const DeviceCaps& caps, Reporter& r, Facts& f) {
  for (int i = 0; i < 3; ++i) {
    if (grid[i] > caps.max_grid_dim[i]) {
      r.add(Code::grid_dim_exceeded,
            fmt::format("grid.{} = {} exceeds the device limit {} (max grid {})", kAxis[i], grid[i],
                        caps.max_grid_dim[i], dims(caps.max_grid_dim)),
            fmt::format("make grid.{} at most {}, or move work to another axis", kAxis[i], caps.max_grid_dim[i]));
      f.geometry_ok = false;
    }
  }
}

// PG3101-PG3107, PG3302: block and grid dimensions against the device and the kernel.
void check_geometry(const contract::KernelInfo& kernel, const contract::KernelResources& res, const contract::LaunchPlan& plan,
                    const DeviceCaps& caps, Reporter& r, Facts& f, Verdict& v) {
  f.block_given = block_given(plan);
  v.block = effective_block(kernel, plan);
  f.block = v.block;
  if (v.block[0] == 0 || v.block[1] == 0 || v.block[2] == 0) {
    r.add(Code::zero_dimension, fmt::format("block {} has a zero dimension", dims(v.block)),
          "every block dimension must be at least 1");
    f.geometry_ok = false;
  }
  check_grid_zero(plan.grid, r, f);
  f.threads_known = !mul_overflows(v.block, f.threads);
  if (!f.threads_known)
    r.add(Code::geometry_overflow, fmt::format("block {} has more threads than 2^64", dims(v.block)),
          fmt::format("use a block of at most {} threads", caps.max_threads_per_block));
  check_grid_blocks(plan.grid, caps, r, f);
  f.geometry_ok = f.geometry_ok && f.threads_known;
  if (f.threads_known && f.threads > caps.max_threads_per_block) {
    r.add(Code::threads_per_block_exceeded,
          fmt::format("block {} has {} threads; {} allows at most {} per block", dims(v.block), f.threads, caps.name,
                      caps.max_threads_per_block),
          fmt::format("use at most {} threads per block and more blocks", caps.max_threads_per_block));
    f.geometry_ok = false;
  }
  for (int i = 0; i < 3; ++i) {
    if (v.block[i] > caps.max_block_dim[i]) {
      r.add(Code::block_dim_exceeded,
            fmt::format("block.{} = {} exceeds the device limit {} (max block {})", kAxis[i], v.block[i],
                        caps.max_block_dim[i], dims(caps.max_block_dim)),
            fmt::format("make block.{} at most {}", kAxis[i], caps.max_block_dim[i]));
      f.geometry_ok = false;
    }
  }
  check_grid_dims(plan.grid, caps, r, f);
  if (f.block_given && kernel.has_required_block() &&
      (plan.block[0] != kernel.required_block[0] || plan.block[1] != kernel.required_block[1] ||
       plan.block[2] != kernel.required_block[2])) {
    r.add(Code::workgroup_mismatch,
          fmt::format("block {} differs from kernel '{}' {} {}", dims(plan.block), kernel.name,
                      kernel.foreign ? ".reqntid" : "@workgroup", dims(kernel.required_block)),
          fmt::format("launch with block {} (or omit the block size)", dims(kernel.required_block)));
    f.geometry_ok = false;
  }
  check_clusters(kernel, plan.grid, r, f);
  f.threads_fit = f.threads_known && f.threads >= 1 && f.threads <= caps.max_threads_per_block;
  if (f.threads_fit && f.threads > res.max_threads_per_block) {
    r.add(Code::threads_exceed_kernel_max,
          fmt::format("block of {} threads exceeds kernel '{}' maximum of {} threads per block", f.threads, kernel.name,
                      res.max_threads_per_block),
          fmt::format("use at most {} threads per block", res.max_threads_per_block));
    f.geometry_ok = false;
  }
}

// PG3201, PG3202: static + dynamic shared memory against the default and opt-in limits.
void check_shared_memory(const contract::KernelResources& res, const contract::LaunchPlan& plan, const DeviceCaps& caps, Reporter& r,
                         Facts& f, Verdict& v, bool report_warnings) {
  uint64_t total_shared = 0;
  if (__builtin_add_overflow(res.static_shared_bytes, plan.dynamic_shared_bytes, &total_shared))
    total_shared = UINT64_MAX;
  v.total_shared_bytes = total_shared;
  if (total_shared > caps.shared_per_block_optin) {
    r.add(Code::shared_memory_exceeded,
          fmt::format("shared memory {} bytes (static {} + dynamic {}) exceeds the opt-in maximum of {} bytes per block",
                      total_shared, res.static_shared_bytes, plan.dynamic_shared_bytes, caps.shared_per_block_optin),
          res.static_shared_bytes <= caps.shared_per_block_optin
              ? fmt::format("request at most {} bytes of dynamic shared memory",
                            caps.shared_per_block_optin - res.static_shared_bytes)
              : fmt::format("shrink the kernel's shared arrays to at most {} bytes", caps.shared_per_block_optin));
    f.resources_ok = false;
  } else if (total_shared > caps.shared_per_block) {
    v.needs_shared_opt_in = true;
    if (!report_warnings) f.opt_in_note_at = v.diagnostics.size();
    else
      r.add(Code::shared_memory_opt_in,
            fmt::format("shared memory {} bytes exceeds the default {} bytes per block; the backend opts in (limit {})",
                        total_shared, caps.shared_per_block, caps.shared_per_block_optin),
            {});
  }
}

// PG1319, PG1320, PG1358: what the kernel's language features need of the launch (docs/ir.md): a
// dynamic shared array needs dynamic shared bytes, a whole number of its elements; a block is a
// whole number of the kernel's granule (whole warps, whole warpgroups: ir::check_block_granule).
void check_language_needs(const contract::KernelInfo& kernel, const contract::LaunchPlan& plan, Reporter& r, const Facts& f) {
  if (const uint64_t element = kernel.dynamic_shared_element_bytes; element > 0) {
    if (plan.dynamic_shared_bytes == 0)
      r.add(Code::invalid_dynamic_shared,
            fmt::format("kernel '{}' declares a dynamic shared array of {}-byte elements, but the launch gives it 0 "
                        "bytes of dynamic shared memory (every access would be out of bounds)",
                        kernel.name, element),
            fmt::format("pass the array's size in bytes as the dynamic shared memory, e.g. {} for 256 elements",
                        256 * element));
    else if (plan.dynamic_shared_bytes % element != 0)
      r.add(Code::invalid_dynamic_shared,
            fmt::format("dynamic shared memory of {} bytes is not a whole number of the {}-byte elements of kernel "
                        "'{}''s dynamic shared array",
                        plan.dynamic_shared_bytes, element, kernel.name),
            fmt::format("give a multiple of {} bytes (elements x {}), e.g. {}", element, element,
                        (plan.dynamic_shared_bytes / element + 1) * element));
  }
  // The block's description is formatted only for a block that breaks the granule: a launch
  // validates a new shape in well under a microsecond without the memory-safety evaluation.
  if (!f.threads_known || ir::keeps_block_granule(kernel.block_granule, f.threads)) return;
  auto violation = ir::check_block_granule(kernel.name, kernel.block_granule, f.threads,
                                           fmt::format("the block {}", dims(f.block)));
  if (violation)
    r.add(violation->code, std::move(violation->message),
          fmt::format("launch with a block of a multiple of {} threads, e.g. --block {}", kernel.block_granule,
                      violation->suggested_threads));
}

// PG3301: registers per thread and registers charged per block.
void check_registers(const contract::KernelInfo& kernel, const contract::KernelResources& res, const DeviceCaps& caps,
                     Reporter& r, Facts& f) {
  if (res.registers_per_thread > caps.max_registers_per_thread) {
    r.add(Code::registers_exceeded,
          fmt::format("kernel '{}' uses {} registers per thread; the device allows {}", kernel.name,
                      res.registers_per_thread, caps.max_registers_per_thread),
          "reduce register pressure (smaller unrolling, fewer live values)");
    f.resources_ok = false;
    return;
  }
  if (!f.threads_fit) return;
  uint64_t charged = registers_charged_per_block(caps, res.registers_per_thread, f.threads);
  if (charged <= caps.registers_per_block) return;
  uint64_t per_warp_block = registers_charged_per_block(caps, res.registers_per_thread, 1) / kSmSubPartitions;
  uint64_t max_warps =
      per_warp_block ? caps.registers_per_block / per_warp_block / kSmSubPartitions * kSmSubPartitions : 0;
  r.add(Code::registers_exceeded,
        fmt::format("block of {} threads at {} registers/thread needs {} registers (allocated per warp in units "
                    "of {}); the device allows {} per block",
                    f.threads, res.registers_per_thread, charged, caps.register_allocation_unit,
                    caps.registers_per_block),
        fmt::format("use at most {} threads per block, or reduce register use", max_warps * caps.warp_size));
  f.resources_ok = false;
}

// PG3401, PG3402: whether the launch may (or must) be cooperative.
void check_cooperative_mode(const contract::KernelInfo& kernel, const contract::LaunchPlan& plan, const DeviceCaps& caps,
                            Reporter& r) {
  if (plan.cooperative && !caps.cooperative_launch)
    r.add(Code::cooperative_unsupported, fmt::format("{} does not support cooperative launch", caps.name),
          "run on a device with cooperative-launch support, or launch without --cooperative");
  if (kernel.uses_grid_sync && !plan.cooperative)
    r.add(Code::grid_sync_needs_cooperative,
          fmt::format("kernel '{}' uses grid_sync but the launch is not cooperative (it can deadlock)", kernel.name),
          "launch cooperatively (--cooperative)");
}

// PG3403: a cooperative grid of `blocks` against resident capacity (check_residency's last step,
// check_new_grid's for a cooperative launch).
void check_cooperative_grid(uint64_t blocks, const Occupancy& occ, uint64_t max_cooperative_grid,
                            const DeviceCaps& caps, Reporter& r) {
  if (blocks > max_cooperative_grid)
    r.add(Code::cooperative_grid_too_large,
          fmt::format("cooperative grid of {} blocks exceeds resident capacity {} = {} blocks/SM x {} SMs "
                      "(limited by {})",
                      blocks, max_cooperative_grid, occ.active_blocks_per_sm, caps.sm_count, limiter_name(occ.limiter)),
          fmt::format("launch at most {} blocks (--grid {}), each doing more work", max_cooperative_grid,
                      max_cooperative_grid));
}

// PG3403-PG3405: occupancy (asked only of a launch whose geometry and resources fit) and the
// cooperative grid against resident capacity; unknown occupancy blocks a cooperative launch.
void check_residency(const contract::KernelResources& res, const contract::LaunchPlan& plan, const DeviceCaps& caps, Reporter& r,
                     const Facts& f, Verdict& v, OccupancyProvider provider) {
  if (!f.geometry_ok || !f.resources_ok || !f.threads_fit) return;
  // The provider's answer holds the offline model's factors: the model runs only without one.
  std::optional<Occupancy> given;
  if (provider) given = provider(f.threads, plan.dynamic_shared_bytes);
  const Occupancy& occ = v.occupancy.emplace(
      given ? *given : compute_occupancy(caps, res, static_cast<uint32_t>(f.threads), plan.dynamic_shared_bytes));
  const bool residency_matters = plan.cooperative && caps.cooperative_launch;
  if (!occ.computed && !given) {
    // Fail closed: a cooperative grid is legal only when residency is known.
    if (residency_matters)
      r.add(Code::occupancy_unknown,
            fmt::format("cannot compute how many blocks of {} threads are resident per SM on {} ({}), so no "
                        "cooperative grid can be shown to fit",
                        f.threads, caps.name, caps.arch()),
            "use a device profile of a supported architecture (`ptxgate devices --profiles`)");
    return;
  }
  v.max_cooperative_grid = uint64_t{occ.active_blocks_per_sm} * caps.sm_count;
  // A block that no SM can hold is refused by the driver whether the launch is cooperative or not.
  if (occ.active_blocks_per_sm == 0) {
    r.add(Code::kernel_cannot_be_resident,
          fmt::format("not one block of {} threads fits on an SM (limited by {}), so {}", f.threads,
                      limiter_name(occ.limiter),
                      residency_matters ? "no cooperative grid fits" : "the driver refuses the launch"),
          "use a smaller block or less shared memory / fewer registers");
    return;
  }
  if (!residency_matters) return;
  check_cooperative_grid(f.blocks, occ, v.max_cooperative_grid, caps, r);
}

// PG3501, PG3502: launches that work but waste the device.
void check_warnings(const DeviceCaps& caps, Reporter& r, const Facts& f) {
  if (f.threads_fit && caps.warp_size && f.threads % caps.warp_size != 0)
    r.add(Code::block_not_warp_multiple,
          fmt::format("block of {} threads is not a multiple of the warp size {}; the last warp runs {} idle lanes",
                      f.threads, caps.warp_size, caps.warp_size - f.threads % caps.warp_size),
          fmt::format("use a block of {} threads", (f.threads / caps.warp_size + 1) * caps.warp_size));
  if (f.blocks_known && f.blocks > 0 && f.blocks < caps.sm_count)
    r.add(Code::grid_smaller_than_sms,
          fmt::format("grid of {} blocks leaves {} of {}'s {} SMs idle", f.blocks, caps.sm_count - f.blocks, caps.name,
                      caps.sm_count),
          fmt::format("use at least {} blocks (smaller blocks, or more work items)", caps.sm_count));
}

/// This thread's launch description for check_memory, which keeps its buffers between checks.
/// Reached through a function that is never inlined (support::thread_object says why).
[[gnu::noinline]] MemoryLaunch& thread_memory_launch() { return support::thread_object<MemoryLaunch>(); }

/// The memory verdict of `launch` (filled) into `memory`, its diagnostics into `out` (check_memory's
/// and check_new_grid's).
void judge_memory(const contract::KernelInfo& kernel, const MemoryLaunch& launch, const MemoryReportOptions& options,
                  std::optional<MemoryVerdict>& memory, diag::Diagnostics& out, const diag::Location& location) {
  memory = internal::evaluate_accesses_remembered(kernel.access, launch);
  report_memory_safety(out, *kernel.access, *memory, launch, kernel.name, location.file, options);
}

/// The memory-safety part: the launch's values into the kernel's access facts, every access
/// decided (src/ptxgate/validation/memory_safety.hpp). Runs when the rest of the launch is legal.
/// Never inlined, so that a profile shows the memory verdict's inclusive cost apart. `keep`: the
/// launch values are written there (check_launch's GridBase) instead of into the thread's.
[[gnu::noinline]] void check_memory(const contract::KernelInfo& kernel, const contract::LaunchPlan& plan, Verdict& v,
                                    const diag::Location& location, bool report_warnings, MemoryLaunch* keep) {
  if (!kernel.access) {
    if (plan.require_memory_proof)
      v.diagnostics.add(Code::access_not_proven,
                        fmt::format("kernel '{}' was made by another compiler: its accesses cannot be analysed, so "
                                    "none is proven in bounds", kernel.name),
                        location, "compile the kernel from ptxgate's IR, or launch without --require-proof")
          .severity = diag::Severity::error;
    return;
  }
  MemoryLaunch& launch = keep != nullptr ? *keep : thread_memory_launch();
  launch.grid = plan.grid;
  launch.block = v.block;
  launch.dynamic_shared_bytes = plan.dynamic_shared_bytes;
  // One pass writes each parameter's value, size and name. The names are views of the kernel's
  // (copying sixteen strings cost more than the rest of this set-up), dropped before this returns
  // unless the launch is kept.
  const size_t n = kernel.params.size();
  launch.scalar_bits.resize(n);
  launch.buffer_bytes.resize(n);
  launch.names.resize(n);
  const size_t given = plan.arguments_known ? std::min(n, plan.arguments.size()) : 0;
  for (size_t i = 0; i < n; ++i) {
    const contract::ArgumentDesc* a = i < given ? &plan.arguments[i] : nullptr;
    const bool buffer = a && a->kind == contract::ArgumentDesc::Kind::buffer;
    const bool scalar = a && a->kind == contract::ArgumentDesc::Kind::scalar;
    launch.buffer_bytes[i] = buffer ? std::optional<uint64_t>(a->buffer_bytes) : std::nullopt;
    launch.scalar_bits[i] = scalar ? std::optional<uint64_t>(a->scalar_bits) : std::nullopt;
    launch.names[i] = kernel.params[i].name;
  }
  MemoryReportOptions options;
  options.require_proof = plan.require_memory_proof;
  options.list_unproven = plan.list_unproven_accesses && report_warnings;
  judge_memory(kernel, launch, options, v.memory, v.diagnostics, location);
  v.memory_facts = kernel.access;
  // A kept launch lives beside the kernel (its names with it); the thread's outlives kernels.
  if (keep == nullptr) launch.names.clear();
}

}  // namespace

void report_misaligned_buffer(diag::Diagnostics& out, const contract::KernelInfo& kernel, size_t index,
                              uint64_t address, const diag::Location& location) {
  const auto& p = kernel.params.at(index);
  const unsigned element = std::max(ir::byte_size(p.type), 1u);
  out.add(Code::misaligned_buffer,
          fmt::format("argument {} (buffer '{}') starts at 0x{:x}, which is not a multiple of {}: kernel '{}' reads "
                      "or writes it with {}-byte vector accesses (load{}/store{}), which need a {}-byte aligned base",
                      index, p.name, address, p.alignment, kernel.name, p.alignment, p.alignment / element,
                      p.alignment / element, p.alignment),
          location,
          fmt::format("pass a buffer whose start is {}-byte aligned: a whole allocation (cuMemAlloc gives 256 bytes), "
                      "or a view that starts at a multiple of {} elements",
                      p.alignment, p.alignment / element));
}

void report_local_memory(diag::Diagnostics& out, const std::string& kernel, const contract::KernelResources& resources,
                         const diag::Location& location) {
  if (resources.local_bytes == 0 && resources.spill_store_bytes == 0) return;
  out.add(Code::local_memory_used,
          fmt::format("kernel '{}' uses {} bytes of local memory per thread ({} bytes of spill stores, {} bytes of "
                      "spill loads): its accesses go to memory, not registers",
                      kernel, resources.local_bytes, resources.spill_store_bytes, resources.spill_load_bytes),
          location,
          "index local arrays only with constants once loops are unrolled (constant loop bounds), or keep fewer "
          "values live; `ptxgate emit --emit resources` shows the bytes per kernel");
}

bool block_given(const contract::LaunchPlan& plan) {
  return plan.block_given || (plan.block[0] | plan.block[1] | plan.block[2]) != 0;
}

std::array<uint64_t, 3> effective_block(const contract::KernelInfo& kernel, const contract::LaunchPlan& plan) {
  if (block_given(plan)) return plan.block;
  if (kernel.has_required_block())
    return {kernel.required_block[0], kernel.required_block[1], kernel.required_block[2]};
  return kDefaultBlock;
}

Verdict check_launch(const contract::KernelInfo& kernel, const contract::KernelResources& res,
                     const contract::LaunchPlan& plan, const DeviceCaps& caps, const diag::Location& location,
                     OccupancyProvider occupancy, bool report_warnings, GridBase* base) {
  if (base != nullptr) base->launchable = false;
  Verdict v;
  Reporter r{v.diagnostics, location};
  Facts f;
  check_arguments(kernel, plan, r);
  check_geometry(kernel, res, plan, caps, r, f, v);
  check_shared_memory(res, plan, caps, r, f, v, report_warnings);
  check_language_needs(kernel, plan, r, f);
  check_registers(kernel, res, caps, r, f);
  check_cooperative_mode(kernel, plan, caps, r);
  check_residency(res, plan, caps, r, f, v, occupancy);
  if (!v.diagnostics.has_errors())
    check_memory(kernel, plan, v, location, report_warnings, base != nullptr ? &base->memory : nullptr);
  v.launchable = !v.diagnostics.has_errors();
  if (base != nullptr && v.launchable) {
    // A launchable verdict passed check_residency whole: the occupancy is known, and a cooperative
    // launch's grid was compared with max_cooperative_grid.
    base->launchable = v.occupancy.has_value();
    base->block = v.block;
    base->needs_shared_opt_in = v.needs_shared_opt_in;
    base->cooperative_residency = plan.cooperative && caps.cooperative_launch;
    if (v.occupancy) base->occupancy = *v.occupancy;
    base->max_cooperative_grid = v.max_cooperative_grid;
    base->memory_options = {plan.require_memory_proof, plan.list_unproven_accesses && report_warnings};
  }
  // A blocked launch is reported whole (its notes and warnings too) without a second run.
  if (!report_warnings && !v.launchable && f.opt_in_note_at != SIZE_MAX) {
    diag::Diagnostics note;
    note.add(Code::shared_memory_opt_in,
             fmt::format("shared memory {} bytes exceeds the default {} bytes per block; the backend opts in (limit {})",
                         v.total_shared_bytes, caps.shared_per_block, caps.shared_per_block_optin),
             location, {});
    auto& items = v.diagnostics.items();
    items.insert(items.begin() + static_cast<std::ptrdiff_t>(f.opt_in_note_at), std::move(note.items().front()));
  }
  if (report_warnings || !v.launchable) check_warnings(caps, r, f);
  return v;
}

bool check_new_grid(const contract::KernelInfo& kernel, const DeviceCaps& caps, GridBase& base,
                    const std::array<uint64_t, 3>& grid, const diag::Location& location) {
  if (!base.launchable) return false;
  // check_launch's checks that read the grid, in its order; the others passed for base's plan and
  // read nothing that changed. Each of them reports only errors.
  diag::Diagnostics d;
  Reporter r{d, location};
  Facts f;
  check_grid_zero(grid, r, f);
  check_grid_blocks(grid, caps, r, f);
  check_grid_dims(grid, caps, r, f);
  check_clusters(kernel, grid, r, f);
  if (!f.geometry_ok) return false;
  if (base.cooperative_residency) check_cooperative_grid(f.blocks, base.occupancy, base.max_cooperative_grid, caps, r);
  if (!d.empty()) return false;
  if (!kernel.access) return true;
  base.memory.grid = grid;
  std::optional<MemoryVerdict> memory;
  judge_memory(kernel, base.memory, base.memory_options, memory, d, location);
  return !d.has_errors();
}

std::string Verdict::summary_line(const std::string& kernel_name, const contract::LaunchPlan& plan) const {
  std::string line = fmt::format(
      "verdict: status={} errors={} warnings={} kernel={} grid={} block={} shared_bytes={} cooperative={}",
      launchable ? "launchable" : "blocked", diagnostics.error_count(), diagnostics.warning_count(), kernel_name,
      dims(plan.grid), dims(block), total_shared_bytes, plan.cooperative ? 1 : 0);
  if (occupancy)
    line += fmt::format(" blocks_per_sm={} limiter={} max_cooperative_grid={}", occupancy->active_blocks_per_sm,
                        limiter_name(occupancy->limiter), max_cooperative_grid);
  if (memory)
    line += fmt::format(" accesses_proven={}/{}", memory->proven + memory->unreachable, memory->sites + memory->unmodelled);
  return line;
}

nlohmann::json Verdict::to_json(const std::string& kernel_name, const contract::LaunchPlan& plan) const {
  nlohmann::json j;
  j["status"] = launchable ? "launchable" : "blocked";
  j["launchable"] = launchable;
  j["errors"] = diagnostics.error_count();
  j["warnings"] = diagnostics.warning_count();
  j["kernel"] = kernel_name;
  j["grid"] = plan.grid;
  j["block"] = block;
  j["dynamic_shared_bytes"] = plan.dynamic_shared_bytes;
  j["total_shared_bytes"] = total_shared_bytes;
  j["needs_shared_opt_in"] = needs_shared_opt_in;
  j["cooperative"] = plan.cooperative;
  if (occupancy) {
    j["occupancy"] = {{"blocks_per_sm", occupancy->active_blocks_per_sm},
                      {"limiter", limiter_name(occupancy->limiter)},
                      {"by_threads", occupancy->by_threads},
                      {"by_blocks", occupancy->by_blocks},
                      {"by_registers", occupancy->by_registers},
                      {"by_shared", occupancy->by_shared}};
    j["max_cooperative_grid"] = max_cooperative_grid;
  }
  if (memory && memory_facts) j["memory"] = memory->to_json(*memory_facts);
  j["diagnostics"] = diag::to_json(diagnostics);
  return j;
}

}  // namespace ptxgate::validation
