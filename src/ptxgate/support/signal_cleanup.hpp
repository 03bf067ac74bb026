// What a fatal signal must not leave behind: private temporary directories and the tools running in them.
#pragma once

#include <sys/types.h>

namespace ptxgate::support {

/// Installs handlers for SIGINT, SIGTERM and SIGHUP (only those still at their default
/// disposition, so a program's own handlers are kept) that run cleanup_after_signal() and then
/// let the process die of the same signal, as it would have without them. The CLI calls it
/// once at start; it is idempotent.
void install_signal_cleanup();

/// Kills every registered child process group (a ptxas, an nvdisasm) and waits for it, then
/// removes every registered temporary directory: the files in it, then the directory (the
/// directories registered are flat: a tool's input, output and captured streams). Only
/// async-signal-safe calls: a program with its own handlers may call it from them.
void cleanup_after_signal() noexcept;

/// Registers a temporary directory (a path of at most 4095 bytes) for
/// cleanup_after_signal(). Returns its slot, or -1 when the table of 256 is full or the path too
/// long (then a signal leaves it behind, as before). TempDir does this for every directory it makes.
int register_temp_directory(const char* path) noexcept;
/// Forgets a slot of register_temp_directory (-1 is ignored).
void unregister_temp_directory(int slot) noexcept;

/// Registers a running child's process group (its pid, as the child leads its own group) for
/// cleanup_after_signal(). Returns its slot, or -1 when the table is full.
int register_child_group(pid_t group) noexcept;
/// Forgets a slot of register_child_group (-1 is ignored).
void unregister_child_group(int slot) noexcept;

}  // namespace ptxgate::support
