// Link-safe directory operations: openat/mkdirat/unlinkat with O_NOFOLLOW and AT_SYMLINK_NOFOLLOW.
#include "ptxgate/support/directory.hpp"

#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace ptxgate::support {
namespace {

bool single_component(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

std::expected<std::vector<std::string>, int> list_directory(int dir_fd) {
  int copy = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return std::unexpected(errno);
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    int err = errno;
    ::close(copy);
    return std::unexpected(err);
  }
  ::rewinddir(dir);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return std::unexpected(err);
  return names;
}

std::expected<UniqueFd, int> open_directory(const char* path) {
  UniqueFd fd(::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return std::unexpected(errno);
  return fd;
}

std::expected<UniqueFd, int> open_directory_at(int dir_fd, std::string_view name) {
  const std::string component(name);
  if (!single_component(component)) return std::unexpected(EINVAL);
  UniqueFd fd(::openat(dir_fd, component.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return std::unexpected(errno);
  return fd;
}

int write_new_file_at(int dir_fd, std::string_view name, std::string_view bytes) {
  const std::string component(name);
  if (!single_component(component)) return EINVAL;
  UniqueFd fd(::openat(dir_fd, component.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return errno;
  while (!bytes.empty()) {
    ssize_t n = ::write(fd.get(), bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  if (::fsync(fd.get()) != 0) return errno;
  return ::close(fd.release()) == 0 ? 0 : errno;
}

int remove_tree_at(int dir_fd, std::string_view name, int max_depth) {
  const std::string component(name);
  if (!single_component(component)) return EINVAL;
  struct stat st {};
  if (::fstatat(dir_fd, component.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : errno;
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(dir_fd, component.c_str(), 0) == 0 || errno == ENOENT) return 0;
    return errno;
  }
  if (max_depth <= 0) return ELOOP;
  auto sub = open_directory_at(dir_fd, component);
  if (!sub) {
    if (sub.error() == ENOENT) return 0;
    // Replaced by a non-directory since the fstatat: unlink that instead, still without following it.
    if (sub.error() == ELOOP || sub.error() == ENOTDIR)
      return ::unlinkat(dir_fd, component.c_str(), 0) == 0 || errno == ENOENT ? 0 : errno;
    return sub.error();
  }
  auto names = list_directory(sub->get());
  if (!names) return names.error();
  int first_error = 0;
  for (const auto& n : *names)
    if (int err = remove_tree_at(sub->get(), n, max_depth - 1); err != 0 && first_error == 0) first_error = err;
  if (first_error != 0) return first_error;
  if (::unlinkat(dir_fd, component.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return 0;
  return errno;
}

}  // namespace ptxgate::support
