// Lexer for the `.pg` text format: tokens, comments, number literals, and lexical errors.
#include "ptxgate/ir/internal/lexer.hpp"

#include <charconv>
#include <limits>

#include <fmt/format.h>

namespace ptxgate::ir {

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_hex_digit(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

struct Keyword {
  std::string_view text;
  TokenKind kind;
};
constexpr Keyword kKeywords[] = {
    {"kernel", TokenKind::kw_kernel}, {"let", TokenKind::kw_let},     {"var", TokenKind::kw_var},
    {"if", TokenKind::kw_if},         {"else", TokenKind::kw_else},   {"while", TokenKind::kw_while},
    {"for", TokenKind::kw_for},       {"break", TokenKind::kw_break}, {"continue", TokenKind::kw_continue},
    {"return", TokenKind::kw_return}, {"shared", TokenKind::kw_shared}, {"true", TokenKind::kw_true},
    {"false", TokenKind::kw_false},   {"const", TokenKind::kw_const}, {"fn", TokenKind::kw_fn},
};

/// Whether the byte at `s[i]` starts something the lexer accepts outside comments.
bool starts_token(std::string_view s, size_t i) {
  char c = s[i];
  if (is_ident_char(c)) return true;
  if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return true;
  return std::string_view("(){}[],;:.@=!<>+-*/%&|^~").find(c) != std::string_view::npos;
}

}  // namespace

std::string_view token_kind_name(TokenKind kind) {
  switch (kind) {
    case TokenKind::end_of_file: return "end of file";
    case TokenKind::identifier: return "identifier";
    case TokenKind::int_literal: return "integer literal";
    case TokenKind::float_literal: return "float literal";
    case TokenKind::kw_kernel: return "'kernel'";
    case TokenKind::kw_let: return "'let'";
    case TokenKind::kw_var: return "'var'";
    case TokenKind::kw_if: return "'if'";
    case TokenKind::kw_else: return "'else'";
    case TokenKind::kw_while: return "'while'";
    case TokenKind::kw_for: return "'for'";
    case TokenKind::kw_break: return "'break'";
    case TokenKind::kw_continue: return "'continue'";
    case TokenKind::kw_return: return "'return'";
    case TokenKind::kw_shared: return "'shared'";
    case TokenKind::kw_true: return "'true'";
    case TokenKind::kw_false: return "'false'";
    case TokenKind::kw_const: return "'const'";
    case TokenKind::kw_fn: return "'fn'";
    case TokenKind::l_paren: return "'('";
    case TokenKind::r_paren: return "')'";
    case TokenKind::l_brace: return "'{'";
    case TokenKind::r_brace: return "'}'";
    case TokenKind::l_bracket: return "'['";
    case TokenKind::r_bracket: return "']'";
    case TokenKind::comma: return "','";
    case TokenKind::semicolon: return "';'";
    case TokenKind::colon: return "':'";
    case TokenKind::dot: return "'.'";
    case TokenKind::dot_dot: return "'..'";
    case TokenKind::at: return "'@'";
    case TokenKind::assign: return "'='";
    case TokenKind::eq: return "'=='";
    case TokenKind::ne: return "'!='";
    case TokenKind::lt: return "'<'";
    case TokenKind::le: return "'<='";
    case TokenKind::gt: return "'>'";
    case TokenKind::ge: return "'>='";
    case TokenKind::shl: return "'<<'";
    case TokenKind::shr: return "'>>'";
    case TokenKind::plus: return "'+'";
    case TokenKind::minus: return "'-'";
    case TokenKind::star: return "'*'";
    case TokenKind::slash: return "'/'";
    case TokenKind::percent: return "'%'";
    case TokenKind::amp: return "'&'";
    case TokenKind::pipe: return "'|'";
    case TokenKind::caret: return "'^'";
    case TokenKind::amp_amp: return "'&&'";
    case TokenKind::pipe_pipe: return "'||'";
    case TokenKind::bang: return "'!'";
    case TokenKind::tilde: return "'~'";
    case TokenKind::arrow: return "'->'";
  }
  return "token";
}

std::string describe(const Token& token) {
  if (token.kind == TokenKind::end_of_file) return "end of file";
  constexpr size_t kShown = 40;
  if (token.text.size() > kShown) return fmt::format("'{}...'", token.text.substr(0, kShown));
  return fmt::format("'{}'", token.text);
}

size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) { n = 2; cp = b0 & 0x1F; }
  else if (b0 >= 0xE0 && b0 <= 0xEF) { n = 3; cp = b0 & 0x0F; }
  else if (b0 >= 0xF0 && b0 <= 0xF4) { n = 4; cp = b0 & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

void DiagnosticSink::error(diag::Code code, uint32_t offset, uint32_t length, std::string message, std::string fix) {
  if (stopped_) return;
  if (errors_ >= max_errors_) {
    out_.add(diag::Code::too_many_diagnostics,
             fmt::format("too many errors: stopping after {} (limit max_diagnostics = {})", errors_, max_errors_),
             diag::locate(file_, offset, length), "fix the errors above and run again");
    stopped_ = true;
    return;
  }
  ++errors_;
  out_.add(code, std::move(message), diag::locate(file_, offset, length), std::move(fix));
}

Lexer::Lexer(std::string_view text, DiagnosticSink& sink, const Limits& limits)
    : text_(text), sink_(sink), limits_(limits) {}

Token Lexer::make(TokenKind kind, uint32_t start) {
  Token t;
  t.kind = kind;
  t.offset = start;
  t.length = static_cast<uint32_t>(pos_ - start);
  t.text = text_.substr(start, t.length);
  return t;
}

void Lexer::skip_trivia() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++pos_;
    } else if (c == '/' && at(1, '/')) {
      while (pos_ < text_.size() && text_[pos_] != '\n') {
        size_t n = utf8_sequence_length(text_, pos_);
        if (n == 0 || text_[pos_] == '\0') {
          size_t start = pos_;
          while (pos_ < text_.size() && text_[pos_] != '\n' &&
                 (text_[pos_] == '\0' || utf8_sequence_length(text_, pos_) == 0))
            ++pos_;
          sink_.error(diag::Code::invalid_utf8, static_cast<uint32_t>(start), static_cast<uint32_t>(pos_ - start),
                      fmt::format("comment contains {} byte(s) that are not valid UTF-8 text, first 0x{:02X}",
                                  pos_ - start, static_cast<unsigned char>(text_[start])),
                      "save the file as UTF-8 and remove NUL or binary bytes");
        } else {
          pos_ += n;
        }
      }
    } else if (c == '/' && at(1, '*')) {
      size_t start = pos_;
      size_t close = text_.find("*/", pos_ + 2);
      if (close == std::string_view::npos) {
        pos_ = text_.size();
        sink_.error(diag::Code::unterminated_comment, static_cast<uint32_t>(start), 2,
                    "block comment '/*' is never closed before the end of the file",
                    "add '*/' where the comment should end");
        return;
      }
      for (size_t i = start + 2; i < close;) {
        size_t n = utf8_sequence_length(text_, i);
        if (n == 0 || text_[i] == '\0') {
          sink_.error(diag::Code::invalid_utf8, static_cast<uint32_t>(i), 1,
                      fmt::format("comment contains byte 0x{:02X}, which is not valid UTF-8 text",
                                  static_cast<unsigned char>(text_[i])),
                      "save the file as UTF-8 and remove NUL or binary bytes");
          break;
        }
        i += n;
      }
      pos_ = close + 2;
    } else {
      return;
    }
  }
}

