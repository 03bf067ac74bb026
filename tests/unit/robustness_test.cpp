// Robustness: input resource limits (nesting, size, literals, kernel count) and garbage input end to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "ptxgate/commands/npy.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/ir/parser.hpp"
#include "ptxgate/ir/printer.hpp"
#include "ptxgate/module_cache/cache_key.hpp"
#include "ptxgate/module_cache/disk_cache.hpp"
#include "ptxgate/validation/profiles.hpp"

using namespace ptxgate;

namespace {

std::string repeat(std::string_view piece, size_t times) {
  std::string out;
  out.reserve(piece.size() * times);
  for (size_t i = 0; i < times; ++i) out += piece;
  return out;
}

size_t count_code(const diag::Diagnostics& d, diag::Code code) {
  return static_cast<size_t>(std::count_if(d.begin(), d.end(), [&](const auto& x) { return x.code == code; }));
}

/// Parses and verifies `text`; the diagnostics on failure, an empty list on success.
diag::Diagnostics load_errors(std::string text) {
  diag::SourceFile file("limits.pg", std::move(text));
  auto loaded = ir::load_module(file);
  return loaded ? diag::Diagnostics{} : loaded.error();
}

/// Every diagnostic renders in all three formats, and the JSON is well-formed.
void check_renders(const diag::Diagnostics& d) {
  CHECK_FALSE(diag::render_text(d).empty());
  CHECK(nlohmann::json::accept(diag::render_json(d)));
  CHECK(nlohmann::json::accept(diag::render_sarif(d)));
}

/// A limit error is reported once, with no internal error beside it, and few diagnostics overall.
void check_limit_error(const diag::Diagnostics& d, diag::Code code) {
  CHECK(count_code(d, code) == 1);
  CHECK(count_code(d, diag::Code::internal_error) == 0);
  CHECK(d.size() <= ir::Limits{}.max_diagnostics + 1);
  for (const auto& item : d)
    if (item.code == code) {
      CHECK_FALSE(item.fix.empty());
      const bool names_the_limit = item.message.find(std::to_string(ir::Limits{}.max_nesting_depth)) != std::string::npos;
      if (code == diag::Code::nesting_too_deep) CHECK(names_the_limit);
    }
  check_renders(d);
}

std::string kernel_assigning(std::string_view expr) {
  return "kernel k(out y: f32[]) {\n  y[0] = " + std::string(expr) + ";\n}\n";
}

constexpr size_t kDeep = 100000;

}  // namespace

TEST_CASE("robustness: 100k nested parentheses are PG1901") {
  check_limit_error(load_errors(kernel_assigning(repeat("(", kDeep) + "1.0" + repeat(")", kDeep))),
                    diag::Code::nesting_too_deep);
}

TEST_CASE("robustness: 100k nested blocks are PG1901") {
  std::string text = "kernel k(out y: f32[]) {\n" + repeat("if (true) {", kDeep) + "y[0] = 1.0;" +
                     repeat("}", kDeep) + "\n}\n";
  check_limit_error(load_errors(text), diag::Code::nesting_too_deep);
  std::string loops = "kernel k(out y: f32[]) {\n" + repeat("while (false) {", kDeep) + repeat("}", kDeep) + "}\n";
  check_limit_error(load_errors(loops), diag::Code::nesting_too_deep);
}

TEST_CASE("robustness: 100k prefix operators, casts and indexes are PG1901") {
  check_limit_error(load_errors(kernel_assigning(repeat("-", kDeep) + "1.0")), diag::Code::nesting_too_deep);
  check_limit_error(load_errors(kernel_assigning(repeat("!", kDeep) + "true")), diag::Code::nesting_too_deep);
  check_limit_error(load_errors(kernel_assigning(repeat("f32(", kDeep) + "1.0" + repeat(")", kDeep))),
                    diag::Code::nesting_too_deep);
  check_limit_error(load_errors(kernel_assigning(repeat("y[", kDeep) + "0" + repeat("]", kDeep))),
                    diag::Code::nesting_too_deep);
  check_limit_error(load_errors(kernel_assigning(repeat("min(1.0, ", kDeep) + "1.0" + repeat(")", kDeep))),
                    diag::Code::nesting_too_deep);
}

