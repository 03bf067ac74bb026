// Unit tests for the lexer: tokens, positions, literal values, comments and lexical errors.
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptxgate/ir/internal/lexer.hpp"

using namespace ptxgate;
using namespace ptxgate::ir;

namespace {

struct Lexed {
  std::unique_ptr<diag::SourceFile> file;  // the token views point into its text
  std::vector<Token> tokens;
  diag::Diagnostics diagnostics;
  std::string text;
};

Lexed lex(std::string text, const Limits& limits = {}) {
  Lexed out;
  out.text = text;
  out.file = std::make_unique<diag::SourceFile>("t.pg", std::move(text));
  out.tokens = tokenize(*out.file, out.diagnostics, limits);
  return out;
}

std::vector<TokenKind> kinds(const Lexed& l) {
  std::vector<TokenKind> k;
  for (const auto& t : l.tokens) k.push_back(t.kind);
  return k;
}

}  // namespace

TEST_CASE("lexer: tokens carry kind, offset, length and text") {
  Lexed l = lex("let x = 0x1F + 1_000;");
  REQUIRE(l.diagnostics.empty());
  using K = TokenKind;
  CHECK(kinds(l) == std::vector<K>{K::kw_let, K::identifier, K::assign, K::int_literal, K::plus, K::int_literal,
                                    K::semicolon, K::end_of_file});
  CHECK(l.tokens[1].offset == 4);
  CHECK(l.tokens[1].text == "x");
  CHECK(l.tokens[3].offset == 8);
  CHECK(l.tokens[3].length == 4);
  CHECK(l.tokens[3].int_value == 31);
  CHECK(l.tokens[5].int_value == 1000);
  CHECK(l.tokens[5].text == "1_000");
  CHECK(l.tokens.back().offset == l.text.size());
}

TEST_CASE("lexer: operators take the longest match") {
  Lexed l = lex("<< <= < >> >= > == = != ! && & || | .. . ~ ^ % @");
  REQUIRE(l.diagnostics.empty());
  using K = TokenKind;
  CHECK(kinds(l) == std::vector<K>{K::shl, K::le, K::lt, K::shr, K::ge, K::gt, K::eq, K::assign, K::ne, K::bang,
                                    K::amp_amp, K::amp, K::pipe_pipe, K::pipe, K::dot_dot, K::dot, K::tilde,
                                    K::caret, K::percent, K::at, K::end_of_file});
}

TEST_CASE("lexer: float literals and ranges") {
  Lexed l = lex("1.0 1e-3 2.5e10 3E+2 0..n 7.x");
  REQUIRE(l.diagnostics.empty());
  using K = TokenKind;
  CHECK(kinds(l) == std::vector<K>{K::float_literal, K::float_literal, K::float_literal, K::float_literal,
                                    K::int_literal, K::dot_dot, K::identifier, K::int_literal, K::dot,
                                    K::identifier, K::end_of_file});
  CHECK(l.tokens[0].float_value == 1.0);
  CHECK(l.tokens[1].float_value == doctest::Approx(1e-3));
  CHECK(l.tokens[2].float_value == 2.5e10);
  CHECK(l.tokens[3].float_value == 300.0);
  CHECK(l.tokens[4].int_value == 0);
}

TEST_CASE("lexer: keywords are reserved, in/out/inout/step and type names are identifiers") {
  Lexed l = lex("kernel let var if else while for break continue return shared true false const in out inout step f32");
  using K = TokenKind;
  CHECK(kinds(l) == std::vector<K>{K::kw_kernel, K::kw_let, K::kw_var, K::kw_if, K::kw_else, K::kw_while, K::kw_for,
                                    K::kw_break, K::kw_continue, K::kw_return, K::kw_shared, K::kw_true,
                                    K::kw_false, K::kw_const, K::identifier, K::identifier, K::identifier, K::identifier,
                                    K::identifier, K::end_of_file});
}

TEST_CASE("lexer: comments are skipped, UTF-8 allowed inside them") {
  Lexed l = lex("a // line comment \xC3\xA9\n/* block\n comment */ b");
  CHECK(l.diagnostics.empty());
  REQUIRE(l.tokens.size() == 3);
  CHECK(l.tokens[1].text == "b");
  CHECK(l.tokens[1].offset == l.text.find('b', 30));
}

