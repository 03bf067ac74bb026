// Runs ptxas -v via posix_spawn in a mkdtemp directory and parses its resource report.
#include "ptxgate/validation/ptxas_resources.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace ptxgate::validation {
namespace fs = std::filesystem;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

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
void parse_used_line(std::string_view items, KernelResources& r) {
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
void parse_properties_line(std::string_view items, KernelResources& r) {
  for_each_item(items, [&](std::string_view item) {
    uint64_t n = 0;
    std::string_view unit;
    if (!leading_number(item, n, unit)) return;
    if (unit == "bytes stack frame") r.local_bytes = n;
    else if (unit == "bytes spill stores") r.spill_store_bytes = n;
    else if (unit == "bytes spill loads") r.spill_load_bytes = n;
  });
}

diag::Diagnostics ptxas_error(std::string message) {
  diag::Diagnostics d;
  d.add(diag::Code::resource_query_failed, std::move(message), {},
        "make sure the CUDA Toolkit's ptxas is installed (set CUDA_HOME or PTXGATE_PTXAS) and supports the target");
  return d;
}

// A private temporary directory, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ptxgate-ptxas-XXXXXX").string();
    if (char* p = mkdtemp(tmpl.data())) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs argv with stdout and stderr sent to `log_path`; returns the exit status or -1.
int spawn_and_wait(const std::vector<std::string>& args, const fs::path& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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
  size_t pos = 0;
  while ((pos = ptx.find(".entry", pos)) != std::string_view::npos) {
    pos += 6;
    size_t name_begin = pos;
    while (name_begin < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[name_begin]))) ++name_begin;
    size_t name_end = name_begin;
    while (name_end < ptx.size() && (std::isalnum(static_cast<unsigned char>(ptx[name_end])) ||
                                     ptx[name_end] == '_' || ptx[name_end] == '$' || ptx[name_end] == '.'))
      ++name_end;
    std::string name(ptx.substr(name_begin, name_end - name_begin));
    size_t body = ptx.find('{', name_end);
    std::string_view header = ptx.substr(name_end, body == std::string_view::npos ? ptx.npos : body - name_end);
    for (std::string_view directive : {".reqntid", ".maxntid"}) {
      auto d = header.find(directive);
      if (d == std::string_view::npos) continue;
      std::string_view rest = header.substr(d + directive.size());
      rest = rest.substr(0, rest.find('\n'));
      uint64_t product = 1;
      bool any = false;
      for_each_item(rest, [&](std::string_view item) {
        uint64_t n = 0;
        std::string_view tail;
        if (leading_number(item, n, tail)) {
          product *= n;
          any = true;
        }
      });
      if (any) {
        out[name] = static_cast<uint32_t>(std::min<uint64_t>(product, UINT32_MAX));
        break;
      }
    }
    pos = name_end;
  }
  return out;
}

fs::path ptxas_path() {
  if (const char* p = std::getenv("PTXGATE_PTXAS"); p && *p) return p;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) return fs::path(home) / "bin" / "ptxas";
#ifdef PTXGATE_DEFAULT_CUDA_ROOT
  return fs::path(PTXGATE_DEFAULT_CUDA_ROOT) / "bin" / "ptxas";
#else
  return "/usr/local/cuda/bin/ptxas";
#endif
}

std::expected<ResourceMap, diag::Diagnostics> query_ptxas_resources(std::string_view ptx, std::string_view arch) {
  fs::path ptxas = ptxas_path();
  if (access(ptxas.c_str(), X_OK) != 0)
    return std::unexpected(ptxas_error(fmt::format("ptxas not found or not executable at '{}'", ptxas.string())));
  TempDir dir;
  if (dir.path().empty()) return std::unexpected(ptxas_error("cannot create a temporary directory for ptxas"));
  fs::path input = dir.path() / "module.ptx", output = dir.path() / "module.cubin", log = dir.path() / "ptxas.log";
  {
    std::ofstream out(input, std::ios::binary);
    out.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    if (!out) return std::unexpected(ptxas_error("cannot write the PTX for ptxas to a temporary file"));
  }
  int rc = spawn_and_wait({ptxas.string(), "-v", fmt::format("-arch={}", arch), input.string(), "-o", output.string()},
                          log);
  std::string text = read_all(log);
  if (rc != 0)
    return std::unexpected(ptxas_error(fmt::format("ptxas -arch={} failed (exit {}): {}", arch, rc, trim(text))));
  auto resources = parse_ptxas_log(text);
  if (resources.empty())
    return std::unexpected(ptxas_error(fmt::format("ptxas -arch={} reported no entry function", arch)));
  auto bounds = ptx_launch_bounds(ptx);
  for (auto& [name, r] : resources) {
    auto it = bounds.find(name);
    r.max_threads_per_block = it != bounds.end() ? std::min<uint32_t>(it->second, 1024) : 1024;
  }
  return resources;
}

}  // namespace ptxgate::validation