TEST_CASE("robustness: a 100k-operator binary chain is PG1901, not a deep tree") {
  check_limit_error(load_errors(kernel_assigning(repeat("1.0 + ", kDeep) + "1.0")), diag::Code::nesting_too_deep);
  check_limit_error(load_errors(kernel_assigning(repeat("1.0 * 2.0 + ", kDeep) + "1.0")),
                    diag::Code::nesting_too_deep);
}

TEST_CASE("robustness: nesting just under the limit still loads") {
  // Each parenthesised level costs a level for the expression inside it.
  const uint32_t levels = ir::Limits{}.max_nesting_depth / 4;
  auto errors = load_errors(kernel_assigning(repeat("(", levels) + "1.0" + repeat(")", levels)));
  CHECK(errors.empty());
}

TEST_CASE("robustness: 8 MB of comments around a kernel loads") {
  std::string text = repeat("// a comment line that pads the file to eight megabytes of text.......\n", 120000);
  REQUIRE(text.size() >= 8u << 20);
  text += kernel_assigning("1.0");
  text += repeat("/* a block comment */\n", 1000);
  CHECK(load_errors(std::move(text)).empty());
}

TEST_CASE("robustness: 8 MB of statements in many kernels loads and prints") {
  // 80 kernels x 8000 statements of about 14 bytes: under both the statement and kernel limits.
  std::string text;
  for (int k = 0; k < 80; ++k) {
    text += "kernel k" + std::to_string(k) + "(out y: f32[]) {\n";
    text += repeat("  y[0] = 1.5;\n", 8000);
    text += "}\n";
  }
  REQUIRE(text.size() >= 8u << 20);
  diag::SourceFile file("big.pg", std::move(text));
  auto loaded = ir::load_module(file);
  REQUIRE(loaded.has_value());
  CHECK(loaded->module.kernels.size() == 80);
  CHECK(ir::print(loaded->module).size() >= 8u << 20);
}

TEST_CASE("robustness: more than 100000 statements in one kernel is PG1907") {
  std::string text = "kernel k(out y: f32[]) {\n" + repeat("y[0]=1.0;", 150000) + "}\n";
  check_limit_error(load_errors(std::move(text)), diag::Code::too_many_statements);
}

TEST_CASE("robustness: input over 16 MiB is PG1902, from text and from a file") {
  const size_t limit = ir::Limits{}.max_file_bytes;
  std::string text = repeat("// padding padding padding padding padding padding padding padding padding.\n", limit / 75 + 2);
  REQUIRE(text.size() > limit);
  check_limit_error(load_errors(text), diag::Code::input_too_large);

  auto path = std::filesystem::temp_directory_path() / ("ptxgate-robustness-" + std::to_string(::getpid()) + ".pg");
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  auto read = ir::read_source(path.string());
  std::filesystem::remove(path);
  REQUIRE_FALSE(read.has_value());
  check_limit_error(read.error(), diag::Code::input_too_large);
}

TEST_CASE("robustness: a 16 MiB file exactly at the limit is accepted by the size check") {
  const size_t limit = ir::Limits{}.max_file_bytes;
  std::string text = kernel_assigning("1.0");
  text += "//";
  text.append(limit - text.size(), 'x');
  REQUIRE(text.size() == limit);
  CHECK(load_errors(std::move(text)).empty());
}

