// support/directory: link-safe directory operations relative to a directory descriptor.
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "ptxgate/support/directory.hpp"

namespace fs = std::filesystem;
using namespace ptxgate;

namespace {
struct Scratch {
  fs::path path;
  Scratch() {
    std::string t = (fs::temp_directory_path() / "ptxgate-directory-XXXXXX").string();
    path = ::mkdtemp(t.data());
    fs::create_directories(path / "inside");
    fs::create_directories(path / "outside" / "sub");
    std::ofstream(path / "outside" / "keep") << "keep";
    std::ofstream(path / "outside" / "sub" / "keep") << "keep";
  }
  ~Scratch() { fs::remove_all(path); }
  support::UniqueFd inside() const {
    auto fd = support::open_directory((path / "inside").c_str());
    REQUIRE(fd.has_value());
    return std::move(*fd);
  }
  bool outside_intact() const {
    auto read = [](const fs::path& p) {
      std::ifstream in(p);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    return read(path / "outside" / "keep") == "keep" && read(path / "outside" / "sub" / "keep") == "keep";
  }
};
}  // namespace

TEST_CASE("support: open_directory_at opens a subdirectory, never a link, a file, '..' or a path") {
  Scratch s;
  auto dir = s.inside();
  fs::create_directory(s.path / "inside" / "real");
  fs::create_directory_symlink(s.path / "outside", s.path / "inside" / "link");
  std::ofstream(s.path / "inside" / "file") << "x";
  CHECK(support::open_directory_at(dir.get(), "real").has_value());
  const int link_error = support::open_directory_at(dir.get(), "link").error();
  CHECK((link_error == ELOOP || link_error == ENOTDIR));
  CHECK(support::open_directory_at(dir.get(), "file").error() == ENOTDIR);
  CHECK(support::open_directory_at(dir.get(), "missing").error() == ENOENT);
  for (const char* bad : {"..", ".", "", "real/..", "/tmp"}) CHECK(support::open_directory_at(dir.get(), bad).error() == EINVAL);
}

TEST_CASE("support: write_new_file_at creates a new file and never writes through an existing name or link") {
  Scratch s;
  auto dir = s.inside();
  CHECK(support::write_new_file_at(dir.get(), "new", "bytes") == 0);
  std::ifstream in(s.path / "inside" / "new");
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "bytes");
  CHECK(support::write_new_file_at(dir.get(), "new", "again") == EEXIST);
  fs::create_symlink(s.path / "outside" / "keep", s.path / "inside" / "link");
  fs::create_symlink(s.path / "outside" / "absent", s.path / "inside" / "dangling");
  CHECK(support::write_new_file_at(dir.get(), "link", "overwrite") == EEXIST);
  CHECK(support::write_new_file_at(dir.get(), "dangling", "create") == EEXIST);
  CHECK_FALSE(fs::exists(s.path / "outside" / "absent"));
  CHECK(s.outside_intact());
}

TEST_CASE("support: remove_tree_at removes links, not their targets, and stops at its depth limit") {
  Scratch s;
  auto dir = s.inside();
  const auto tree = s.path / "inside" / "tree";
  fs::create_directories(tree / "a" / "b");
  std::ofstream(tree / "a" / "b" / "file") << "x";
  fs::create_directory_symlink(s.path / "outside", tree / "a" / "to-outside");
  fs::create_symlink(s.path / "outside" / "keep", tree / "to-file");
  REQUIRE(::mkfifo((tree / "fifo").c_str(), 0644) == 0);
  fs::create_directory_symlink(s.path / "outside", s.path / "inside" / "top-link");

  SUBCASE("a tree with links and a FIFO") {
    CHECK(support::remove_tree_at(dir.get(), "tree") == 0);
    CHECK_FALSE(fs::exists(fs::symlink_status(tree)));
  }
  SUBCASE("a link itself") {
    CHECK(support::remove_tree_at(dir.get(), "top-link") == 0);
    CHECK_FALSE(fs::exists(fs::symlink_status(s.path / "inside" / "top-link")));
  }
  SUBCASE("deeper than the limit: refused, nothing outside touched") {
    CHECK(support::remove_tree_at(dir.get(), "tree", 2) == ELOOP);
    CHECK(fs::exists(tree / "a" / "b" / "file"));
  }
  SUBCASE("a missing name is already gone; a path is refused") {
    CHECK(support::remove_tree_at(dir.get(), "missing") == 0);
    CHECK(support::remove_tree_at(dir.get(), "..") == EINVAL);
    CHECK(support::remove_tree_at(dir.get(), "tree/a") == EINVAL);
  }
  CHECK(s.outside_intact());
  CHECK(fs::exists(s.path / "outside" / "sub"));
}

TEST_CASE("support: list_directory names every entry once, without '.' and '..'") {
  Scratch s;
  auto dir = s.inside();
  std::ofstream(s.path / "inside" / "x") << "";
  fs::create_directory(s.path / "inside" / "y");
  fs::create_directory_symlink(s.path / "outside", s.path / "inside" / "z");
  auto names = support::list_directory(dir.get());
  REQUIRE(names.has_value());
  std::sort(names->begin(), names->end());
  CHECK(*names == std::vector<std::string>{"x", "y", "z"});
  // Twice on one descriptor: the listing starts from the beginning each time.
  CHECK(support::list_directory(dir.get())->size() == 3);
}
