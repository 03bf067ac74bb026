// Bounded reads; writes that rename over regular files and write through devices and FIFOs; checked stdout.
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

namespace {

/// PG5003 for the output `path` with `reason`, and a fix that fits it.
std::unexpected<diag::Diagnostics> write_failure(const std::string& path, const std::string& reason,
                                                 std::string fix = "check that the directory exists, is writable "
                                                                   "and has free space") {
  diag::Diagnostics d;
  diag::Location where;
  where.file = path;
  d.add(diag::Code::cannot_write_file, fmt::format("cannot write '{}': {}", path, reason), where, std::move(fix));
  return std::unexpected(std::move(d));
}

/// The directory part of `path` ("." when it has none, "/" for a file in the root).
std::string directory_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Writes all of `bytes` to `fd`; 0 or the errno of the failed write.
int write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

/// Where an output path leads: the path a symbolic link chain ends at (relative link targets
/// resolved against the link's directory), with what is there now (`exists` false: nothing,
/// e.g. a dangling link's target).
struct OutputTarget {
  std::string path;
  bool exists = false;
  struct stat st {};
};

std::expected<OutputTarget, std::string> resolve_output(const std::string& path) {
  constexpr int kMaxLinks = 40;  // Linux's own limit (ELOOP)
  OutputTarget t;
  t.path = path;
  for (int hops = 0;; ++hops) {
    if (::lstat(t.path.c_str(), &t.st) != 0) {
      if (errno == ENOENT) return t;  // created where the chain ends
      return std::unexpected(errno_text(errno));
    }
    if (!S_ISLNK(t.st.st_mode)) {
      t.exists = true;
      return t;
    }
    if (hops == kMaxLinks) return std::unexpected(errno_text(ELOOP));
    std::string target(4096, '\0');
    ssize_t n = ::readlink(t.path.c_str(), target.data(), target.size());
    if (n < 0) return std::unexpected(errno_text(errno));
    if (static_cast<size_t>(n) >= target.size()) return std::unexpected(errno_text(ENAMETOOLONG));
    target.resize(static_cast<size_t>(n));
    t.path = target.starts_with('/') ? target : directory_of(t.path) + "/" + target;
  }
}

/// Writes through an existing device or FIFO, in place: it is never replaced. The open does not
/// block (a FIFO without a reader is ENXIO, reported); the writes then block as usual.
std::expected<void, diag::Diagnostics> write_through(const std::string& shown, const OutputTarget& t,
                                                     std::string_view bytes) {
  UniqueFd fd(::open(t.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW));
  if (!fd.valid()) {
    int err = errno;
    if (err == ENXIO && S_ISFIFO(t.st.st_mode))
      return write_failure(shown, "it is a FIFO that no process is reading",
                           "start the reader first, or write to a regular file");
    if (err == ENXIO && S_ISSOCK(t.st.st_mode))
      return write_failure(shown, "it is a socket, which cannot be opened as a file", "write to a regular file");
    return write_failure(shown, errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return write_failure(shown, errno_text(errno));
  if (st.st_dev != t.st.st_dev || st.st_ino != t.st.st_ino)
    return write_failure(shown, "it was replaced while it was opened", "write it again");
  int fl = ::fcntl(fd.get(), F_GETFL);
  if (fl >= 0) (void)::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK);
  if (int err = write_all(fd.get(), bytes)) return write_failure(shown, errno_text(err));
  if (::close(fd.release()) != 0) return write_failure(shown, errno_text(errno));
  return {};
}

/// Writes a new regular file at `t.path` through a temporary in its directory, renamed over it.
std::expected<void, diag::Diagnostics> replace_atomically(const std::string& shown, const OutputTarget& t,
                                                          std::string_view bytes) {
  const std::string dir = directory_of(t.path);
  const std::string base = t.path.substr(t.path.rfind('/') == std::string::npos ? 0 : t.path.rfind('/') + 1);
  if (base.empty() || base == "." || base == "..") return write_failure(shown, "the path names a directory");
  std::string tmp = fmt::format("{}/.{}.tmp-XXXXXX", dir, base);
  UniqueFd fd(::mkstemp(tmp.data()));
  if (!fd.valid()) return write_failure(shown, errno_text(errno));
  auto fail_removing = [&](int err) {
    ::unlink(tmp.c_str());
    return write_failure(shown, errno_text(err));
  };
  if (int err = write_all(fd.get(), bytes)) return fail_removing(err);
  if (::fchmod(fd.get(), 0644) != 0 || ::fsync(fd.get()) != 0) return fail_removing(errno);
  if (::close(fd.release()) != 0) return fail_removing(errno);
  // Something may have appeared in the path meanwhile: never rename over a directory or a device.
  struct stat now {};
  if (::lstat(t.path.c_str(), &now) == 0 && !S_ISREG(now.st_mode)) {
    ::unlink(tmp.c_str());
    return write_failure(shown, "it was replaced while it was written", "write it again");
  }
  if (::rename(tmp.c_str(), t.path.c_str()) != 0) return fail_removing(errno);
  return {};
}

}  // namespace

std::expected<void, diag::Diagnostics> write_file_atomically(const std::string& path, std::string_view bytes) {
  if (path.empty()) return write_failure(path, "the path is empty", "name an output file");
  auto target = resolve_output(path);
  if (!target) return write_failure(path, target.error());
  if (!target->exists || S_ISREG(target->st.st_mode)) return replace_atomically(path, *target, bytes);
  const mode_t mode = target->st.st_mode;
  if (S_ISDIR(mode))
    return write_failure(path, target->path == path ? std::string("it is a directory")
                                                    : fmt::format("it leads to the directory '{}'", target->path),
                         "name a file (e.g. a path inside that directory)");
  return write_through(path, *target, bytes);
}

std::expected<void, diag::Diagnostics> refuse_output_onto_input(const std::string& output, const std::string& input) {
  if (output.empty() || output == "-" || input.empty() || input == "-") return {};
  struct stat out {}, in {};
  if (::stat(output.c_str(), &out) != 0 || ::stat(input.c_str(), &in) != 0) return {};
  if (out.st_dev != in.st_dev || out.st_ino != in.st_ino) return {};
  return write_failure(output, fmt::format("it is the input file '{}'; writing it would replace the input", input),
                       "write the output to another path");
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