TEST_CASE("robustness: huge literals") {
  SUBCASE("a 1000-digit integer is PG1003 naming the 64-bit limit") {
    auto d = load_errors(kernel_assigning("f32(" + repeat("9", 1000) + ")"));
    REQUIRE(count_code(d, diag::Code::malformed_number) == 1);
    CHECK(d.items()[0].message.find("18446744073709551615") != std::string::npos);
    check_renders(d);
  }
  SUBCASE("a 1000-digit hexadecimal integer is PG1003") {
    auto d = load_errors(kernel_assigning("f32(0x" + repeat("f", 1000) + ")"));
    CHECK(count_code(d, diag::Code::malformed_number) == 1);
  }
  SUBCASE("a float with 1000 integer digits is out of the range of f64") {
    auto d = load_errors(kernel_assigning(repeat("7", 1000) + ".0"));
    CHECK(count_code(d, diag::Code::malformed_number) == 1);
    check_renders(d);
  }
  SUBCASE("a huge exponent is out of range") {
    auto d = load_errors(kernel_assigning("1.0e" + repeat("9", 1000)));
    CHECK(count_code(d, diag::Code::malformed_number) == 1);
  }
  SUBCASE("a float with 1000 fraction digits is exact enough and loads") {
    diag::SourceFile file("pi.pg", kernel_assigning("3." + repeat("1415926535", 100)));
    auto loaded = ir::load_module(file);
    REQUIRE(loaded.has_value());
    CHECK(ir::print(loaded->module).find("3.14159") != std::string::npos);
  }
  SUBCASE("a 1000-digit integer with separators is still PG1003") {
    auto d = load_errors(kernel_assigning("f32(" + repeat("1_0", 500) + ")"));
    CHECK(count_code(d, diag::Code::malformed_number) == 1);
  }
}

TEST_CASE("robustness: 10^5 kernels in one file are PG1903 at the 10000-kernel limit") {
  std::string text;
  for (int k = 0; k < 100000; ++k) text += "kernel k" + std::to_string(k) + "(out y: f32[]) { y[0] = 1.0; }\n";
  diag::SourceFile file("many.pg", std::move(text));
  auto parsed = ir::parse(file);
  CHECK(parsed.module.kernels.size() <= ir::Limits{}.max_kernels);
  check_limit_error(parsed.diagnostics, diag::Code::too_many_kernels);
  // Exactly the limit is fine.
  std::string at_limit;
  for (uint32_t k = 0; k < ir::Limits{}.max_kernels; ++k)
    at_limit += "kernel k" + std::to_string(k) + "(out y: f32[]) { y[0] = 1.0; }\n";
  CHECK(load_errors(std::move(at_limit)).empty());
}

TEST_CASE("robustness: a 1 MB identifier, 100k parameters and 100k errors stay bounded") {
  check_limit_error(load_errors(kernel_assigning(repeat("a", 1u << 20))), diag::Code::identifier_too_long);

  std::string params;
  for (int i = 0; i < 100000; ++i) params += (i ? ", p" : "p") + std::to_string(i) + ": f32";
  check_limit_error(load_errors("kernel k(" + params + ") {}\n"), diag::Code::too_many_parameters);

  auto flood = load_errors(repeat("$ ", 100000));
  CHECK(count_code(flood, diag::Code::too_many_diagnostics) == 1);
  CHECK(flood.size() <= ir::Limits{}.max_diagnostics + 1);
}

TEST_CASE("robustness: random bytes and mutated examples never crash emit or check") {
  // What `ptxgate emit` and `ptxgate check` do with an input file, through the library:
  // load (parse + verify), then describe and lower what verifies. Fixed seed: reproducible.
  std::vector<std::string> examples;
  for (const auto& entry : std::filesystem::directory_iterator(PTXGATE_SOURCE_DIR "/examples"))
    if (entry.path().extension() == ".pg") {
      std::ifstream in(entry.path(), std::ios::binary);
      examples.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  REQUIRE_FALSE(examples.empty());
  const std::string_view tokens[] = {"{", "}", "(", ")", "[", "]", ";", ",", "kernel ", "let ", "var ", "if ",
                                     "while ", "for ", "..", "step ", "break;", "@workgroup(", "@cooperative ",
                                     "shared ", "barrier();", "grid_sync();", "f32", "u64", "0x", "1e", "/*", "//",
                                     "\"", "\xff", "\xc3\xa9", std::string_view("\0", 1), "-", "<<", ">>=", "as ", "atomic_add(", "y[i]"};
  std::mt19937_64 rng(20240611);
  size_t verified = 0, lowered = 0;
  for (int iteration = 0; iteration < 1500; ++iteration) {
    std::string text;
    if (iteration % 5 == 0) {
      text.resize(rng() % 2048);
      for (char& c : text) c = static_cast<char>(rng());
    } else {
      text = examples[rng() % examples.size()];
      for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0 && !text.empty(); --edits) {
        size_t at = rng() % text.size();
        switch (rng() % 4) {
          case 0: text[at] = static_cast<char>(rng()); break;
          case 1: text.erase(at, 1 + rng() % 16); break;
          case 2: text.insert(at, tokens[rng() % std::size(tokens)]); break;
          default: text.resize(at); break;
        }
      }
    }
    diag::SourceFile file("fuzz.pg", text);
    auto loaded = ir::load_module(file);
    if (!loaded) {
      REQUIRE_FALSE(loaded.error().empty());
      REQUIRE(count_code(loaded.error(), diag::Code::internal_error) == 0);
      REQUIRE_FALSE(diag::render_text(loaded.error()).empty());
      REQUIRE(nlohmann::json::accept(diag::render_sarif(loaded.error())));
      continue;
    }
    ++verified;
    (void)codegen::describe(loaded->module);
    if (lowered < 40) {
      codegen::CodegenOptions options;
      options.opt_level = 0;
      auto ir_text = codegen::emit_llvm_ir(loaded->module, options);
      if (!ir_text) REQUIRE(count_code(ir_text.error(), diag::Code::internal_error) == 0);
      ++lowered;
    }
  }
  MESSAGE("garbage inputs: " << verified << " of 1500 verified, " << lowered << " lowered");
  CHECK(verified > 0);  // the mutations are mild enough that some still verify
}

