// prepare_run / execute_run: `ptxgate run` as library calls.
#include "ptxgate/commands/run.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/commands/arg_data.hpp"
#include "ptxgate/commands/launch_flags.hpp"
#include "ptxgate/commands/reports.hpp"
#include "ptxgate/support/files.hpp"
#include "ptxgate/support/numbers.hpp"
#include "ptxgate/validation/check.hpp"

namespace ptxgate::commands {
namespace {

/// The warnings, then what checked mode stopped.
diag::Diagnostics all_diagnostics(const RunResult& r) {
  diag::Diagnostics all = r.warnings;
  all.append(r.violations);
  return all;
}

std::unexpected<RunStop> stop(diag::Diagnostics warnings, diag::Diagnostics d) {
  RunStop s;
  s.warnings = std::move(warnings);
  s.diagnostics = std::move(d);
  bool usage_only = !s.diagnostics.empty();
  for (const auto& item : s.diagnostics) {
    s.no_driver |= item.code == diag::Code::driver_unavailable || item.code == diag::Code::no_device;
    usage_only &= item.code == diag::Code::invalid_launch_option;
  }
  // A malformed flag (--grid, --block, --shared-bytes, --time) is a usage error, as in check.
  s.usage = usage_only;
  return std::unexpected(std::move(s));
}

void no_arg_for(diag::Diagnostics& errors, const contract::ParamInfo& p) {
  errors.add(diag::Code::invalid_argument_spec,
             fmt::format("no --arg for parameter '{}' ({} {})", p.name, p.is_buffer ? "buffer of" : "scalar",
                         ir::type_name(p.type)),
             {},
             p.is_buffer ? fmt::format("add --arg {}=random:COUNT (or fill:COUNT:V, iota:COUNT, a .npy file)", p.name)
                         : fmt::format("add --arg {}=VALUE with an {} literal", p.name, ir::type_name(p.type)));
}

// Binds NAME=SPEC to the signature: every parameter needs one, every name must be a parameter.
void bind_arguments(const RunRequest& request, PreparedRun& run, diag::Diagnostics& errors) {
  std::map<std::string, std::string, std::less<>> specs;
  for (const auto& a : request.args) {
    auto kv = split_assignment(a, "--arg");
    if (!kv) errors.append(kv.error());
    else specs[kv->first] = kv->second;
  }
  for (const auto& p : run.kernel.params) {
    BoundParam& bound = run.params.emplace_back();
    bound.param = p;
    auto it = specs.find(p.name);
    if (it == specs.end()) {
      no_arg_for(errors, p);
      continue;
    }
    // Parsed, not materialised: no host memory is spent before the driver is known to work.
    auto parsed = parse_arg_spec(it->second, &p, p.name);
    if (!parsed) {
      errors.append(parsed.error());
    } else {
      bound.spec = std::move(*parsed);
      bound.text = it->second;
    }
    specs.erase(it);
  }
  for (const auto& [name, spec] : specs)
    errors.add(diag::Code::invalid_argument_spec,
               fmt::format("--arg {}={}: kernel '{}' has no parameter '{}'", name, spec, request.kernel, name), {},
               "remove it or fix the name");
}

std::optional<size_t> buffer_index(const PreparedRun& run, std::string_view name) {
  for (size_t i = 0; i < run.params.size(); ++i)
    if (run.params[i].param.name == name && run.params[i].param.is_buffer) return i;
  return std::nullopt;
}

void bind_outputs(const RunRequest& request, PreparedRun& run, diag::Diagnostics& errors) {
  for (const auto& o : request.outs) {
    auto kv = split_assignment(o, "--out");
    if (!kv) errors.append(kv.error());
    else if (auto same = support::refuse_output_onto_input(kv->second, request.input); !same)
      errors.append(same.error());
    else if (auto i = buffer_index(run, kv->first)) run.outs.emplace_back(*i, kv->second);
    else
      errors.add(diag::Code::invalid_argument_spec, fmt::format("--out {}: no buffer parameter named '{}'", o, kv->first),
                 {}, "name a buffer parameter of the kernel");
  }
  for (const auto& p : request.prints) {
    auto colon = p.find(':');
    std::string name = p.substr(0, colon);
    size_t k = 10;
    if (colon != std::string::npos) {
      auto parsed_k = support::parse_count(std::string_view(p).substr(colon + 1));
      if (!parsed_k) {
        errors.add(diag::Code::invalid_argument_spec, fmt::format("--print '{}': K must be a number", p), {},
                   "write --print NAME or --print NAME:K");
        continue;
      }
      k = *parsed_k;
    }
    if (auto i = buffer_index(run, name)) run.prints.emplace_back(*i, k);
    else
      errors.add(diag::Code::invalid_argument_spec, fmt::format("--print {}: no buffer parameter named '{}'", p, name),
                 {}, "name a buffer parameter of the kernel");
  }
}

void apply_launch_flags(const RunRequest& request, PreparedRun& run, diag::Diagnostics& errors) {
  auto& config = run.config;
  auto geometry = parse_launch_flags(request.grid, request.block, request.shared_bytes);
  if (!geometry) errors.append(geometry.error());
  if (auto runs = support::parse_count(request.time_runs, 1000000)) run.time_runs = static_cast<unsigned>(*runs);
  else
    errors.add(diag::Code::invalid_launch_option, fmt::format("invalid --time '{}': {}", request.time_runs, runs.error()),
               {}, "write --time N (a decimal count of at most 1000000)");
  config.cooperative = request.cooperative || run.kernel.cooperative;
  run.grid_max = request.grid == "max";
  config.block_given = !request.block.empty();
  if (geometry) {
    config.dynamic_shared_bytes = geometry->shared_bytes;
    if (geometry->block) config.block = *geometry->block;
  }
  contract::LaunchPlan block_plan;
  block_plan.block = config.block;
  block_plan.block_given = config.block_given;
  run.block = validation::effective_block(run.kernel, block_plan);  // the library's one default
  run.grid_given = !request.grid.empty() && !run.grid_max;
  if (geometry && geometry->grid) config.grid = *geometry->grid;
}

// Host data for every buffer with data; the default grid covers the largest one.
std::expected<void, diag::Diagnostics> materialise(PreparedRun& run) {
  diag::Diagnostics errors;
  uint64_t largest = 0;
  for (auto& b : run.params) {
    if (!b.spec.is_buffer() || b.spec.kind == ArgSpec::Kind::null_pointer) continue;
    auto data = make_host_data(b.spec, b.text, b.param.name);
    if (!data) {
      errors.append(data.error());
      continue;
    }
    largest = std::max<uint64_t>(largest, data->count);
    b.host = std::move(*data);
  }
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  if (!run.grid_given && !run.grid_max) {
    uint64_t threads = 0;
    if (__builtin_mul_overflow(run.block[0], run.block[1], &threads) ||
        __builtin_mul_overflow(threads, run.block[2], &threads))
      threads = 0;
    run.config.grid = {threads == 0 ? 1 : std::max<uint64_t>(1, (largest + threads - 1) / threads), 1, 1};
  }
  return {};
}

std::expected<RunTiming, diag::Diagnostics> time_launches(runtime::Runtime& rt, runtime::Kernel& k,
                                                          const runtime::LaunchConfig& config,
                                                          std::span<const runtime::Arg> args, unsigned runs) {
  auto start = runtime::Event::create(rt.shared_context());
  if (!start) return std::unexpected(start.error());
  auto done = runtime::Event::create(rt.shared_context());
  if (!done) return std::unexpected(done.error());
  std::vector<float> ms;
  for (unsigned i = 0; i < runs; ++i) {
    if (auto ok = start->record(nullptr); !ok) return std::unexpected(ok.error());
    if (auto ok = k.launch(config, args); !ok) return std::unexpected(ok.error());
    if (auto ok = done->record(nullptr); !ok) return std::unexpected(ok.error());
    if (auto ok = done->synchronize(); !ok) return std::unexpected(ok.error());
    auto t = done->elapsed_ms_since(*start);
    if (!t) return std::unexpected(t.error());
    ms.push_back(*t);
  }
  std::sort(ms.begin(), ms.end());
  return RunTiming{runs, ms[ms.size() / 2] * 1000.0, ms.front() * 1000.0, ms.back() * 1000.0};
}

std::expected<void, diag::Diagnostics> read_back(BoundParam& b) {
  if (!b.host) {
    diag::Diagnostics d;
    d.add(diag::Code::invalid_argument_spec,
          fmt::format("buffer '{}' was given as '{}', which holds no data to read back", b.param.name, b.text), {},
          "give it data (random:, fill:, iota:, buffer:, a file) or drop --print/--out");
    return std::unexpected(std::move(d));
  }
  return b.device.download(std::span<std::byte>(b.host->bytes));
}

}  // namespace

std::expected<PreparedRun, RunStop> prepare_run(const RunRequest& request) {
  auto loaded = ir::load_file(request.input);
  if (!loaded) return stop({}, loaded.error());
  PreparedRun run;
  run.warnings = loaded->warnings;
  if (auto kernel = ir::require_kernel(loaded->module, request.kernel); !kernel) return stop(run.warnings, kernel.error());
  for (auto& k : codegen::describe(loaded->module))
    if (k.name == request.kernel) run.kernel = k;
  run.module = std::move(loaded->module);
  run.device = request.device;
  run.cache = request.cache;
  diag::Diagnostics errors;
  bind_arguments(request, run, errors);
  bind_outputs(request, run, errors);
  apply_launch_flags(request, run, errors);
  if (errors.has_errors()) return stop(run.warnings, std::move(errors));
  return run;
}

std::expected<RunResult, RunStop> execute_run(PreparedRun& run, runtime::Runtime& rt) {
  RunResult out;
  out.kernel = run.kernel.name;
  out.warnings = run.warnings;
  if (auto ok = materialise(run); !ok) return stop(out.warnings, ok.error());
  auto& config = run.config;
  auto k = rt.compile(run.module, run.kernel.name);
  out.warnings.append(rt.take_warnings());
  if (!k) return stop(out.warnings, k.error());
  if (run.grid_max) {
    config.cooperative = true;
    auto v = (*k)->check(config);
    if (v.max_cooperative_grid == 0) return stop(out.warnings, v.diagnostics);
    config.grid = {v.max_cooperative_grid, 1, 1};
  }
  std::vector<runtime::Arg> args;
  for (auto& b : run.params) {
    if (b.spec.kind == ArgSpec::Kind::null_pointer) {
      args.push_back(runtime::Arg::device_pointer(0));
    } else if (b.host) {
      auto buf = rt.upload(std::span<const std::byte>(b.host->bytes));
      if (!buf) return stop(out.warnings, buf.error());
      b.device = std::move(*buf);
      args.emplace_back(b.device);
    } else {
      args.push_back(scalar_arg(b.spec));
    }
  }
  if (auto ok = (*k)->launch(config, args); !ok) return stop(out.warnings, ok.error());
  if (auto ok = rt.synchronize(); !ok) {
    // Checked mode stopped accesses and the kernel went on: its results are read back as usual.
    const bool stopped_only = std::all_of(ok.error().begin(), ok.error().end(), [](const diag::Diagnostic& d) {
      return d.code == diag::Code::checked_violation;
    });
    if (!stopped_only) return stop(out.warnings, ok.error());
    out.violations = std::move(ok.error());
  }
  out.config = config;
  out.block = run.block;
  if (run.time_runs > 0) {
    auto timing = time_launches(rt, **k, config, args, run.time_runs);
    if (!timing) return stop(out.warnings, timing.error());
    out.timing = *timing;
  }
  for (auto [index, count] : run.prints) {
    auto& b = run.params[index];
    if (auto ok = read_back(b); !ok) return stop(out.warnings, ok.error());
    PrintedBuffer printed{b.param.name, {}};
    for (size_t i = 0; i < std::min(count, b.host->count); ++i) printed.elements.push_back(b.host->format_element(i));
    out.printed.push_back(std::move(printed));
  }
  for (const auto& [index, path] : run.outs) {
    auto& b = run.params[index];
    if (auto ok = read_back(b); !ok) return stop(out.warnings, ok.error());
    if (auto ok = write_npy(path, *b.host); !ok) return stop(out.warnings, ok.error());
    out.written.push_back(path);
  }
  return out;
}

std::expected<RunResult, RunStop> run_kernel(const RunRequest& request) {
  auto prepared = prepare_run(request);
  if (!prepared) return std::unexpected(std::move(prepared.error()));
  // The driver first: host data is materialised only when a launch can follow.
  runtime::RuntimeOptions options;
  options.device = request.device;
  options.cache = request.cache;
  options.fp_mode = request.fp_mode;
  options.checked = request.checked;
  auto rt = runtime::Runtime::create(options);
  if (!rt) return stop(prepared->warnings, rt.error());
  return execute_run(*prepared, **rt);
}

nlohmann::json run_json(const RunResult& r) {
  nlohmann::json printed = nlohmann::json::array();
  for (const auto& p : r.printed) printed.push_back({{"name", p.name}, {"elements", p.elements}});
  nlohmann::json timing = nullptr;
  if (r.timing)
    timing = {{"runs", r.timing->runs}, {"median_us", r.timing->median_us}, {"min_us", r.timing->min_us},
              {"max_us", r.timing->max_us}};
  return {{"schema_version", kJsonSchemaVersion},
          {"kernel", r.kernel},
          {"status", "ran"},
          {"grid", r.config.grid},
          {"block", r.block},
          {"dynamic_shared_bytes", r.config.dynamic_shared_bytes},
          {"cooperative", r.config.cooperative},
          {"timing", timing},
          {"printed", printed},
          {"written", r.written},
          {"diagnostics", diag::to_json(all_diagnostics(r))}};
}

nlohmann::json run_stop_json(const RunStop& s, const std::string& kernel) {
  diag::Diagnostics all = s.warnings;
  all.append(s.diagnostics);
  return {{"schema_version", kJsonSchemaVersion},
          {"kernel", kernel},
          {"status", s.no_driver ? "no_driver" : s.usage ? "usage_error" : "error"},
          {"grid", nullptr},
          {"block", nullptr},
          {"dynamic_shared_bytes", nullptr},
          {"cooperative", nullptr},
          {"timing", nullptr},
          {"printed", nlohmann::json::array()},
          {"written", nlohmann::json::array()},
          {"diagnostics", diag::to_json(all)}};
}

}  // namespace ptxgate::commands
