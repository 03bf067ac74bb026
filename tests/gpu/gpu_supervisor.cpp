// The GPU tests' supervisor: lists the doctest cases that pass the command line's filters and runs each
// in a child process of its own, with a time limit (a fault poisons the CUDA context of its process, so
// one faulting case must not take the others with it); prints every case's result and a summary that
// names the failed and skipped cases, and exits 1 when any case failed.
#include <fnmatch.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "gpu_support.hpp"

namespace ptxgate::gpu_test {
namespace {

/// The cases a listing found (filled by CaseLister).
std::vector<std::string> g_listed;
/// The case this process runs and how many cases it started (filled by CaseListener).
std::string g_current;
int g_started = 0;

/// A reporter that collects the names of a `--list-test-cases` query and prints nothing.
struct CaseLister : doctest::IReporter {
  explicit CaseLister(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData& q) override {
    for (unsigned i = 0; i < q.num_data; ++i) g_listed.emplace_back(q.data[i]->m_name);
  }
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_REPORTER("ptxgate_case_list", 1, CaseLister);

/// A listener that knows which case runs (for skip_case's message) and counts the cases started.
struct CaseListener : CaseLister {
  using CaseLister::CaseLister;
  void report_query(const doctest::QueryData&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    g_current = tc.m_name;
    ++g_started;
  }
};
REGISTER_LISTENER("ptxgate_case_listener", 1, CaseListener);

/// A name as one -tc= filter: doctest splits filters at commas (escaped with a backslash).
std::string exact_filter(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == ',' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

/// Whether `arg` is one of doctest's filters of which cases run (the child is given its one case instead:
/// doctest adds up the filters of every occurrence).
bool case_filter(std::string_view arg) {
  while (arg.starts_with('-')) arg.remove_prefix(1);
  if (arg.starts_with("dt-")) arg.remove_prefix(3);
  const std::string_view name = arg.substr(0, arg.find('='));
  for (std::string_view f : {"source-file", "sf", "source-file-exclude", "sfe", "test-suite", "ts", "test-suite-exclude",
                             "tse", "test-case", "tc", "test-case-exclude", "tce", "first", "last", "order-by", "ob"})
    if (name == f) return true;
  return false;
}

/// The command that starts this binary again: $PTXGATE_GPU_TEST_SELF split at spaces (a bundled loader
/// before the binary), else /proc/self/exe.
std::vector<std::string> self_argv() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("PTXGATE_GPU_TEST_SELF"); env != nullptr && *env != '\0') {
    std::istringstream words(env);
    for (std::string w; words >> w;) out.push_back(w);
  }
  if (out.empty()) out.push_back(std::filesystem::read_symlink("/proc/self/exe").string());
  return out;
}

struct CaseResult {
  std::string name;
  enum { passed, failed, skipped } status = failed;
  std::string detail;  ///< why it failed, or why it was skipped
  double seconds = 0;
};

/// Runs `argv` as a child with `result_file` in its environment; kills it after `limit_s` seconds.
CaseResult run_child(const std::string& name, std::vector<std::string> argv, const std::string& result_file,
                     double limit_s) {
  CaseResult r{name};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.detail = std::string("fork failed: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    ::setenv("PTXGATE_GPU_CASE_RESULT", result_file.c_str(), 1);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "cannot start %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  bool timed_out = false;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      r.detail = std::string("waitpid failed: ") + std::strerror(errno);
      return r;
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.seconds > limit_s && !timed_out) {
      ::kill(pid, SIGKILL);
      timed_out = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (timed_out) {
    r.detail = "timed out after " + std::to_string(static_cast<int>(limit_s)) + " s (PTXGATE_GPU_CASE_TIMEOUT)";
  } else if (WIFSIGNALED(status)) {
    r.detail = std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  } else if (WEXITSTATUS(status) == 0) {
    r.status = CaseResult::passed;
  } else if (WEXITSTATUS(status) == kCaseSkipped) {
    r.status = CaseResult::skipped;
    r.detail = read_text(result_file);
    if (r.detail.empty()) r.detail = "(no reason given)";
  } else {
    r.detail = "exit status " + std::to_string(WEXITSTATUS(status));
  }
  return r;
}

const char* status_word(const CaseResult& r) {
  switch (r.status) {
    case CaseResult::passed: return "PASSED ";
    case CaseResult::skipped: return "SKIPPED";
    default: return "FAILED ";
  }
}

}  // namespace

void skip_case(const std::string& why) {
  std::printf("SKIPPED: %s: %s\n", g_current.c_str(), why.c_str());
  std::fflush(stdout);
  if (const char* file = std::getenv("PTXGATE_GPU_CASE_RESULT"); file != nullptr && *file != '\0') {
    std::ofstream(file, std::ios::trunc) << why;
  }
  std::exit(kCaseSkipped);  // the case's own process: nothing after this point of the case runs
}

int run_one_case(int argc, char** argv) {
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  const int rc = context.run();
  if (g_started != 1) {
    std::printf("FAILED: the filter matched %d cases, not 1\n", g_started);
    return 1;
  }
  if (rc != 0) return rc;
  // A case made to fail on purpose, to show that a failing case fails the run (scripts/gpu_all.sh).
  if (const char* pattern = std::getenv("PTXGATE_GPU_FAIL_CASE");
      pattern != nullptr && *pattern != '\0' && ::fnmatch(pattern, g_current.c_str(), 0) == 0) {
    std::printf("FAILED: %s: failed on purpose (PTXGATE_GPU_FAIL_CASE=%s)\n", g_current.c_str(), pattern);
    return 1;
  }
  return 0;
}

int supervise(int argc, char** argv) {
  {
    // The command line's filters, listing with the silent reporter (doctest's flags take no "=true").
    std::vector<const char*> list_argv(argv, argv + argc);
    for (const char* extra : {"--list-test-cases", "--reporters=ptxgate_case_list", "--no-intro=true"})
      list_argv.push_back(extra);
    doctest::Context listing;
    listing.applyCommandLine(static_cast<int>(list_argv.size()), list_argv.data());
    listing.run();
  }
  const std::vector<std::string> self = self_argv();
  double limit_s = 300;
  if (const char* env = std::getenv("PTXGATE_GPU_CASE_TIMEOUT"); env != nullptr && std::atof(env) > 0) limit_s = std::atof(env);
  char dir_template[] = "/tmp/ptxgate-gpu-cases-XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  if (dir == nullptr) {
    std::printf("FAILED: cannot make a temporary directory: %s\n", std::strerror(errno));
    return 1;
  }
  std::vector<CaseResult> results;
  const size_t total = g_listed.size();
  for (size_t i = 0; i < total; ++i) {
    const std::string& name = g_listed[i];
    std::printf("[case %zu/%zu] %s\n", i + 1, total, name.c_str());
    std::vector<std::string> child = self;
    child.push_back("--gpu-case");
    child.push_back("--no-intro=true");
    for (int a = 1; a < argc; ++a)
      if (!case_filter(argv[a])) child.push_back(argv[a]);
    child.push_back("--test-case=" + exact_filter(name));
    const std::string result_file = std::string(dir) + "/case-" + std::to_string(i);
    results.push_back(run_child(name, std::move(child), result_file, limit_s));
    std::filesystem::remove(result_file);
    const CaseResult& r = results.back();
    std::printf("[case %zu/%zu] %s %s (%.1f s)%s%s\n", i + 1, total, status_word(r), name.c_str(), r.seconds,
                r.detail.empty() ? "" : ": ", r.detail.c_str());
  }
  std::filesystem::remove_all(dir);
  size_t passed = 0, failed = 0, skipped = 0;
  for (const auto& r : results) {
    passed += r.status == CaseResult::passed;
    failed += r.status == CaseResult::failed;
    skipped += r.status == CaseResult::skipped;
  }
  std::printf("gpu cases: %zu: %zu passed, %zu failed, %zu skipped (each in its own process)\n", total, passed, failed,
              skipped);
  for (const auto& r : results)
    if (r.status == CaseResult::failed) std::printf("FAILED: %s: %s\n", r.name.c_str(), r.detail.c_str());
  for (const auto& r : results)
    if (r.status == CaseResult::skipped) std::printf("SKIPPED: %s: %s\n", r.name.c_str(), r.detail.c_str());
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

}  // namespace ptxgate::gpu_test
