// run_process: posix_spawn into a process group of its own, output captured in a private temporary directory, a time limit.
#include "ptxgate/toolchain/internal/process.hpp"

#include <cerrno>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "ptxgate/support/files.hpp"
#include "ptxgate/support/numbers.hpp"
#include "ptxgate/support/signal_cleanup.hpp"
#include "ptxgate/support/temp_dir.hpp"
#include "ptxgate/support/unique_fd.hpp"

extern char** environ;

namespace ptxgate::toolchain {
namespace {

using Clock = std::chrono::steady_clock;

/// Keeps a child's process group in the signal cleanup's table while it runs.
class ChildRegistration {
 public:
  explicit ChildRegistration(pid_t group) : slot_(support::register_child_group(group)) {}
  ChildRegistration(const ChildRegistration&) = delete;
  ChildRegistration& operator=(const ChildRegistration&) = delete;
  ~ChildRegistration() { support::unregister_child_group(slot_); }

 private:
  int slot_;
};

/// Waits for `pid` until `deadline` (none: for ever). True when it ended (its status in `status`);
/// false at the deadline, with the child still running.
bool wait_until(pid_t pid, std::optional<Clock::time_point> deadline, int& status, std::string& error) {
  auto reap = [&](int options) {
    while (true) {
      pid_t r = ::waitpid(pid, &status, options);
      if (r >= 0 || errno != EINTR) return r;
    }
  };
  if (!deadline) {
    if (reap(0) < 0) error = std::strerror(errno);
    return true;
  }
  // A pidfd becomes readable when the child ends: no polling latency. Without one (Linux < 5.3),
  // poll waitpid with a growing sleep.
  support::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  auto backoff = std::chrono::microseconds(500);
  while (true) {
    pid_t r = reap(WNOHANG);
    if (r < 0) {
      error = std::strerror(errno);
      return true;
    }
    if (r == pid) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
    if (left.count() <= 0) return false;
    if (pidfd.valid()) {
      pollfd p{pidfd.get(), POLLIN, 0};
      (void)::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30)));
    } else {
      const auto nap = std::min<std::chrono::microseconds>(backoff, left);
      timespec t{static_cast<time_t>(nap.count() / 1000000), static_cast<long>(nap.count() % 1000000) * 1000};
      ::nanosleep(&t, nullptr);
      backoff = std::min<std::chrono::microseconds>(backoff * 2, std::chrono::milliseconds(20));
    }
  }
}

std::string seconds_text(std::chrono::milliseconds limit) {
  if (limit.count() % 1000 == 0) return fmt::format("{} s", limit.count() / 1000);
  return fmt::format("{:.3f} s", static_cast<double>(limit.count()) / 1000.0);
}

}  // namespace

std::expected<std::chrono::milliseconds, std::string> tool_time_limit() {
  const char* text = std::getenv("PTXGATE_TOOL_TIMEOUT");
  if (text == nullptr || *text == '\0') return std::chrono::duration_cast<std::chrono::milliseconds>(kDefaultToolTimeLimit);
  auto seconds = support::parse_count(text, uint64_t{1} << 31);
  if (!seconds)
    return std::unexpected(fmt::format("PTXGATE_TOOL_TIMEOUT='{}' is not a number of seconds from 0 (no limit) to {}",
                                       text, uint64_t{1} << 31));
  return std::chrono::milliseconds(*seconds * 1000);
}

std::string timeout_message(const std::string& what, std::chrono::milliseconds time_limit) {
  return fmt::format("{} did not finish within {} (the tool time limit) and was stopped", what, seconds_text(time_limit));
}

std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv) {
  auto limit = tool_time_limit();
  if (!limit) return std::unexpected(limit.error());
  return run_process(argv, *limit);
}

std::expected<ProcessResult, std::string> run_process(const std::vector<std::string>& argv,
                                                      std::chrono::milliseconds time_limit) {
  if (argv.empty()) return std::unexpected(std::string("no program to run"));
  auto dir = support::TempDir::create_in_tmp("ptxgate-run-");
  if (!dir) return std::unexpected(dir.error());
  const auto out_path = (dir->path() / "stdout").string();
  const auto err_path = (dir->path() / "stderr").string();

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  // A process group of its own: at the time limit or on a signal the whole group is killed (a
  // tool that is a script kills its children with it).
  // The fatal signals stay blocked in this thread from before the spawn until the child's group is
  // registered, so a signal in between finds it registered; the child starts with the old mask.
  sigset_t fatal, old_mask;
  sigemptyset(&fatal);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&fatal, signal);
  pthread_sigmask(SIG_BLOCK, &fatal, &old_mask);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setsigmask(&attributes, &old_mask);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto started = Clock::now();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  std::optional<ChildRegistration> registration;
  if (rc == 0) registration.emplace(pid);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (rc != 0) return std::unexpected(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));

  int status = 0;
  std::string wait_error;
  ProcessResult result;
  std::optional<Clock::time_point> deadline;
  if (time_limit.count() > 0) deadline = started + time_limit;
  if (!wait_until(pid, deadline, status, wait_error)) {
    ::kill(-pid, SIGKILL);
    (void)wait_until(pid, std::nullopt, status, wait_error);
    result.timed_out = true;
  }
  registration.reset();  // reaped: its pid may be reused from here on
  if (!wait_error.empty()) return std::unexpected(fmt::format("waitpid for '{}' failed: {}", argv[0], wait_error));
  if (WIFEXITED(status)) {
    result.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_status = 128 + WTERMSIG(status);
  }
  if (result.timed_out) return result;
  support::ReadLimits limits;
  limits.max_bytes = kMaxToolOutputBytes;
  auto out = support::read_file(out_path, limits);
  if (!out) return std::unexpected(fmt::format("output of '{}': {}", argv[0], out.error().message));
  auto err = support::read_file(err_path, limits);
  if (!err) return std::unexpected(fmt::format("output of '{}': {}", argv[0], err.error().message));
  result.stdout_text = std::move(*out);
  result.stderr_text = std::move(*err);
  return result;
}

std::string first_lines(const std::string& text, size_t max_lines) {
  std::istringstream in(text);
  std::string out;
  size_t n = 0;
  for (std::string line; std::getline(in, line) && n < max_lines; ++n) out += (n ? "\n" : "") + line;
  return out;
}

}  // namespace ptxgate::toolchain
