// src/ptxgate/support/: bounded reads of special files, atomic writes, the number grammar.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "ptxgate/support/files.hpp"
#include "ptxgate/support/numbers.hpp"
#include "ptxgate/support/unique_fd.hpp"

namespace fs = std::filesystem;
using namespace ptxgate;

namespace {
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string t = (fs::temp_directory_path() / "ptxgate-support-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~ScratchDir() { fs::remove_all(path); }
};
}  // namespace

TEST_CASE("support: read_file refuses FIFOs, directories and devices without blocking") {
  ScratchDir dir;
  auto fifo = dir.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto r = support::read_file(fifo.string());
  REQUIRE_FALSE(r);
  CHECK(r.error().failure == support::ReadFailure::not_regular);
  CHECK(r.error().message.find("FIFO") != std::string::npos);
  auto d = support::read_file(dir.path.string());
  REQUIRE_FALSE(d);
  CHECK(d.error().message.find("directory") != std::string::npos);
  auto z = support::read_file("/dev/zero");
  REQUIRE_FALSE(z);
  CHECK(z.error().failure == support::ReadFailure::not_regular);
}

TEST_CASE("support: read_file caps the size before reading and follows links only when asked") {
  ScratchDir dir;
  auto big = dir.path / "big";
  {
    std::ofstream out(big);
    out << std::string(1000, 'x');
  }
  CHECK(support::read_file(big.string(), {.max_bytes = 1000}).value().size() == 1000);
  auto r = support::read_file(big.string(), {.max_bytes = 999});
  REQUIRE_FALSE(r);
  CHECK(r.error().failure == support::ReadFailure::too_large);
  CHECK(r.error().message.find("999") != std::string::npos);
  auto link = dir.path / "link";
  fs::create_symlink(big, link);
  CHECK(support::read_file(link.string()).has_value());
  auto nofollow = support::read_file(link.string(), {.follow_symlinks = false});
  REQUIRE_FALSE(nofollow);
  CHECK(nofollow.error().message.find("symbolic link") != std::string::npos);
  auto diagnosed = support::read_file_diagnosed(big.string(), "device profile", {.max_bytes = 10});
  REQUIRE_FALSE(diagnosed);
  CHECK(diagnosed.error().items().front().code == diag::Code::cannot_read_file);
  CHECK(diagnosed.error().items().front().message.find("device profile") != std::string::npos);
}

TEST_CASE("support: UniqueFd closes its descriptor once, and a move hands it over") {
  auto is_open = [](int fd) { return ::fcntl(fd, F_GETFD) != -1; };
  int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(raw >= 0);
  {
    support::UniqueFd first(raw);
    support::UniqueFd second(std::move(first));
    CHECK_FALSE(first.valid());
    CHECK(second.get() == raw);
    CHECK(is_open(raw));
    support::UniqueFd third;
    third = std::move(second);
    CHECK(third.get() == raw);
  }
  CHECK_FALSE(is_open(raw));
}

TEST_CASE("support: read_file_at reads one name relative to a directory, never through a link or out of it") {
  ScratchDir dir;
  fs::create_directories(dir.path / "root");
  {
    std::ofstream(dir.path / "root" / "inside") << "inside";
    std::ofstream(dir.path / "secret") << "outside the root";
  }
  fs::create_symlink(dir.path / "secret", dir.path / "root" / "link");
  int root = ::open((dir.path / "root").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(root >= 0);
  const support::ReadLimits nofollow{.max_bytes = 1 << 20, .follow_symlinks = false};

  CHECK(support::read_file_at(root, "inside", nofollow).value() == "inside");
  auto link = support::read_file_at(root, "link", nofollow, "root/link");
  REQUIRE_FALSE(link);
  CHECK(link.error().failure == support::ReadFailure::not_regular);
  CHECK(link.error().message == "'root/link' is a symbolic link");
  for (const char* escape : {"..", ".", "", "../secret", "sub/inside"}) {
    CAPTURE(escape);
    auto r = support::read_file_at(root, escape, nofollow);
    REQUIRE_FALSE(r);
    CHECK(r.error().failure == support::ReadFailure::open_failed);
  }
  auto missing = support::read_file_at(root, "missing", nofollow);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().error_number == ENOENT);

  // A FIFO is refused from its type, before any open that could wait for a writer.
  REQUIRE(::mkfifoat(root, "fifo", 0600) == 0);
  auto fifo = support::read_file_at(root, "fifo", nofollow, "root/fifo");
  REQUIRE_FALSE(fifo);
  CHECK(fifo.error().message == "'root/fifo' is a FIFO, not a regular file");

  // A sparse file of 1 GiB is refused from fstat's size, before a byte is read.
  int sparse = ::openat(root, "sparse", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(sparse >= 0);
  REQUIRE(::ftruncate(sparse, off_t{1} << 30) == 0);
  ::close(sparse);
  auto big = support::read_file_at(root, "sparse", nofollow, "root/sparse");
  REQUIRE_FALSE(big);
  CHECK(big.error().failure == support::ReadFailure::too_large);
  CHECK(big.error().message == "'root/sparse' is 1073741824 bytes; the limit is 1048576 bytes");
  ::close(root);
}

TEST_CASE("support: write_file_atomically replaces whole files and leaves the old one on failure") {
  ScratchDir dir;
  auto target = dir.path / "out.txt";
  REQUIRE(support::write_file_atomically(target.string(), "first"));
  REQUIRE(support::write_file_atomically(target.string(), "second"));
  CHECK(support::read_file(target.string()).value() == "second");
  auto missing = support::write_file_atomically((dir.path / "no-such-dir" / "x").string(), "y");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().items().front().code == diag::Code::cannot_write_file);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
  CHECK(entries == 1);  // no temporary left behind
}

TEST_CASE("support: one number grammar for counts and dimensions") {
  CHECK(support::parse_count("0").value() == 0);
  CHECK(support::parse_count("18446744073709551615").value() == UINT64_MAX);
  CHECK_FALSE(support::parse_count("18446744073709551616"));
  CHECK_FALSE(support::parse_count("-1"));
  CHECK_FALSE(support::parse_count("+1"));
  CHECK_FALSE(support::parse_count("0x10"));
  CHECK_FALSE(support::parse_count(" 1"));
  CHECK_FALSE(support::parse_count(""));
  CHECK_FALSE(support::parse_count("5", 4));
  CHECK(support::parse_dims("7").value() == std::array<uint64_t, 3>{7, 1, 1});
  CHECK(support::parse_dims("1,2,3").value() == std::array<uint64_t, 3>{1, 2, 3});
  CHECK_FALSE(support::parse_dims("1,2,3,4"));
  CHECK_FALSE(support::parse_dims("1,,3"));
  CHECK_FALSE(support::parse_dims("1,"));
  CHECK(support::parse_dims("0,0,0").value() == std::array<uint64_t, 3>{0, 0, 0});
}