Token Lexer::lex_identifier() {
  uint32_t start = static_cast<uint32_t>(pos_);
  while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
  Token t = make(TokenKind::identifier, start);
  for (const auto& kw : kKeywords)
    if (kw.text == t.text) t.kind = kw.kind;
  if (t.length > limits_.max_identifier_length)
    sink_.error(diag::Code::identifier_too_long, start, t.length,
                fmt::format("identifier '{}...' is {} bytes long; the limit is {}", t.text.substr(0, 32), t.length,
                            limits_.max_identifier_length),
                "use a shorter name");
  return t;
}

Token Lexer::lex_number() {
  uint32_t start = static_cast<uint32_t>(pos_);
  bool malformed = false;
  std::string why;
  bool is_float = false;
  bool overflow = false;
  uint64_t value = 0;
  auto push_digit = [&](unsigned base, unsigned d) {
    if (value > (std::numeric_limits<uint64_t>::max() - d) / base) overflow = true;
    value = value * base + d;
  };
  // Digits with `_` separators; returns the count of digits (not separators).
  auto digit_run = [&](bool hex) {
    size_t digits = 0;
    char last = 0;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '_' && digits > 0) {
        last = c;
        ++pos_;
        continue;
      }
      if (!(hex ? is_hex_digit(c) : is_digit(c))) break;
      if (!is_float) push_digit(hex ? 16 : 10, hex ? hex_value(c) : c - '0');
      last = c;
      ++digits;
      ++pos_;
    }
    if (last == '_') {
      malformed = true;
      why = "a digit separator '_' must be followed by a digit";
    }
    return digits;
  };

  if (text_[pos_] == '0' && (at(1, 'x') || at(1, 'X'))) {
    pos_ += 2;
    if (digit_run(true) == 0) {
      malformed = true;
      why = "hexadecimal literal has no digits after '0x'";
    }
  } else {
    digit_run(false);
    if (at(0, '.') && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      digit_run(false);
    }
    if ((at(0, 'e') || at(0, 'E')) &&
        ((pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1])) ||
         ((at(1, '+') || at(1, '-')) && pos_ + 2 < text_.size() && is_digit(text_[pos_ + 2])))) {
      is_float = true;
      pos_ += (at(1, '+') || at(1, '-')) ? 2 : 1;
      digit_run(false);
    }
  }
  if (pos_ < text_.size() && is_ident_char(text_[pos_])) {
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    malformed = true;
    why = "letters or digits follow the number directly";
  }
  Token t = make(is_float ? TokenKind::float_literal : TokenKind::int_literal, start);
  if (malformed) {
    sink_.error(diag::Code::malformed_number, start, t.length,
                fmt::format("malformed number literal {}: {}", describe(t), why),
                "write a decimal (123, 1_000), hexadecimal (0xFF) or float (1.5, 2e-3) literal");
    return t;
  }
  if (is_float) {
    std::string digits;
    for (char c : t.text)
      if (c != '_') digits += c;
    double d = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), d);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) {
      sink_.error(diag::Code::malformed_number, start, t.length,
                  fmt::format("float literal {} is out of the range of f64 (about 2.2e-308 to 1.8e308)", describe(t)),
                  "use a value within the range of f64");
    }
    t.float_value = d;
  } else if (overflow) {
    sink_.error(diag::Code::malformed_number, start, t.length,
                fmt::format("integer literal {} does not fit in 64 bits (the largest is 18446744073709551615)",
                            describe(t)),
                "use a smaller value");
  } else {
    t.int_value = value;
  }
  return t;
}

