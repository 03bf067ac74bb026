// Files without surprises: bounded, type-checked reads; writes that never replace a device, FIFO or link.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::support {

/// How read_file treats its path.
struct ReadLimits {
  uint64_t max_bytes = 16 * 1024 * 1024;  ///< larger files are refused before they are read
  bool follow_symlinks = true;            ///< false: a symbolic link as the last component is refused
};

/// Why a read failed, for callers that pick their own diagnostic code.
enum class ReadFailure : uint8_t { open_failed, not_regular, too_large, read_failed };

struct ReadError {
  ReadFailure failure;
  std::string message;  ///< "'p' is a directory", "'p' is 20000000 bytes; the limit is 16777216", ...
  int error_number = 0;  ///< errno of a failed open, stat or read (ENOENT: the file does not exist); else 0
};

/// Reads a regular file whole. The path is checked with stat (lstat when links are not
/// followed) before it is opened, so a FIFO, device or socket is refused without being opened;
/// the open is non-blocking (a file swapped for a FIFO in between never blocks the call) and
/// fstat must confirm the same regular file no larger than `limits.max_bytes`. The read has
/// the same bound (a file that grows while it is read is refused too), so a sparse file of
/// any apparent size costs no memory. "-" reads standard input, bounded the same way.
[[nodiscard]] std::expected<std::string, ReadError> read_file(const std::string& path, const ReadLimits& limits = {});

/// read_file for `name`, one path component (no '/'), relative to the open directory `dir_fd`
/// (openat/fstatat): the same checks, bound and errors. `shown_path` names the file in
/// messages (e.g. the full path); empty: `name`. With `limits.follow_symlinks` false a symbolic
/// link is refused, never followed, so nothing outside `dir_fd` is read.
[[nodiscard]] std::expected<std::string, ReadError> read_file_at(int dir_fd, std::string_view name,
                                                                 const ReadLimits& limits,
                                                                 std::string_view shown_path = {});

/// read_file, then a located PG5001 (cannot read) or `too_large_code` diagnostic naming
/// `what` ("device profile", "argument file") and, for size, the value and the limit.
[[nodiscard]] std::expected<std::string, diag::Diagnostics> read_file_diagnosed(
    const std::string& path, std::string_view what, const ReadLimits& limits = {},
    diag::Code too_large_code = diag::Code::cannot_read_file);

/// Reads from an open descriptor (already checked by the caller) at most `max_bytes`;
/// more than that is an error. read_file and read_file_at end here; standard input too.
[[nodiscard]] std::expected<std::string, ReadError> read_descriptor(int fd, uint64_t max_bytes,
                                                                    std::string_view shown_path);

/// Writes `bytes` to the output `path` the way a compiler's `-o` does, by what is there now:
/// - nothing, or a regular file: a temporary file in the same directory, flushed and renamed over
///   `path`, so a failure leaves `path` as it was and removes the temporary;
/// - a symbolic link: followed (its chain, relative targets against each link's directory), and
///   its final target written by these rules; a dangling link creates its target;
/// - a character or block device, a FIFO: opened and written in place, never replaced (/dev/null
///   discards; /dev/full fails with "No space left on device"). The open never blocks: a FIFO that
///   no process reads is refused;
/// - a directory, a socket: refused.
/// Failures are PG5003 naming the path and the reason (e.g. "No space left on device").
[[nodiscard]] std::expected<void, diag::Diagnostics> write_file_atomically(const std::string& path,
                                                                           std::string_view bytes);

/// PG5003 when the output `output` is the same file as `input` (device and inode, after links,
/// so another spelling of the same path is caught too): writing it would destroy the input. Also
/// fine when either does not exist yet or is standard input/output ("-").
[[nodiscard]] std::expected<void, diag::Diagnostics> refuse_output_onto_input(const std::string& output,
                                                                              const std::string& input);

/// Writes `bytes` to standard output and flushes; PG5003 when any byte cannot be written
/// (a full disk, a closed pipe).
[[nodiscard]] std::expected<void, diag::Diagnostics> write_stdout(std::string_view bytes);

}  // namespace ptxgate::support