TEST_CASE("lexer: unterminated block comment") {
  Lexed l = lex("a /* never closed");
  REQUIRE(l.diagnostics.size() == 1);
  CHECK(l.diagnostics.items()[0].code == diag::Code::unterminated_comment);
  CHECK(l.diagnostics.items()[0].location.column == 3);
  CHECK_FALSE(l.diagnostics.items()[0].fix.empty());
}

TEST_CASE("lexer: invalid characters, NUL and invalid UTF-8") {
  SUBCASE("ASCII") {
    Lexed l = lex("a $ b");
    REQUIRE(l.diagnostics.size() == 1);
    CHECK(l.diagnostics.items()[0].code == diag::Code::invalid_character);
    CHECK(l.diagnostics.items()[0].message.find("'$'") != std::string::npos);
    CHECK(l.tokens.size() == 3);  // a b eof: the bad byte is skipped
  }
  SUBCASE("NUL") {
    Lexed l = lex(std::string("a\0b", 3));
    REQUIRE(l.diagnostics.size() == 1);
    CHECK(l.diagnostics.items()[0].code == diag::Code::invalid_character);
    CHECK(l.diagnostics.items()[0].message.find("NUL") != std::string::npos);
  }
  SUBCASE("a run of bad bytes is one diagnostic") {
    Lexed l = lex("a \xFF\xFE\xFD b");
    REQUIRE(l.diagnostics.size() == 1);
    CHECK(l.diagnostics.items()[0].code == diag::Code::invalid_utf8);
    CHECK(l.diagnostics.items()[0].location.length == 3);
  }
  SUBCASE("valid UTF-8 outside a comment") {
    Lexed l = lex("let \xC3\xA9 = 1;");
    REQUIRE(l.diagnostics.size() == 1);
    CHECK(l.diagnostics.items()[0].code == diag::Code::invalid_character);
  }
  SUBCASE("invalid UTF-8 inside a comment") {
    Lexed l = lex("// bad \xC0\xAF here\nx");
    REQUIRE(l.diagnostics.size() == 1);
    CHECK(l.diagnostics.items()[0].code == diag::Code::invalid_utf8);
  }
}

TEST_CASE("lexer: malformed and out-of-range numbers") {
  auto first_code = [](std::string text) {
    Lexed l = lex(std::move(text));
    return l.diagnostics.empty() ? std::optional<diag::Code>{} : l.diagnostics.items()[0].code;
  };
  CHECK(first_code("0x") == diag::Code::malformed_number);
  CHECK(first_code("12abc") == diag::Code::malformed_number);
  CHECK(first_code("1_") == diag::Code::malformed_number);
  CHECK(first_code("18446744073709551616") == diag::Code::malformed_number);
  CHECK(first_code("0x1_0000_0000_0000_0000") == diag::Code::malformed_number);
  CHECK(first_code("1e999") == diag::Code::malformed_number);
  CHECK_FALSE(first_code("18446744073709551615").has_value());
  Lexed max = lex("0xFFFF_FFFF_FFFF_FFFF");
  CHECK(max.tokens[0].int_value == UINT64_MAX);
}

TEST_CASE("lexer: identifier length limit") {
  Limits limits;
  limits.max_identifier_length = 8;
  CHECK(lex("abcdefgh", limits).diagnostics.empty());
  Lexed l = lex("abcdefghi", limits);
  REQUIRE(l.diagnostics.size() == 1);
  CHECK(l.diagnostics.items()[0].code == diag::Code::identifier_too_long);
  CHECK(l.diagnostics.items()[0].message.find("8") != std::string::npos);
}

TEST_CASE("lexer: diagnostics stop at the limit") {
  Limits limits;
  limits.max_diagnostics = 3;
  Lexed l = lex("$ a $ b $ c $ d $ e $", limits);
  REQUIRE(l.diagnostics.size() == 4);
  CHECK(l.diagnostics.items()[3].code == diag::Code::too_many_diagnostics);
}
