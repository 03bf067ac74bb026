// Lexer for the `.pg` text format: bytes to tokens, with lexical diagnostics and limits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/limits.hpp"

namespace ptxgate::ir {

/// Token kinds. Keywords are reserved; `in`, `out`, `inout` and `step` are
/// contextual identifiers, type names are identifiers too.
enum class TokenKind : uint8_t {
  end_of_file,
  identifier,
  int_literal,
  float_literal,
  // keywords
  kw_kernel, kw_let, kw_var, kw_if, kw_else, kw_while, kw_for, kw_break, kw_continue, kw_return,
  kw_shared, kw_true, kw_false, kw_const, kw_fn,
  // punctuation
  l_paren, r_paren, l_brace, r_brace, l_bracket, r_bracket,
  comma, semicolon, colon, dot, dot_dot, at,
  assign, eq, ne, lt, le, gt, ge, shl, shr,
  plus, minus, star, slash, percent, amp, pipe, caret, amp_amp, pipe_pipe, bang, tilde,
  arrow,  ///< `->` before a device function's result type
};

/// A short fixed spelling of a kind ("';'", "identifier", "end of file").
std::string_view token_kind_name(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::end_of_file;
  uint32_t offset = 0;
  uint32_t length = 0;
  std::string_view text;   ///< view into the source text
  uint64_t int_value = 0;  ///< int_literal: value (valid unless the lexer reported an error)
  double float_value = 0;  ///< float_literal
};

/// Receives diagnostics and enforces `max_diagnostics` (PG1905): once the limit of
/// errors is reached it records PG1905 and reports `stopped()`.
class DiagnosticSink {
 public:
  DiagnosticSink(const diag::SourceFile& file, diag::Diagnostics& out, uint32_t max_errors)
      : file_(file), out_(out), max_errors_(max_errors) {}
  /// Adds an error at a byte range of the file; ignored once stopped.
  void error(diag::Code code, uint32_t offset, uint32_t length, std::string message, std::string fix);
  bool stopped() const { return stopped_; }
  /// Stops further reporting (used when a fatal limit is hit).
  void stop() { stopped_ = true; }
  const diag::SourceFile& file() const { return file_; }

 private:
  const diag::SourceFile& file_;
  diag::Diagnostics& out_;
  uint32_t max_errors_;
  uint32_t errors_ = 0;
  bool stopped_ = false;
};

/// Produces tokens one at a time; whitespace and comments are skipped. Lexical
/// errors (PG1001 invalid character, PG1002 unterminated comment, PG1003 malformed
/// number, PG1009 invalid UTF-8, PG1904 identifier too long) go to the sink.
/// A run of consecutive invalid bytes is reported once and skipped.
class Lexer {
 public:
  Lexer(std::string_view text, DiagnosticSink& sink, const Limits& limits);
  /// The next token; returns end_of_file forever at the end.
  Token next();

 private:
  void skip_trivia();
  Token lex_number();
  Token lex_identifier();
  void lex_invalid();
  Token make(TokenKind kind, uint32_t start);
  bool at(size_t i, char c) const { return pos_ + i < text_.size() && text_[pos_ + i] == c; }

  std::string_view text_;
  DiagnosticSink& sink_;
  const Limits& limits_;
  size_t pos_ = 0;
};

/// Convenience for tests and tools: every token of `file` up to and including end_of_file.
std::vector<Token> tokenize(const diag::SourceFile& file, diag::Diagnostics& diagnostics, const Limits& limits = {});

/// Describes a token for messages: "'let'", "identifier 'foo'", "end of file".
std::string describe(const Token& token);

/// Length of the valid UTF-8 sequence at `s[i]`, or 0 if the bytes there are not valid UTF-8.
size_t utf8_sequence_length(std::string_view s, size_t i);

}  // namespace ptxgate::ir
