// Unit tests for the diagnostic table and its text/JSON/SARIF renderings.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "ptxgate/diagnostics/diagnostic.hpp"

using namespace ptxgate::diag;

TEST_CASE("diagnostic codes are unique and well formed") {
  std::set<std::string_view> names;
  for (const auto& c : all_codes()) {
    CHECK(c.name.size() == 6);
    CHECK(c.name.substr(0, 2) == "PG");
    CHECK(names.insert(c.name).second);
    CHECK(code_from_name(c.name) == c.code);
  }
  CHECK_FALSE(code_from_name("PG0000").has_value());
}

TEST_CASE("source file positions") {
  SourceFile f("a.pg", "ab\ncd\n\nef");
  CHECK(f.line_col(0) == std::pair<uint32_t, uint32_t>{1, 1});
  CHECK(f.line_col(4) == std::pair<uint32_t, uint32_t>{2, 2});
  CHECK(f.line_col(7) == std::pair<uint32_t, uint32_t>{4, 1});
  CHECK(f.line_text(2) == "cd");
  CHECK(f.line_text(3) == "");
  CHECK(f.line_text(9) == "");
}

TEST_CASE("text rendering has location, excerpt, caret and fix") {
  SourceFile f("k.pg", "let x = y;\n");
  Diagnostics d;
  d.add(Code::undefined_name, "use of undefined name 'y'", locate(f, 8, 1), "declare 'y' before use");
  std::string text = render_text(d);
  CHECK(text.find("k.pg:1:9: error[PG1101]: use of undefined name 'y'") == 0);
  CHECK(text.find("let x = y;") != std::string::npos);
  CHECK(text.find("        ^\n") != std::string::npos);
  CHECK(text.find("fix: declare 'y' before use") != std::string::npos);
  CHECK(text.find("1 error, 0 warnings") != std::string::npos);
}

TEST_CASE("a long source line is kept as an excerpt around the caret, never whole") {
  // One line of 1 MB: each Location used to copy all of it (20000 entries of a one-line PTX
  // file: 13 GB), and the text rendering printed it whole for every diagnostic.
  std::string line = "let x = ";
  for (int i = 0; i < 100000; ++i) line += "a + 1 + ";
  line += "\xc3\xa9 + target + b;";
  SourceFile f("long.pg", line + "\n");
  const auto at = static_cast<uint32_t>(line.find("target"));
  Location loc = locate(f, at, 6);
  CHECK(loc.column == at + 1);
  CHECK(loc.source_line.size() <= kMaxExcerptBytes + 6);
  CHECK(loc.source_line.starts_with("..."));
  CHECK(loc.source_line.ends_with("+ target + b;"));
  Diagnostics d;
  d.add(Code::undefined_name, "use of undefined name 'target'", loc, "declare it");
  std::string text = render_text(d);
  CHECK(text.size() < 1000);
  // The caret still stands under the name.
  const auto excerpt = text.find("| ...");
  const auto caret = text.find("^^^^^^");
  REQUIRE(excerpt != std::string::npos);
  REQUIRE(caret != std::string::npos);
  const auto excerpt_line_start = text.rfind('\n', excerpt) + 1;
  const auto caret_line_start = text.rfind('\n', caret) + 1;
  CHECK(text.substr(excerpt_line_start + (caret - caret_line_start), 6) == "target");
  // The start of a long line: no "..." before it; a short line: whole.
  Location first = locate(f, 4, 1);
  CHECK(first.source_line.starts_with("let x = "));
  CHECK(first.source_line.ends_with("..."));
  CHECK(first.source_line_offset == 0);
  CHECK(locate(SourceFile("s.pg", "let x = y;"), 8, 1).source_line == "let x = y;");
}

TEST_CASE("text rendering escapes control characters of quoted source, messages and paths") {
  // A NUL, an escape sequence (retitling the terminal), a bell and a C1 CSI in a source line.
  using namespace std::string_literals;
  const std::string source = "let x = 1;\0 \x1b]0;PWNED\x07 \x1b[31mred \xc2\x9b" "2J \xff;\n"s;
  SourceFile f("k\x1b[2J.pg", source);
  Diagnostics d;
  d.add(Code::invalid_character, "invalid character '\x1b' and a bell \x07", locate(f, 10, 1), "remove \x1b[0m it");
  const std::string text = render_text(d);
  // Nothing a terminal interprets reaches it, and no NUL cuts the C string off.
  for (char c : text) CHECK((static_cast<unsigned char>(c) >= 0x20 || c == '\n'));
  CHECK(text.find('\x7f') == std::string::npos);
  CHECK(text.find("\xc2\x9b") == std::string::npos);
  CHECK(text.find("k\u241b[2J.pg:1:11: error[PG1001]: invalid character '\u241b' and a bell \u2407\n") == 0);
  CHECK(text.find("let x = 1;\u2400 \u241b]0;PWNED\u2407 \u241b[31mred \\xC2\\x9B2J \\xFF;\n") != std::string::npos);
  // The caret stays under the NUL's control picture: one column per control character.
  CHECK(text.find("\n       |           ^\n") != std::string::npos);
  CHECK(text.find("fix: remove \u241b[0m it\n") != std::string::npos);
  CHECK(text.find("1 error, 0 warnings") != std::string::npos);
  // Messages keep their line breaks and tabs.
  Diagnostics m;
  m.add(Code::ptxas_failure, "line one\n\tline two", {}, {});
  CHECK(render_text(m, false) == "error[PG2004]: line one\n\tline two\n");
}

