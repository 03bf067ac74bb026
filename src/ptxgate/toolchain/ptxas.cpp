// assemble(): ptxas -v in a temporary directory; the parser of its resource report and of PTX launch bounds.
#include "ptxgate/toolchain/ptxas.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "ptxgate/support/files.hpp"
#include "ptxgate/support/temp_dir.hpp"
#include "ptxgate/support/text.hpp"
#include "ptxgate/toolchain/internal/process.hpp"
#include "ptxgate/toolchain/ptx_entries.hpp"

namespace ptxgate::toolchain {
namespace {

using support::trim;

/// The largest cubin read back from ptxas.
constexpr uint64_t kMaxCubinBytes = 256 * 1024 * 1024;

// Reads a leading unsigned number; returns false when there is none.
bool leading_number(std::string_view s, uint64_t& value, std::string_view& rest) {
  s = trim(s);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr == s.data()) return false;
  rest = trim(std::string_view(ptr, static_cast<size_t>(s.data() + s.size() - ptr)));
  return true;
}

// The text between the first pair of single quotes after `marker`, or empty.
std::string_view quoted_after(std::string_view line, std::string_view marker) {
  auto pos = line.find(marker);
  if (pos == std::string_view::npos) return {};
  auto open = line.find('\'', pos + marker.size());
  if (open == std::string_view::npos) return {};
  auto close = line.find('\'', open + 1);
  if (close == std::string_view::npos) return {};
  return line.substr(open + 1, close - open - 1);
}

template <typename F>
void for_each_item(std::string_view list, F&& f) {
  while (!list.empty()) {
    auto comma = list.find(',');
    f(trim(list.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

// "Used 10 registers, used 1 barriers, 4096 bytes smem, 360 bytes cmem[0], 256 bytes cumulative stack size"
void parse_used_line(std::string_view items, contract::KernelResources& r) {
  for_each_item(items, [&](std::string_view item) {
    if (item.starts_with("Used ") || item.starts_with("used ")) item.remove_prefix(5);
    uint64_t n = 0;
    std::string_view unit;
    if (!leading_number(item, n, unit)) return;
    if (unit == "registers") r.registers_per_thread = static_cast<uint32_t>(n);
    else if (unit == "barriers") r.barriers = static_cast<uint32_t>(n);
    else if (unit == "bytes smem") r.static_shared_bytes = n;
    else if (unit == "bytes cmem[0]") r.constant_bytes = n;
  });
}

// "256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
void parse_properties_line(std::string_view items, contract::KernelResources& r) {
  for_each_item(items, [&](std::string_view item) {
    uint64_t n = 0;
    std::string_view unit;
    if (!leading_number(item, n, unit)) return;
    if (unit == "bytes stack frame") r.local_bytes = n;
    else if (unit == "bytes spill stores") r.spill_store_bytes = n;
    else if (unit == "bytes spill loads") r.spill_load_bytes = n;
  });
}

/// At most `max_lines` lines of a tool's output, for a diagnostic message.
diag::Diagnostics failure(diag::Code code, std::string message, std::string fix) {
  diag::Diagnostics d;
  d.add(code, std::move(message), {}, std::move(fix));
  return d;
}

}  // namespace

ResourceMap parse_ptxas_log(std::string_view log) {
  ResourceMap out;
  std::string current_entry, properties_of;
  while (!log.empty()) {
    auto nl = log.find('\n');
    std::string_view line = log.substr(0, nl);
    log.remove_prefix(nl == std::string_view::npos ? log.size() : nl + 1);
    if (auto name = quoted_after(line, "Compiling entry function"); !name.empty()) {
      current_entry = std::string(name);
      out[current_entry];
      continue;
    }
    if (auto pos = line.find("Function properties for "); pos != std::string_view::npos) {
      properties_of = std::string(trim(line.substr(pos + 24)));
      continue;
    }
    if (line.find("bytes stack frame") != std::string_view::npos) {
      auto it = out.find(properties_of);
      if (it != out.end()) parse_properties_line(line, it->second);
      continue;
    }
    if (auto pos = line.find("Used "); pos != std::string_view::npos && line.find("registers") != std::string_view::npos) {
      auto it = out.find(current_entry);
      if (it != out.end()) parse_used_line(line.substr(pos), it->second);
    }
  }
  return out;
}

std::map<std::string, uint32_t, std::less<>> ptx_launch_bounds(std::string_view ptx) {
  std::map<std::string, uint32_t, std::less<>> out;
  auto module = read_ptx_entries(diag::SourceFile("module.ptx", std::string(ptx)));
  if (!module) return out;
  auto threads = [](const std::array<uint32_t, 3>& dims) { return uint64_t{dims[0]} * dims[1] * dims[2]; };
  for (const PtxEntry& e : module->entries) {
    const uint64_t required = threads(e.info.required_block), most = threads(e.max_block);
    if (required != 0 || most != 0) out[e.info.name] = static_cast<uint32_t>(required != 0 ? required : most);
  }
  return out;
}

void merge_launch_bounds(ResourceMap& resources, std::string_view ptx) {
  auto bounds = ptx_launch_bounds(ptx);
  for (auto& [name, r] : resources) {
    auto it = bounds.find(name);
    r.max_threads_per_block = it != bounds.end() ? std::min<uint32_t>(it->second, 1024) : 1024;
  }
}

diag::Diagnostics foreign_ptx_errors(const diag::SourceFile& foreign, std::string_view log, std::string_view input_path,
                                     std::string_view arch) {
  // A path that names the user's file instead of ptxas's temporary copy.
  auto restate = [&](std::string_view text) {
    std::string out;
    for (size_t at = 0; at < text.size();) {
      size_t hit = input_path.empty() ? std::string_view::npos : text.find(input_path, at);
      if (hit == std::string_view::npos) hit = text.size();
      out.append(text.substr(at, hit - at));
      if (hit < text.size()) out += foreign.path();
      at = hit + (hit < text.size() ? input_path.size() : 0);
    }
    return out;
  };
  const std::string fix = fmt::format(
      "the PTX is at fault, not ptxgate: correct it, or regenerate it with the compiler that wrote it for a target "
      "this ptxas assembles ({})",
      arch);
  diag::Diagnostics out;
  for (std::string_view rest = log; !rest.empty();) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    // "ptxas /tmp/.../module.ptx, line 9; error   : Conflicting directives: ..."
    const size_t marker = line.find(", line ");
    if (marker == std::string_view::npos) continue;
    uint64_t number = 0;
    std::string_view after;
    if (!leading_number(line.substr(marker + 7), number, after) || !after.starts_with(";")) continue;
    after = trim(after.substr(1));
    if (!after.starts_with("error")) continue;
    const size_t colon = after.find(':');
    const std::string_view text = trim(colon == std::string_view::npos ? after : after.substr(colon + 1));
    diag::Location where;
    where.file = foreign.path();
    if (number >= 1 && number <= UINT32_MAX) {
      const std::string_view source_line = foreign.line_text(static_cast<uint32_t>(number));
      const size_t offset = static_cast<size_t>(source_line.data() - foreign.text().data());
      if (!source_line.empty() || number == 1)
        where = diag::locate(foreign, static_cast<uint32_t>(offset), static_cast<uint32_t>(source_line.size()));
    }
    out.add(diag::Code::foreign_ptx_rejected, fmt::format("ptxas -arch={} rejects this PTX: {}", arch, restate(text)),
            std::move(where), fix);
  }
  if (out.empty()) {
    diag::Location where;
    where.file = foreign.path();
    out.add(diag::Code::foreign_ptx_rejected,
            fmt::format("ptxas -arch={} rejects this PTX: {}", arch, restate(trim(first_lines(std::string(log), 20)))),
            std::move(where), fix);
  }
  return out;
}

std::expected<Assembly, diag::Diagnostics> assemble(std::string_view ptx, std::string_view arch,
                                                    const Toolkit& toolkit, const diag::SourceFile* foreign,
                                                    std::string_view only_entry) {
  if (!toolkit.ptxas) return std::unexpected(toolkit.ptxas.error());
  const std::string& ptxas = *toolkit.ptxas;
  auto dir = support::TempDir::create_in_tmp("ptxgate-ptxas-");
  if (!dir)
    return std::unexpected(failure(diag::Code::ptxas_failure, "cannot prepare ptxas input: " + dir.error(),
                                   "set TMPDIR to a writable directory"));
  const auto ptx_path = (dir->path() / "module.ptx").string();
  const auto cubin_path = (dir->path() / "module.cubin").string();
  {
    std::ofstream input(ptx_path, std::ios::binary);
    input.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    input.close();
    if (!input)
      return std::unexpected(failure(diag::Code::ptxas_failure, fmt::format("cannot write ptxas input '{}'", ptx_path),
                                     "set TMPDIR to a writable directory with free space"));
  }
  auto limit = tool_time_limit();
  if (!limit)
    return std::unexpected(failure(diag::Code::tool_timed_out, limit.error(),
                                   "set PTXGATE_TOOL_TIMEOUT to a number of seconds (0: no limit)"));
  std::vector<std::string> argv = {ptxas, "-v", fmt::format("-arch={}", arch)};
  if (!only_entry.empty()) argv.insert(argv.end(), {"-e", std::string(only_entry)});
  argv.insert(argv.end(), {ptx_path, "-o", cubin_path});
  auto run = run_process(argv, *limit);
  if (!run)
    return std::unexpected(failure(diag::Code::ptxas_missing, run.error(),
                                   "check the ptxas binary (CUDA_HOME or PTXGATE_PTXAS)"));
  if (run->timed_out)
    return std::unexpected(failure(
        diag::Code::tool_timed_out, timeout_message(fmt::format("ptxas -arch={}", arch), *limit),
        fmt::format("assemble a smaller module, or raise the limit: PTXGATE_TOOL_TIMEOUT=SECONDS (now {}; 0: no limit)",
                    limit->count() / 1000)));
  Assembly out;
  out.log = run->stdout_text + run->stderr_text;
  if (run->exit_status != 0 && foreign != nullptr)
    return std::unexpected(foreign_ptx_errors(*foreign, out.log, ptx_path, arch));
  if (run->exit_status != 0)
    return std::unexpected(failure(
        diag::Code::ptxas_failure,
        fmt::format("ptxas -arch={} exited with status {}: {}", arch, run->exit_status, first_lines(out.log, 20)),
        "this is a code generation bug unless the target is unsupported by this ptxas; please report it"));
  support::ReadLimits limits;
  limits.max_bytes = kMaxCubinBytes;
  auto cubin = support::read_file(cubin_path, limits);
  if (!cubin || cubin->empty())
    return std::unexpected(failure(diag::Code::ptxas_failure,
                                   cubin ? std::string("ptxas succeeded but wrote no cubin")
                                         : fmt::format("ptxas succeeded but its cubin cannot be read: {}",
                                                       cubin.error().message),
                                   "check the ptxas installation"));
  out.cubin = std::move(*cubin);
  out.resources = parse_ptxas_log(out.log);
  merge_launch_bounds(out.resources, ptx);
  return out;
}

std::string ptxas_version(const std::string& ptxas) {
  static std::mutex mutex;
  static std::map<std::string, std::string> memo;
  std::lock_guard lock(mutex);
  if (auto it = memo.find(ptxas); it != memo.end()) return it->second;
  std::string version;
  if (auto run = run_process({ptxas, "--version"}); run && run->exit_status == 0) {
    std::istringstream lines(run->stdout_text);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("release") != std::string::npos) {
        version = line;
        break;
      }
      if (!line.empty()) version = line;
    }
  }
  memo.emplace(ptxas, version);
  return version;
}

}  // namespace ptxgate::toolchain