TEST_CASE("robustness: hostile .npy headers are PG5002, never a crash") {
  auto npy = [](const std::string& header, size_t payload) {
    std::string s("\x93NUMPY\x01\x00", 8);
    s.push_back(static_cast<char>(header.size() & 0xff));
    s.push_back(static_cast<char>(header.size() >> 8));
    s += header;
    s.append(payload, '\0');
    return s;
  };
  auto parse = [](const std::string& bytes) {
    return commands::parse_npy(std::as_bytes(std::span(bytes.data(), bytes.size())), "hostile.npy");
  };
  auto rejected = [&](const std::string& bytes) {
    auto r = parse(bytes);
    return !r && count_code(r.error(), diag::Code::invalid_argument_spec) == 1;
  };
  // A 60 KB value: std::regex recursed per character here and overflowed the stack.
  CHECK(rejected(npy("{'descr': '" + std::string(60000, 'a') + "', 'fortran_order': False, 'shape': (1,), }", 4)));
  CHECK(rejected(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(60000, ' ') + "), }", 4)));
  // A dimension past 2^64 (std::stoull threw), and one whose byte count wraps around 2^64.
  CHECK(rejected(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (" + repeat("9", 40) + ",), }", 4)));
  CHECK(rejected(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }", 8)));
  CHECK(rejected(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905,), }", 4)));
  auto ok = parse(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8));
  REQUIRE(ok.has_value());
  CHECK(ok->count == 2);
  CHECK(ok->bytes.size() == 8);
}