void Lexer::lex_invalid() {
  // Consume a run of bytes of one kind (invalid UTF-8, or valid but unexpected
  // characters) that cannot start a token, and report the run once.
  size_t start = pos_;
  const bool bad_utf8 = utf8_sequence_length(text_, start) == 0;
  size_t chars = 0;
  while (pos_ < text_.size() && !starts_token(text_, pos_)) {
    size_t n = utf8_sequence_length(text_, pos_);
    if ((n == 0) != bad_utf8) break;
    pos_ += bad_utf8 ? 1 : n;
    ++chars;
  }
  unsigned char first = static_cast<unsigned char>(text_[start]);
  std::string what;
  if (bad_utf8)
    what = fmt::format("byte 0x{:02X} is not valid UTF-8 text", first);
  else if (first == 0)
    what = "invalid character NUL (0x00)";
  else if (first < 0x20 || first == 0x7F)
    what = fmt::format("invalid control character 0x{:02X}", first);
  else if (first < 0x80)
    what = fmt::format("invalid character '{}'", static_cast<char>(first));
  else
    what = fmt::format("invalid character '{}' (only ASCII is allowed outside comments)",
                       text_.substr(start, utf8_sequence_length(text_, start)));
  if (chars > 1) what += fmt::format(" (and {} more like it)", chars - 1);
  sink_.error(bad_utf8 ? diag::Code::invalid_utf8 : diag::Code::invalid_character, static_cast<uint32_t>(start),
              static_cast<uint32_t>(pos_ - start), std::move(what),
              bad_utf8 ? "save the file as UTF-8 text" : "remove the character or put it in a comment");
}

