// UniqueFd: one owned POSIX file descriptor, closed when its owner goes away.
#pragma once

#include <unistd.h>

#include <utility>

namespace ptxgate::support {

/// Owns one file descriptor (or none, -1) and closes it on destruction. Movable, not copyable.
class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  /// The descriptor, still owned; -1 when none.
  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  /// Gives up ownership without closing (e.g. to check close(2)'s result yourself).
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
  /// Closes the owned descriptor, if any, and takes `fd`.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace ptxgate::support