TEST_CASE("robustness: cache list survives a checksummed manifest with mistyped fields") {
  auto dir = std::filesystem::temp_directory_path() / ("ptxgate-robustness-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  diag::Diagnostics warnings;
  auto cache = module_cache::DiskCache::open(dir, warnings);
  REQUIRE(cache.enabled());
  module_cache::CacheKey key{"00112233445566778899aabbccddeeff"};
  module_cache::CacheEntry entry;
  entry.target_arch = "sm_90";
  entry.ptx = ".version 8.5\n.target sm_90\n";
  cache.publish(key, entry, nlohmann::json::object(), warnings);
  auto manifest_path = dir / "v1" / key.hex / "manifest.json";
  nlohmann::json doc;
  {
    std::ifstream in(manifest_path);
    doc = nlohmann::json::parse(in);
  }
  SUBCASE("target and time of the wrong type") {
    doc["manifest"]["target_arch"] = 90;
    doc["manifest"]["created_unix_seconds"] = "yesterday";
  }
  SUBCASE("format and version of the wrong type (parse_manifest threw before lookup's try)") {
    doc["manifest"]["format"] = nlohmann::json::object();
    doc["manifest"]["format_version"] = "1";
  }
  doc["checksum"] = module_cache::content_hash(doc["manifest"].dump());
  {
    std::ofstream out(manifest_path, std::ios::trunc);
    out << doc.dump();
  }
  auto listed = cache.list();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].target_arch == "(corrupt)");
  diag::Diagnostics lookup_warnings;
  CHECK_FALSE(cache.lookup(key, "sm_90", lookup_warnings).has_value());
  CHECK(count_code(lookup_warnings, diag::Code::cache_entry_corrupt) == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("robustness: diagnostics quoting bytes that are not UTF-8 still render as JSON and SARIF") {
  diag::Diagnostics d;
  diag::Location where;
  where.file = "bad\xff\xfe.pg";
  where.line = 1;
  where.column = 1;
  where.source_line = "kernel \xc3(";
  d.add(diag::Code::invalid_argument_spec, "invalid value '\xff\x80' for argument 'x'", where, "fix \xed\xa0\x80");
  check_renders(d);
  CHECK(diag::render_json(d).find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD in place of the bad bytes
}

TEST_CASE("robustness: a million nested JSON arrays in a profile or a cache manifest is a diagnostic, not a stack overflow") {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  auto dir = std::filesystem::temp_directory_path() / ("ptxgate-robustness-json-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "deep.json");
    out << R"({"profile": "deep", "max_block_dim": )" << deep << "}";
  }
  // The file is larger than any profile: refused before it is read.
  auto profile = validation::load_profile_file(dir / "deep.json");
  REQUIRE_FALSE(profile.has_value());
  CHECK(count_code(profile.error(), diag::Code::cannot_read_file) == 1);
  // The same text parsed: the nesting bound refuses it before the recursive parser runs.
  auto parsed = validation::parse_profile(R"({"profile": "deep", "max_block_dim": )" + deep + "}", "deep.json");
  REQUIRE_FALSE(parsed.has_value());
  CHECK(count_code(parsed.error(), diag::Code::profile_malformed) == 1);

  diag::Diagnostics warnings;
  auto cache = module_cache::DiskCache::open(dir / "cache", warnings);
  REQUIRE(cache.enabled());
  module_cache::CacheKey key{"ffeeddccbbaa99887766554433221100"};
  std::filesystem::create_directories(dir / "cache" / "v1" / key.hex);
  {
    std::ofstream out(dir / "cache" / "v1" / key.hex / "manifest.json");
    out << R"({"checksum": "0", "manifest": {"files": )" << deep << "}}";
  }
  CHECK(cache.list().size() == 1);
  CHECK_FALSE(cache.lookup(key, "sm_90", warnings).has_value());
  CHECK(count_code(warnings, diag::Code::cache_entry_corrupt) == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("robustness: 10^5 functions are PG1909; a chain of 10000 calls and a 10000-function cycle stay bounded") {
  std::string text;
  for (int f = 0; f < 100000; ++f) text += "fn f" + std::to_string(f) + "() { }\n";
  diag::SourceFile file("many.pg", text + "kernel k(out y: f32[]) { }\n");
  auto parsed = ir::parse(file);
  CHECK(parsed.module.functions.size() <= ir::Limits{}.max_functions);
  check_limit_error(parsed.diagnostics, diag::Code::too_many_functions);

  // The call graph is walked (names c0, c1, ...: f16 would be a type) without recursion on the host stack.
  const uint32_t n = ir::Limits{}.max_functions - 1;  // and one more function for the cycle
  std::string chain;
  for (uint32_t f = 0; f + 1 < n; ++f)
    chain += "fn c" + std::to_string(f) + "(x: u32) -> u32 { return c" + std::to_string(f + 1) + "(x) + 1; }\n";
  chain += "fn c" + std::to_string(n - 1) + "(x: u32) -> u32 { return x; }\n";
  CHECK(load_errors(chain + "kernel k(out y: u32[]) { y[0] = c0(1); }\n").empty());
  std::string cycle = chain + "fn back(x: u32) -> u32 { return c0(x); }\n";
  cycle.replace(cycle.find("return x;"), 9, "return back(x);");
  auto errors = load_errors(cycle + "kernel k(out y: u32[]) { y[0] = c0(1); }\n");
  CHECK(count_code(errors, diag::Code::recursive_function) == 1);
}