Token Lexer::next() {
  for (;;) {
    skip_trivia();
    if (pos_ >= text_.size()) {
      Token t;
      t.offset = static_cast<uint32_t>(text_.size());
      return t;
    }
    char c = text_[pos_];
    if (is_ident_start(c)) return lex_identifier();
    if (is_digit(c)) return lex_number();
    uint32_t start = static_cast<uint32_t>(pos_);
    auto one = [&](TokenKind k) { pos_ += 1; return make(k, start); };
    auto two = [&](TokenKind k) { pos_ += 2; return make(k, start); };
    switch (c) {
      case '(': return one(TokenKind::l_paren);
      case ')': return one(TokenKind::r_paren);
      case '{': return one(TokenKind::l_brace);
      case '}': return one(TokenKind::r_brace);
      case '[': return one(TokenKind::l_bracket);
      case ']': return one(TokenKind::r_bracket);
      case ',': return one(TokenKind::comma);
      case ';': return one(TokenKind::semicolon);
      case ':': return one(TokenKind::colon);
      case '@': return one(TokenKind::at);
      case '.': return at(1, '.') ? two(TokenKind::dot_dot) : one(TokenKind::dot);
      case '=': return at(1, '=') ? two(TokenKind::eq) : one(TokenKind::assign);
      case '!': return at(1, '=') ? two(TokenKind::ne) : one(TokenKind::bang);
      case '<': return at(1, '=') ? two(TokenKind::le) : at(1, '<') ? two(TokenKind::shl) : one(TokenKind::lt);
      case '>': return at(1, '=') ? two(TokenKind::ge) : at(1, '>') ? two(TokenKind::shr) : one(TokenKind::gt);
      case '&': return at(1, '&') ? two(TokenKind::amp_amp) : one(TokenKind::amp);
      case '|': return at(1, '|') ? two(TokenKind::pipe_pipe) : one(TokenKind::pipe);
      case '+': return one(TokenKind::plus);
      case '-': return at(1, '>') ? two(TokenKind::arrow) : one(TokenKind::minus);
      case '*': return one(TokenKind::star);
      case '/': return one(TokenKind::slash);
      case '%': return one(TokenKind::percent);
      case '^': return one(TokenKind::caret);
      case '~': return one(TokenKind::tilde);
      default: lex_invalid(); break;  // reported; skip it and lex on
    }
  }
}

std::vector<Token> tokenize(const diag::SourceFile& file, diag::Diagnostics& diagnostics, const Limits& limits) {
  DiagnosticSink sink(file, diagnostics, limits.max_diagnostics);
  Lexer lexer(file.text(), sink, limits);
  std::vector<Token> tokens;
  for (;;) {
    tokens.push_back(lexer.next());
    if (tokens.back().kind == TokenKind::end_of_file) return tokens;
  }
}

}  // namespace ptxgate::ir
