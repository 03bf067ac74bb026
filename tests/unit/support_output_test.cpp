// src/ptxgate/support/: output paths as a compiler's -o treats them: files replaced atomically, links followed, devices and FIFOs written through.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "ptxgate/support/files.hpp"
#include "ptxgate/support/temp_dir.hpp"
#include "ptxgate/support/unique_fd.hpp"

namespace fs = std::filesystem;
using namespace ptxgate;

namespace {

/// A scratch directory, removed with its contents at the end of the test.
struct ScratchDir {
  support::TempDir dir = support::TempDir::create_in_tmp("ptxgate-output-").value();
  const fs::path& path = dir.path();
};

struct stat lstat_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st;
}

std::string contents(const fs::path& p) { return support::read_file(p.string()).value(); }

std::string message_of(const std::expected<void, diag::Diagnostics>& r) {
  REQUIRE_FALSE(r);
  REQUIRE(r.error().size() == 1);
  CHECK(r.error().items()[0].code == diag::Code::cannot_write_file);
  return r.error().items()[0].message;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("support output: a FIFO is written through when read, refused at once when not, and never replaced") {
  ScratchDir dir;
  const auto fifo = dir.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto before = lstat_of(fifo);
  // No reader: an error, not a hang (the open does not block).
  CHECK(contains(message_of(support::write_file_atomically(fifo.string(), "ptx")), "no process is reading"));
  // A reader (opened first, without blocking): the bytes arrive through the FIFO.
  support::UniqueFd reader(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  REQUIRE(reader.valid());
  REQUIRE(support::write_file_atomically(fifo.string(), "through the fifo"));
  char buffer[64] = {};
  const ssize_t n = ::read(reader.get(), buffer, sizeof buffer);
  CHECK(std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0) == "through the fifo");
  const auto after = lstat_of(fifo);
  CHECK(S_ISFIFO(after.st_mode));
  CHECK(after.st_ino == before.st_ino);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
  CHECK(entries == 1);  // no temporary left beside it
}

TEST_CASE("support output: a symbolic link is followed; its target is replaced, a dangling one created") {
  ScratchDir dir;
  fs::create_directory(dir.path / "sub");
  const auto target = dir.path / "sub" / "target.ptx";
  { std::ofstream(target) << "old"; }
  const auto old_inode = lstat_of(target).st_ino;
  SUBCASE("a chain of relative links") {
    fs::create_symlink("sub/target.ptx", dir.path / "second");
    fs::create_symlink("second", dir.path / "first");
    REQUIRE(support::write_file_atomically((dir.path / "first").string(), "new"));
    CHECK(fs::is_symlink(dir.path / "first"));
    CHECK(fs::is_symlink(dir.path / "second"));
    CHECK(fs::read_symlink(dir.path / "first") == "second");
    CHECK(contents(target) == "new");
    CHECK(lstat_of(target).st_ino != old_inode);  // replaced by a rename, not rewritten in place
  }
  SUBCASE("an absolute link") {
    fs::create_symlink(target, dir.path / "abs");
    REQUIRE(support::write_file_atomically((dir.path / "abs").string(), "new"));
    CHECK(fs::is_symlink(dir.path / "abs"));
    CHECK(contents(target) == "new");
  }
  SUBCASE("a dangling link creates its target") {
    fs::create_symlink("sub/created.ptx", dir.path / "dangling");
    REQUIRE(support::write_file_atomically((dir.path / "dangling").string(), "created"));
    CHECK(fs::is_symlink(dir.path / "dangling"));
    CHECK(contents(dir.path / "sub" / "created.ptx") == "created");
  }
  SUBCASE("a link loop is an error") {
    fs::create_symlink("loop-b", dir.path / "loop-a");
    fs::create_symlink("loop-a", dir.path / "loop-b");
    CHECK(contains(message_of(support::write_file_atomically((dir.path / "loop-a").string(), "x")),
                   std::strerror(ELOOP)));
    CHECK(fs::is_symlink(dir.path / "loop-a"));
  }
  size_t in_sub = 0;
  for (const auto& e : fs::directory_iterator(dir.path / "sub"))
    if (e.path().filename().string().starts_with(".")) ++in_sub;
  CHECK(in_sub == 0);  // no temporary left behind
}

TEST_CASE("support output: a directory and a socket are refused and left alone") {
  ScratchDir dir;
  fs::create_directory(dir.path / "out.ptx");
  { std::ofstream(dir.path / "out.ptx" / "keep") << "keep"; }
  CHECK(contains(message_of(support::write_file_atomically((dir.path / "out.ptx").string(), "x")), "is a directory"));
  fs::create_directory_symlink("out.ptx", dir.path / "to-dir");
  CHECK(contains(message_of(support::write_file_atomically((dir.path / "to-dir").string(), "x")),
                 "leads to the directory"));
  CHECK(contents(dir.path / "out.ptx" / "keep") == "keep");
  CHECK(fs::is_symlink(dir.path / "to-dir"));

  const auto socket_path = dir.path / "socket";
  support::UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(sock.valid());
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(socket_path.string().size() < sizeof address.sun_path);
  std::strcpy(address.sun_path, socket_path.c_str());
  REQUIRE(::bind(sock.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  CHECK(contains(message_of(support::write_file_atomically(socket_path.string(), "x")), "socket"));
  CHECK(S_ISSOCK(lstat_of(socket_path).st_mode));
}

TEST_CASE("support output: /dev/null and /dev/full are written through, never replaced") {
  // The only real device nodes a test touches, and only by writing through them.
  for (const char* path : {"/dev/null", "/dev/full"}) {
    CAPTURE(path);
    struct stat before {};
    if (::stat(path, &before) != 0 || !S_ISCHR(before.st_mode) || ::access(path, W_OK) != 0) {
      MESSAGE("skipped: ", path, " is not a writable character device here");
      continue;
    }
    auto written = support::write_file_atomically(path, "through the device");
    if (std::string_view(path) == "/dev/null") {
      CHECK(written);
    } else {
      CHECK(contains(message_of(written), std::strerror(ENOSPC)));
    }
    const auto after = lstat_of(path);
    CHECK(S_ISCHR(after.st_mode));
    CHECK(after.st_ino == before.st_ino);
    CHECK(after.st_rdev == before.st_rdev);
  }
}

TEST_CASE("support output: a character device made with mknod is written through, never replaced") {
  ScratchDir dir;
  const auto node = dir.path / "null-copy";
  if (::mknod(node.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0) {
    MESSAGE("skipped: mknod of a character device is not permitted here (", std::strerror(errno), ")");
    return;
  }
  const auto before = lstat_of(node);
  auto written = support::write_file_atomically(node.string(), "through the copy of /dev/null");
  // On a file system mounted nodev the device cannot be opened: then an error, still never a replacement.
  if (!written) CHECK(contains(message_of(written), std::strerror(EACCES)));
  const auto after = lstat_of(node);
  CHECK(S_ISCHR(after.st_mode));
  CHECK(after.st_ino == before.st_ino);
  CHECK(after.st_rdev == ::makedev(1, 3));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("support output: an output that is the input is refused, however it is spelled") {
  ScratchDir dir;
  const auto source = dir.path / "k.pg";
  { std::ofstream(source) << "kernel"; }
  fs::create_symlink("k.pg", dir.path / "link.pg");
  fs::create_hard_link(source, dir.path / "hard.pg");
  fs::create_directory(dir.path / "sub");
  for (const fs::path& output : {source, dir.path / "sub" / ".." / "k.pg", dir.path / "link.pg", dir.path / "hard.pg"}) {
    CAPTURE(output);
    CHECK(contains(message_of(support::refuse_output_onto_input(output.string(), source.string())), "is the input"));
  }
  CHECK(support::refuse_output_onto_input((dir.path / "new.ptx").string(), source.string()));
  { std::ofstream(dir.path / "other.ptx") << "other"; }
  CHECK(support::refuse_output_onto_input((dir.path / "other.ptx").string(), source.string()));
  CHECK(support::refuse_output_onto_input("-", source.string()));
  CHECK(support::refuse_output_onto_input(source.string(), "-"));
  CHECK(contents(source) == "kernel");
}