TEST_CASE("JSON and SARIF renderings carry the same record") {
  Diagnostics d;
  d.add(Code::grid_smaller_than_sms, "grid of 4 blocks is smaller than 132 SMs", {}, "use at least 132 blocks");
  auto j = nlohmann::json::parse(render_json(d));
  REQUIRE(j.size() == 1);
  CHECK(j[0]["code"] == "PG3502");
  CHECK(j[0]["severity"] == "warning");
  auto s = nlohmann::json::parse(render_sarif(d));
  CHECK(s["version"] == "2.1.0");
  CHECK(s["runs"][0]["tool"]["driver"]["name"] == "ptxgate");
  CHECK(s["runs"][0]["results"][0]["ruleId"] == "PG3502");
  CHECK(s["runs"][0]["results"][0]["level"] == "warning");
  CHECK(s["runs"][0]["tool"]["driver"]["rules"][0]["id"] == "PG3502");
}

#include "ptxgate/diagnostics/internal/json_checks.hpp"

TEST_CASE("checked JSON integers reject floats, negatives and values that do not fit") {
  using ptxgate::diag::json_integer;
  CHECK(json_integer<uint32_t>(nlohmann::json(7)) == 7u);
  CHECK(json_integer<int64_t>(nlohmann::json(-3)) == -3);
  CHECK(json_integer<uint64_t>(nlohmann::json(UINT64_MAX)) == UINT64_MAX);
  CHECK_THROWS_AS(json_integer<int64_t>(nlohmann::json(1.79531e+110)), nlohmann::json::type_error);
  CHECK_THROWS_AS(json_integer<uint32_t>(nlohmann::json(-1)), nlohmann::json::type_error);
  CHECK_THROWS_AS(json_integer<uint32_t>(nlohmann::json(uint64_t{1} << 40)), nlohmann::json::type_error);
  CHECK_THROWS_AS(json_integer<uint32_t>(nlohmann::json("12")), nlohmann::json::type_error);
  CHECK(ptxgate::diag::json_integer_or(nlohmann::json::object(), "absent", uint32_t{5}) == 5u);
}

TEST_CASE("text rendering in colour: the same text with clang's SGR sequences, plain when off") {
  SourceFile f("a.pg", "let x = y;\n");
  Diagnostics d;
  d.add(Code::undefined_name, "undefined name 'y'", locate(f, 8, 1), "declare it");
  d.add(Code::unused_result_required, "unused 'x'", locate(f, 4, 1));
  const std::string plain = render_text(d, true, {});
  CHECK(plain == render_text(d));
  CHECK(plain.find('\033') == std::string::npos);
  const std::string colored = render_text(d, true, {.color = true});
  CHECK(colored.find("\033[1;31merror[PG1101]:\033[0m") != std::string::npos);
  CHECK(colored.find("\033[1;35mwarning[") != std::string::npos);
  CHECK(colored.find("\033[1;32m^\033[0m") != std::string::npos);
  CHECK(colored.find("\033[1;32mfix:\033[0m declare it") != std::string::npos);
  // Removing every escape sequence gives back the plain text.
  std::string stripped;
  for (size_t i = 0; i < colored.size(); ++i) {
    if (colored[i] == '\033') {
      i = colored.find('m', i);
      continue;
    }
    stripped += colored[i];
  }
  CHECK(stripped == plain);
}

TEST_CASE("--color: always and never decide alone; auto needs a terminal, no NO_COLOR and no dumb TERM") {
  CHECK(color_mode_from_name("auto") == ColorMode::automatic);
  CHECK(color_mode_from_name("always") == ColorMode::always);
  CHECK(color_mode_from_name("never") == ColorMode::never);
  CHECK_FALSE(color_mode_from_name("yes").has_value());
  CHECK(use_color(ColorMode::always, false, "1", "dumb"));
  CHECK_FALSE(use_color(ColorMode::never, true, nullptr, "xterm"));
  CHECK(use_color(ColorMode::automatic, true, nullptr, "xterm"));
  CHECK(use_color(ColorMode::automatic, true, "", "xterm"));  // an empty NO_COLOR does not count
  CHECK_FALSE(use_color(ColorMode::automatic, true, "1", "xterm"));
  CHECK_FALSE(use_color(ColorMode::automatic, true, nullptr, "dumb"));
  CHECK_FALSE(use_color(ColorMode::automatic, false, nullptr, "xterm"));
}

TEST_CASE("-Werror: warnings become errors with a note; errors and notes stay") {
  Diagnostics d;
  d.add(Code::undefined_name, "e");
  d.add(Code::unused_result_required, "w");
  auto& note = d.add(Code::unused_result_required, "n");
  note.severity = Severity::note;
  CHECK(d.warning_count() == 1);
  CHECK(promote_warnings(d) == 1);
  CHECK(d.warning_count() == 0);
  CHECK(d.error_count() == 2);
  CHECK(d.items()[1].notes.back() == "-Werror turned this warning into an error");
  CHECK(d.items()[2].severity == Severity::note);
  CHECK(promote_warnings(d) == 0);
}
