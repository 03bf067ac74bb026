// Fixed tables of temporary directories and child process groups, emptied by an async-signal-safe handler.
#include "ptxgate/support/signal_cleanup.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ptxgate::support {
namespace {

constexpr int kDirectorySlots = 256;
constexpr int kChildSlots = 256;
constexpr size_t kMaxPath = 4096;

enum SlotState : int { kFree = 0, kFilling = 1, kActive = 2 };

struct DirectorySlot {
  std::atomic<int> state{kFree};
  char path[kMaxPath];
};

DirectorySlot g_directories[kDirectorySlots];
std::atomic<pid_t> g_children[kChildSlots];
std::atomic<bool> g_installed{false};
std::atomic<bool> g_cleaning{false};

/// Unlinks every entry of the directory `path` (not recursing: the registered directories are
/// flat), then removes it. getdents64, unlinkat and rmdir are plain system calls.
void remove_flat_directory(const char* path) noexcept {
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buffer[4096];
    while (true) {
      long n = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
      if (n <= 0) break;
      for (long offset = 0; offset < n;) {
        // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
        unsigned short reclen = 0;
        std::memcpy(&reclen, buffer + offset + 16, sizeof reclen);
        const char* name = buffer + offset + 19;
        if (!(name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))) ::unlinkat(fd, name, 0);
        if (reclen == 0) break;
        offset += reclen;
      }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

void on_fatal_signal(int signal) {
  const int saved = errno;
  cleanup_after_signal();
  // Die of the same signal, as without the handler (the default action, now unblocked).
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  ::sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
  sigset_t unblock;
  ::sigemptyset(&unblock);
  ::sigaddset(&unblock, signal);
  ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  ::raise(signal);
  errno = saved;
}

}  // namespace

void cleanup_after_signal() noexcept {
  if (g_cleaning.exchange(true)) return;  // a second signal during the cleanup: the first one finishes it
  for (auto& child : g_children) {
    const pid_t group = child.load();
    if (group <= 0) continue;
    ::kill(-group, SIGKILL);
    int status = 0;
    while (::waitpid(group, &status, 0) < 0 && errno == EINTR) {
    }
  }
  for (auto& slot : g_directories)
    if (slot.state.load() == kActive) remove_flat_directory(slot.path);
  g_cleaning.store(false);
}

void install_signal_cleanup() {
  if (g_installed.exchange(true)) return;
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    ::sigemptyset(&action.sa_mask);
    for (int other : {SIGINT, SIGTERM, SIGHUP}) ::sigaddset(&action.sa_mask, other);
    ::sigaction(signal, &action, nullptr);
  }
}

int register_temp_directory(const char* path) noexcept {
  if (path == nullptr || std::strlen(path) >= kMaxPath) return -1;
  for (int i = 0; i < kDirectorySlots; ++i) {
    int expected = kFree;
    if (!g_directories[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::strcpy(g_directories[i].path, path);
    g_directories[i].state.store(kActive);
    return i;
  }
  return -1;
}

void unregister_temp_directory(int slot) noexcept {
  if (slot >= 0 && slot < kDirectorySlots) g_directories[slot].state.store(kFree);
}

int register_child_group(pid_t group) noexcept {
  if (group <= 0) return -1;
  for (int i = 0; i < kChildSlots; ++i) {
    pid_t expected = 0;
    if (g_children[i].compare_exchange_strong(expected, group)) return i;
  }
  return -1;
}

void unregister_child_group(int slot) noexcept {
  if (slot >= 0 && slot < kChildSlots) g_children[slot].store(0);
}

}  // namespace ptxgate::support
