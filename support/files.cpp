// Bounded reads (non-blocking open, fstat, capped read), atomic writes (temporary + rename), checked stdout.
#include "ptxgate/support/files.hpp"
#include "ptxgate/support/unique_fd.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>

#include <fmt/format.h>

namespace ptxgate::support {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

std::string_view file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace

std::expected<std::string, ReadError> read_descriptor(int fd, uint64_t max_bytes, std::string_view shown_path) {
  std::string text;
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      return std::unexpected(
          ReadError{ReadFailure::read_failed, fmt::format("error while reading '{}': {}", shown_path, errno_text(err)), err});
    }
    if (n == 0) break;
    if (text.size() + static_cast<uint64_t>(n) > max_bytes)
      return std::unexpected(ReadError{ReadFailure::too_large,
                                       fmt::format("'{}' is larger than the limit of {} bytes", shown_path, max_bytes)});
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

namespace {

/// The one bounded read behind read_file and read_file_at: `name` relative to `dir_fd`
/// (AT_FDCWD for a plain path) is stat'ed first, so a special file is refused without being
/// opened; the non-blocking open must then show the same regular file, still within the bound.
std::expected<std::string, ReadError> read_regular_at(int dir_fd, const char* name, const ReadLimits& limits,
                                                      std::string_view shown) {
  auto fail = [](ReadFailure failure, std::string message, int err = 0) {
    return std::unexpected(ReadError{failure, std::move(message), err});
  };
  auto kind_error = [&](mode_t mode) {
    if (S_ISLNK(mode)) return fail(ReadFailure::not_regular, fmt::format("'{}' is a symbolic link", shown));
    return fail(ReadFailure::not_regular, fmt::format("'{}' is {}, not a regular file", shown, file_kind(mode)));
  };
  auto size_error = [&](const struct stat& st) {
    return fail(ReadFailure::too_large, fmt::format("'{}' is {} bytes; the limit is {} bytes", shown,
                                                    static_cast<uint64_t>(st.st_size), limits.max_bytes));
  };
  struct stat before {};
  if (::fstatat(dir_fd, name, &before, limits.follow_symlinks ? 0 : AT_SYMLINK_NOFOLLOW) != 0) {
    int err = errno;
    return fail(ReadFailure::open_failed, fmt::format("cannot open '{}': {}", shown, errno_text(err)), err);
  }
  if (!S_ISREG(before.st_mode)) return kind_error(before.st_mode);
  if (static_cast<uint64_t>(before.st_size) > limits.max_bytes) return size_error(before);

  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  if (!limits.follow_symlinks) flags |= O_NOFOLLOW;
  UniqueFd fd(::openat(dir_fd, name, flags));
  if (!fd.valid()) {
    int err = errno;
    if (err == ELOOP && !limits.follow_symlinks) return kind_error(S_IFLNK);
    return fail(ReadFailure::open_failed, fmt::format("cannot open '{}': {}", shown, errno_text(err)), err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    int err = errno;
    return fail(ReadFailure::open_failed, fmt::format("cannot stat '{}': {}", shown, errno_text(err)), err);
  }
  if (!S_ISREG(st.st_mode)) return kind_error(st.st_mode);
  if (st.st_dev != before.st_dev || st.st_ino != before.st_ino)
    return fail(ReadFailure::open_failed, fmt::format("'{}' was replaced while it was opened", shown));
  if (static_cast<uint64_t>(st.st_size) > limits.max_bytes) return size_error(st);
  // A regular file opened with O_NONBLOCK reads normally; clear the flag anyway for network file systems.
  int fl = ::fcntl(fd.get(), F_GETFL);
  if (fl >= 0) (void)::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK);
  return read_descriptor(fd.get(), limits.max_bytes, shown);
}

}  // namespace

std::expected<std::string, ReadError> read_file(const std::string& path, const ReadLimits& limits) {
  if (path == "-") return read_descriptor(STDIN_FILENO, limits.max_bytes, "<stdin>");
  return read_regular_at(AT_FDCWD, path.c_str(), limits, path);
}

std::expected<std::string, ReadError> read_file_at(int dir_fd, std::string_view name, const ReadLimits& limits,
                                                   std::string_view shown_path) {
  const std::string component(name);
  const std::string_view shown = shown_path.empty() ? std::string_view(component) : shown_path;
  // One component only: "a/b" would resolve "a" with links followed, ".." would leave dir_fd.
  if (component.empty() || component == "." || component == ".." || component.find('/') != std::string::npos)
    return std::unexpected(ReadError{ReadFailure::open_failed,
                                     fmt::format("cannot open '{}': not a single file name", shown), EINVAL});
  return read_regular_at(dir_fd, component.c_str(), limits, shown);
}

std::expected<std::string, diag::Diagnostics> read_file_diagnosed(const std::string& path, std::string_view what,
                                                                  const ReadLimits& limits, diag::Code too_large_code) {
  auto text = read_file(path, limits);
  if (text) return std::move(*text);
  diag::Diagnostics d;
  diag::Location where;
  where.file = path == "-" ? "<stdin>" : path;
  if (text.error().failure == ReadFailure::too_large)
    d.add(too_large_code, fmt::format("{}: {}", what, text.error().message), where,
          fmt::format("give a {} of at most {} bytes", what, limits.max_bytes));
  else
    d.add(diag::Code::cannot_read_file, fmt::format("{}: {}", what, text.error().message), where,
          "check the path and that it names a readable regular file");
  return std::unexpected(std::move(d));
}

std::expected<void, diag::Diagnostics> write_file_atomically(const std::string& path, std::string_view bytes) {
  auto fail = [&](std::string reason) {
    diag::Diagnostics d;
    diag::Location where;
    where.file = path;
    d.add(diag::Code::cannot_write_file, fmt::format("cannot write '{}': {}", path, reason), where,
          "check that the directory exists, is writable and has free space");
    return std::unexpected(std::move(d));
  };
  std::string dir = ".";
  if (auto slash = path.rfind('/'); slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  if (base.empty()) return fail("the path names a directory");
  std::string tmp = fmt::format("{}/.{}.tmp-XXXXXX", dir, base);
  UniqueFd fd(::mkstemp(tmp.data()));
  if (!fd.valid()) return fail(errno_text(errno));
  auto remove_tmp = [&] { ::unlink(tmp.c_str()); };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      remove_tmp();
      return fail(errno_text(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd.get(), 0644) != 0 || ::fsync(fd.get()) != 0) {
    int err = errno;
    remove_tmp();
    return fail(errno_text(err));
  }
  if (::close(fd.release()) != 0) {
    int err = errno;
    remove_tmp();
    return fail(errno_text(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    remove_tmp();
    return fail(errno_text(err));
  }
  return {};
}

std::expected<void, diag::Diagnostics> write_stdout(std::string_view bytes) {
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), stdout) == bytes.size();
  ok = std::fflush(stdout) == 0 && ok && !std::ferror(stdout);
  if (ok) return {};
  int err = errno;
  diag::Diagnostics d;
  d.add(diag::Code::cannot_write_file, fmt::format("cannot write to standard output: {}", errno_text(err)), {},
        "check where standard output goes (a full disk, a closed pipe)");
  return std::unexpected(std::move(d));
}

}  // namespace ptxgate::support
