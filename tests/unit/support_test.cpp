// support/: bounded reads of special files, atomic writes, the number grammar.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "ptxgate/support/files.hpp"
#include "ptxgate/support/numbers.hpp"

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
