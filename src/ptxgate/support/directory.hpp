// Directory operations relative to an open directory descriptor that never follow a symbolic
// link: open a subdirectory, create a file, remove a tree. Nothing outside the directory is touched.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/support/unique_fd.hpp"

namespace ptxgate::support {

/// Opens `path` (followed as given, links included) as a directory; the error is an errno value.
[[nodiscard]] std::expected<UniqueFd, int> open_directory(const char* path);

/// Opens `name`, one component relative to `dir_fd`, as a directory without following a link:
/// a symbolic link or any other non-directory gives ENOTDIR (or ELOOP: kernels differ), a
/// name that is not one component (empty, ".", "..", containing '/') EINVAL.
[[nodiscard]] std::expected<UniqueFd, int> open_directory_at(int dir_fd, std::string_view name);

/// The names in the open directory `dir_fd` ("." and ".." left out, links not followed);
/// the error is an errno value.
[[nodiscard]] std::expected<std::vector<std::string>, int> list_directory(int dir_fd);

/// Creates the new regular file `name` in `dir_fd` (O_EXCL, O_NOFOLLOW: an existing file or
/// link is never written through), writes `bytes`, fsyncs and closes it. 0 or an errno value.
[[nodiscard]] int write_new_file_at(int dir_fd, std::string_view name, std::string_view bytes);

/// Removes `name` in `dir_fd`: a link, file, FIFO or socket is unlinked itself (a link's target
/// is never touched); a directory is emptied the same way, depth-first, without following any
/// link, then removed. A tree deeper than `max_depth` directories is not removed (ELOOP).
/// 0 when `name` is gone (ENOENT counts as gone), else the first errno met.
[[nodiscard]] int remove_tree_at(int dir_fd, std::string_view name, int max_depth = 16);

}  // namespace ptxgate::support
