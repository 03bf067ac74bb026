// `ptxgate run FILE --kernel K --arg NAME=SPEC ...`: compile through the cache, validate, launch, read back.
#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "ptxgate/backend/arg_spec.hpp"
#include "ptxgate/backend/npy.hpp"
#include "ptxgate/backend/runtime.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/support/numbers.hpp"
#include "cli.hpp"

namespace ptxgate::cli {
namespace {

struct RunOptions {
  std::string input;
  std::string kernel;
  std::string grid;
  std::string block;
  std::string shared_bytes = "0";
  bool cooperative = false;
  std::vector<std::string> args, outs, prints;
  std::string time_runs = "0";
  int device = 0;
  std::string format = "text";
};

diag::Diagnostics option_error(diag::Code code, std::string message, std::string fix) {
  diag::Diagnostics d;
  d.add(code, std::move(message), {}, std::move(fix));
  return d;
}

/// One parameter's value: its parsed spec; host data for a buffer (and its device copy).
struct BoundParam {
  const codegen::ParamInfo* param = nullptr;
  validation::ArgSpec spec;
  std::string text;  ///< the spec as written
  std::optional<backend::HostArray> host;
  backend::DeviceBuffer device;
};

int fail(const diag::Diagnostics& d, diag::Format format) {
  print_diagnostics(d, format);
  bool usage_only = !d.empty();
  for (const auto& item : d) {
    if (item.code == diag::Code::driver_unavailable || item.code == diag::Code::no_device) return kNoDriver;
    if (item.code != diag::Code::invalid_launch_option) usage_only = false;
  }
  // A malformed flag (--grid, --block, --shared-bytes, --time) is a usage error, as in check.
  return usage_only ? kUsage : kDiagnostics;
}

int run_kernel(const RunOptions& opt) {
  auto format = *diag::format_from_name(opt.format);
  auto loaded = ir::load_file(opt.input);
  if (!loaded) return fail(loaded.error(), format);
  if (!loaded->warnings.empty()) print_diagnostics(loaded->warnings, format);
  if (auto kernel = ir::require_kernel(loaded->module, opt.kernel); !kernel) return fail(kernel.error(), format);
  codegen::KernelInfo info;
  for (auto& k : codegen::describe(loaded->module))
    if (k.name == opt.kernel) info = k;

  // Every argument spec is checked before the driver is touched.
  diag::Diagnostics errors;
  std::map<std::string, std::string, std::less<>> specs;
  for (const auto& a : opt.args) {
    auto kv = backend::split_assignment(a, "--arg");
    if (!kv) {
      errors.append(kv.error());
      continue;
    }
    specs[kv->first] = kv->second;
  }
  std::vector<BoundParam> params(info.params.size());
  for (size_t i = 0; i < info.params.size(); ++i) {
    const auto& p = info.params[i];
    params[i].param = &p;
    auto it = specs.find(p.name);
    if (it == specs.end()) {
      errors.add(diag::Code::invalid_argument_spec,
                 fmt::format("no --arg for parameter '{}' ({} {})", p.name, p.is_buffer ? "buffer of" : "scalar",
                             ir::type_name(p.type)),
                 {}, p.is_buffer ? fmt::format("add --arg {}=random:COUNT (or fill:COUNT:V, iota:COUNT, a .npy file)", p.name)
                                 : fmt::format("add --arg {}=VALUE with an {} literal", p.name, ir::type_name(p.type)));
      continue;
    }
    // Parsed, not materialised: no host memory is spent before the driver is known to work.
    auto parsed = validation::parse_arg_spec(it->second, &p, p.name);
    if (!parsed) {
      errors.append(parsed.error());
    } else {
      params[i].spec = std::move(*parsed);
      params[i].text = it->second;
    }
    specs.erase(it);
  }
  for (const auto& [name, spec] : specs)
    errors.add(diag::Code::invalid_argument_spec, fmt::format("--arg {}={}: kernel '{}' has no parameter '{}'", name, spec,
                                                              opt.kernel, name),
               {}, "remove it or fix the name");
  auto find_buffer = [&](std::string_view name) -> BoundParam* {
    for (auto& b : params)
      if (b.param->name == name && b.param->is_buffer) return &b;
    return nullptr;
  };
  std::vector<std::pair<BoundParam*, std::string>> outs;
  for (const auto& o : opt.outs) {
    auto kv = backend::split_assignment(o, "--out");
    if (!kv) {
      errors.append(kv.error());
    } else if (auto* b = find_buffer(kv->first)) {
      outs.emplace_back(b, kv->second);
    } else {
      errors.add(diag::Code::invalid_argument_spec, fmt::format("--out {}: no buffer parameter named '{}'", o, kv->first),
                 {}, "name a buffer parameter of the kernel");
    }
  }
  std::vector<std::pair<BoundParam*, size_t>> prints;
  for (const auto& p : opt.prints) {
    auto colon = p.find(':');
    std::string name = p.substr(0, colon);
    size_t k = 10;
    if (colon != std::string::npos) {
      auto parsed_k = support::parse_count(std::string_view(p).substr(colon + 1));
      if (parsed_k) k = *parsed_k;
      else {
        errors.add(diag::Code::invalid_argument_spec, fmt::format("--print '{}': K must be a number", p), {},
                   "write --print NAME or --print NAME:K");
        continue;
      }
    }
    if (auto* b = find_buffer(name)) prints.emplace_back(b, k);
    else
      errors.add(diag::Code::invalid_argument_spec, fmt::format("--print {}: no buffer parameter named '{}'", p, name),
                 {}, "name a buffer parameter of the kernel");
  }
  backend::LaunchConfig config;
  auto shared_bytes = support::parse_count(opt.shared_bytes);
  if (shared_bytes) config.dynamic_shared_bytes = *shared_bytes;
  else errors.add(diag::Code::invalid_launch_option, fmt::format("invalid --shared-bytes '{}': {}", opt.shared_bytes, shared_bytes.error()),
                  {}, "write --shared-bytes N (a decimal byte count)");
  auto time_runs = support::parse_count(opt.time_runs, 1000000);
  if (!time_runs)
    errors.add(diag::Code::invalid_launch_option, fmt::format("invalid --time '{}': {}", opt.time_runs, time_runs.error()),
               {}, "write --time N (a decimal count of at most 1000000)");
  config.cooperative = opt.cooperative || info.cooperative;
  bool grid_max = opt.grid == "max";
  if (!opt.block.empty()) {
    config.block_given = true;
    if (auto b = support::parse_dims(opt.block)) config.block = *b;
    else errors.add(diag::Code::invalid_launch_option, fmt::format("invalid --block: {}", b.error()), {},
                    "write --block X[,Y[,Z]] (decimal counts)");
  }
  validation::LaunchPlan block_plan;
  block_plan.block = config.block;
  block_plan.block_given = config.block_given;
  const auto block = validation::effective_block(info, block_plan);  // the library's one default
  bool grid_given = !opt.grid.empty() && !grid_max;
  if (grid_given) {
    if (auto g = support::parse_dims(opt.grid)) config.grid = *g;
    else errors.add(diag::Code::invalid_launch_option, fmt::format("invalid --grid: {}", g.error()), {},
                    "write --grid X[,Y[,Z]] (decimal counts) or --grid max");
  }
  if (errors.has_errors()) return fail(errors, format);

  // The driver first: host data is materialised only when a launch can follow.
  auto rt = backend::Runtime::create({.device = opt.device});
  if (!rt) return fail(rt.error(), format);
  uint64_t largest = 0;
  for (auto& b : params) {
    if (!b.spec.is_buffer() || b.spec.kind == validation::ArgSpec::Kind::null_pointer) continue;
    auto data = backend::make_host_data(b.spec, b.text, b.param->name);
    if (!data) errors.append(data.error());
    else {
      largest = std::max<uint64_t>(largest, data->count);
      b.host = std::move(*data);
    }
  }
  if (errors.has_errors()) return fail(errors, format);
  if (!grid_given && !grid_max) {
    uint64_t threads = 0;
    if (__builtin_mul_overflow(block[0], block[1], &threads) || __builtin_mul_overflow(threads, block[2], &threads))
      threads = 0;
    config.grid = {threads == 0 ? 1 : std::max<uint64_t>(1, (largest + threads - 1) / threads), 1, 1};
  }
  auto k = (*rt)->compile(loaded->module, opt.kernel);
  if (auto w = (*rt)->take_warnings(); !w.empty()) print_diagnostics(w, format);
  if (!k) return fail(k.error(), format);
  if (grid_max) {
    config.cooperative = true;
    auto v = (*k)->check(config);
    if (v.max_cooperative_grid == 0) return fail(v.diagnostics, format);
    config.grid = {v.max_cooperative_grid, 1, 1};
  }
  std::vector<backend::Arg> args;
  for (auto& b : params) {
    if (b.spec.kind == validation::ArgSpec::Kind::null_pointer) {
      args.push_back(backend::Arg::device_pointer(0));
    } else if (b.host) {
      auto buf = (*rt)->upload(std::span<const std::byte>(b.host->bytes));
      if (!buf) return fail(buf.error(), format);
      b.device = std::move(*buf);
      args.emplace_back(b.device);
    } else {
      args.push_back(backend::scalar_arg(b.spec));
    }
  }
  if (auto ok = (*k)->launch(config, args); !ok) return fail(ok.error(), format);
  if (auto ok = (*rt)->synchronize(); !ok) return fail(ok.error(), format);
  std::fprintf(stderr, "ran %s: grid=(%llu,%llu,%llu) block=(%llu,%llu,%llu) shared=%llu%s\n", opt.kernel.c_str(),
               (unsigned long long)config.grid[0], (unsigned long long)config.grid[1], (unsigned long long)config.grid[2],
               (unsigned long long)block[0], (unsigned long long)block[1], (unsigned long long)block[2],
               (unsigned long long)config.dynamic_shared_bytes, config.cooperative ? " cooperative" : "");

  if (*time_runs > 0) {
    auto start = backend::Event::create((*rt)->shared_context());
    auto stop = backend::Event::create((*rt)->shared_context());
    if (!start) return fail(start.error(), format);
    if (!stop) return fail(stop.error(), format);
    std::vector<float> ms;
    for (unsigned i = 0; i < *time_runs; ++i) {
      if (auto ok = start->record(nullptr); !ok) return fail(ok.error(), format);
      if (auto ok = (*k)->launch(config, args); !ok) return fail(ok.error(), format);
      if (auto ok = stop->record(nullptr); !ok) return fail(ok.error(), format);
      if (auto ok = stop->synchronize(); !ok) return fail(ok.error(), format);
      auto t = stop->elapsed_ms_since(*start);
      if (!t) return fail(t.error(), format);
      ms.push_back(*t);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("time: median %.3f us over %u runs (min %.3f us, max %.3f us), after 1 warm-up\n",
                ms[ms.size() / 2] * 1000.0, static_cast<unsigned>(*time_runs), ms.front() * 1000.0, ms.back() * 1000.0);
  }
  auto read_back = [&](BoundParam& b) -> std::expected<void, diag::Diagnostics> {
    if (!b.host)
      return std::unexpected(option_error(diag::Code::invalid_argument_spec,
                                          fmt::format("buffer '{}' was given as '{}', which holds no data to read back",
                                                      b.param->name, b.text),
                                          "give it data (random:, fill:, iota:, buffer:, a file) or drop --print/--out"));
    return b.device.download(std::span<std::byte>(b.host->bytes));
  };
  for (auto& [b, k_elems] : prints) {
    if (auto ok = read_back(*b); !ok) return fail(ok.error(), format);
    size_t n = std::min(k_elems, b->host->count);
    std::string line = fmt::format("{}[0:{}] =", b->param->name, n);
    for (size_t i = 0; i < n; ++i) line += " " + b->host->format_element(i);
    std::printf("%s\n", line.c_str());
  }
  for (auto& [b, path] : outs) {
    if (auto ok = read_back(*b); !ok) return fail(ok.error(), format);
    if (auto ok = backend::write_npy(path, *b->host); !ok) return fail(ok.error(), format);
  }
  return kSuccess;
}

}  // namespace

CLI::App* register_run(CLI::App& app, Runner& runner) {
  auto opt = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Compile, validate and launch a kernel on the GPU, then read results back");
  cmd->add_option("file", opt->input, "Input .pg file, or - for standard input")->required();
  cmd->add_option("--kernel", opt->kernel, "Kernel to launch")->required();
  cmd->add_option("--grid", opt->grid,
                  "Grid X[,Y[,Z]]; default: enough blocks to cover the largest buffer; 'max': the largest "
                  "cooperative grid that fits");
  cmd->add_option("--block", opt->block, "Block X[,Y[,Z]]; default: the kernel's @workgroup, else 256");
  cmd->add_option("--shared-bytes", opt->shared_bytes, "Dynamic shared memory per block in bytes");
  cmd->add_flag("--cooperative", opt->cooperative, "Launch cooperatively (implied for @cooperative kernels)");
  cmd->add_option("--arg", opt->args,
                  "NAME=SPEC per parameter. Buffers: random:COUNT[:SEED], fill:COUNT:VALUE, iota:COUNT, PATH.npy, "
                  "or a raw file. Scalars: a literal of the parameter's type");
  cmd->add_option("--out", opt->outs, "NAME=PATH.npy: write a buffer after the launch");
  cmd->add_option("--print", opt->prints, "NAME[:K]: print the first K (default 10) elements of a buffer");
  cmd->add_option("--time", opt->time_runs, "Time N more launches with device events and print the median");
  cmd->add_option("--device", opt->device, "CUDA device ordinal")->default_val(0);
  add_format_option(cmd, opt->format);
  runner = [opt] { return run_kernel(*opt); };
  return cmd;
}

}  // namespace ptxgate::cli
