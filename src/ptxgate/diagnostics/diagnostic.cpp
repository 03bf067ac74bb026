// Diagnostic code table, source positions and the text/JSON/SARIF renderers.
#include "ptxgate/diagnostics/diagnostic.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ptxgate::diag {
namespace {

constexpr CodeInfo kCodes[] = {
#define PG_DIAG(code, id, severity, title) {Code::id, #code, #id, Severity::severity, title},
#include "ptxgate/diagnostics/codes.def"
#undef PG_DIAG
};

}  // namespace

std::span<const CodeInfo> all_codes() { return kCodes; }

const CodeInfo& info(Code code) { return kCodes[static_cast<size_t>(code)]; }

std::optional<Code> code_from_name(std::string_view name) {
  for (const auto& c : kCodes)
    if (c.name == name) return c.code;
  return std::nullopt;
}

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::error: return "error";
    case Severity::warning: return "warning";
    case Severity::note: return "note";
  }
  return "error";
}

SourceFile::SourceFile(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

std::pair<uint32_t, uint32_t> SourceFile::line_col(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
  return {static_cast<uint32_t>(line_index + 1), offset - line_starts_[line_index] + 1};
}

std::string_view SourceFile::line_text(uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  uint32_t begin = line_starts_[line - 1];
  uint32_t end = line < line_starts_.size() ? line_starts_[line] : static_cast<uint32_t>(text_.size());
  std::string_view view(text_.data() + begin, end - begin);
  while (!view.empty() && (view.back() == '\n' || view.back() == '\r')) view.remove_suffix(1);
  return view;
}

Location locate(const SourceFile& file, uint32_t offset, uint32_t length) {
  auto [line, col] = file.line_col(offset);
  Location loc;
  loc.file = file.path();
  loc.line = line;
  loc.column = col;
  loc.length = std::max<uint32_t>(1, length);
  const std::string_view text = file.line_text(line);
  if (text.size() <= kMaxExcerptBytes) {
    loc.source_line = std::string(text);
    return loc;
  }
  // A window of kMaxExcerptBytes with the caret about a third in, never splitting a UTF-8 sequence.
  auto continuation = [&](size_t i) { return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; };
  const size_t caret = std::min<size_t>(col > 0 ? col - 1 : 0, text.size());
  size_t begin = caret > kMaxExcerptBytes / 3 ? caret - kMaxExcerptBytes / 3 : 0;
  begin = std::min<size_t>(begin, text.size() - kMaxExcerptBytes);
  if (begin <= 3) begin = 0;
  while (begin > 0 && continuation(begin)) --begin;
  size_t end = std::min<size_t>(begin + kMaxExcerptBytes, text.size());
  while (end < text.size() && continuation(end)) --end;
  const std::string_view cut = "...";
  loc.source_line = std::string(begin > 0 ? cut : "");
  loc.source_line += text.substr(begin, end - begin);
  if (end < text.size()) loc.source_line += cut;
  loc.source_line_offset = begin > 0 ? static_cast<uint32_t>(begin - cut.size()) : 0;
  return loc;
}

Diagnostic& Diagnostics::add(Code code, std::string message, Location location, std::string fix) {
  Diagnostic d;
  d.code = code;
  d.severity = info(code).default_severity;
  d.message = std::move(message);
  d.location = std::move(location);
  d.fix = std::move(fix);
  items_.push_back(std::move(d));
  return items_.back();
}

void Diagnostics::append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

bool Diagnostics::has_errors() const { return error_count() > 0; }

size_t Diagnostics::error_count() const {
  return static_cast<size_t>(std::count_if(items_.begin(), items_.end(),
                                            [](const Diagnostic& d) { return d.severity == Severity::error; }));
}

size_t Diagnostics::warning_count() const {
  return static_cast<size_t>(std::count_if(items_.begin(), items_.end(),
                                            [](const Diagnostic& d) { return d.severity == Severity::warning; }));
}

std::optional<Format> format_from_name(std::string_view name) {
  if (name == "text") return Format::text;
  if (name == "json") return Format::json;
  if (name == "sarif") return Format::sarif;
  return std::nullopt;
}

namespace {

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), 0 when it is not one.
size_t utf8_sequence(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = b(0);
  size_t n = lead < 0x80 ? 1 : (lead & 0xe0) == 0xc0 ? 2 : (lead & 0xf0) == 0xe0 ? 3 : (lead & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || n > s.size() || (n == 2 && lead < 0xc2) || (n == 4 && lead > 0xf4)) return 0;
  for (size_t i = 1; i < n; ++i)
    if ((b(i) & 0xc0) != 0x80) return 0;
  if (n == 3 && ((lead == 0xe0 && b(1) < 0xa0) || (lead == 0xed && b(1) >= 0xa0))) return 0;  // overlong, surrogate
  if (n == 4 && ((lead == 0xf0 && b(1) < 0x90) || (lead == 0xf4 && b(1) >= 0x90))) return 0;  // overlong, > U+10FFFF
  return n;
}

// Text from a file or a tool made safe for a terminal: a C0 control character or DEL becomes its
// Unicode control picture (U+2400-U+2421, one column wide, so a caret still lines up), a C1 control
// character (U+0080-U+009F) or a byte that is not UTF-8 becomes \xNN. A terminal never sees an
// escape sequence, a bell or a NUL (which would end the C string the text is written as).
// `keep_layout`: newlines and tabs stay (messages); otherwise a tab is one space (source lines).
std::string terminal_safe(std::string_view text, bool keep_layout) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const unsigned char c = static_cast<unsigned char>(text.front());
    if ((c == '\n' || c == '\t') && keep_layout) {
      out.push_back(static_cast<char>(c));
      text.remove_prefix(1);
    } else if (c == '\t') {
      out.push_back(' ');
      text.remove_prefix(1);
    } else if (c < 0x20 || c == 0x7f) {
      const unsigned picture = c == 0x7f ? 0x2421 : 0x2400 + c;  // three UTF-8 bytes
      out.push_back(static_cast<char>(0xe0 | (picture >> 12)));
      out.push_back(static_cast<char>(0x80 | ((picture >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (picture & 0x3f)));
      text.remove_prefix(1);
    } else if (const size_t n = utf8_sequence(text); n == 0 || (n == 2 && c == 0xc2 && static_cast<unsigned char>(text[1]) < 0xa0)) {
      for (size_t i = 0; i < std::max<size_t>(n, 1); ++i)
        out += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[i]));
      text.remove_prefix(std::max<size_t>(n, 1));
    } else {
      out.append(text.substr(0, n));
      text.remove_prefix(n);
    }
  }
  return out;
}

}  // namespace

std::string render_text(const Diagnostics& diags, bool with_summary) { return render_text(diags, with_summary, {}); }

std::string render_text(const Diagnostics& diags, bool with_summary, const TextStyle& style) {
  // SGR sequences as clang's diagnostics use them; empty strings when colour is off.
  const bool c = style.color;
  const std::string_view bold = c ? "\033[1m" : "", reset = c ? "\033[0m" : "", green = c ? "\033[1;32m" : "";
  auto severity_color = [c](Severity s) -> std::string_view {
    if (!c) return "";
    return s == Severity::error ? "\033[1;31m" : s == Severity::warning ? "\033[1;35m" : "\033[1;36m";
  };
  std::string out;
  for (const auto& d : diags) {
    const auto& loc = d.location;
    out += bold;
    const std::string file = terminal_safe(loc.file, false);
    if (!file.empty() && loc.line > 0)
      out += fmt::format("{}:{}:{}: ", file, loc.line, loc.column);
    else if (!file.empty())
      out += fmt::format("{}: ", file);
    out += fmt::format("{}{}[{}]:{}{} {}{}\n", severity_color(d.severity), severity_name(d.severity), info(d.code).name,
                       reset, bold, terminal_safe(d.message, true), reset);
    if (loc.line > 0 && !loc.source_line.empty()) {
      const std::string line = terminal_safe(loc.source_line, false);
      out += fmt::format("  {:>4} | {}\n", loc.line, line);
      size_t col = loc.column > loc.source_line_offset + 1 ? loc.column - 1 - loc.source_line_offset : 0;
      size_t width = std::max<size_t>(1, std::min<size_t>(loc.length, line.size() > col ? line.size() - col : 1));
      out += fmt::format("       | {}{}{}{}\n", std::string(col, ' '), green, std::string(width, '^'), reset);
    }
    for (const auto& note : d.notes)
      out += fmt::format("{}note:{} {}\n", severity_color(Severity::note), reset, terminal_safe(note, true));
    if (!d.fix.empty()) out += fmt::format("{}fix:{} {}\n", green, reset, terminal_safe(d.fix, true));
  }
  if (with_summary) {
    size_t errors = diags.error_count(), warnings = diags.warning_count();
    if (errors || warnings)
      out += fmt::format("{} error{}, {} warning{}\n", errors, errors == 1 ? "" : "s", warnings,
                         warnings == 1 ? "" : "s");
  }
  return out;
}

std::optional<ColorMode> color_mode_from_name(std::string_view name) {
  if (name == "auto") return ColorMode::automatic;
  if (name == "always") return ColorMode::always;
  if (name == "never") return ColorMode::never;
  return std::nullopt;
}

bool use_color(ColorMode mode, bool stream_is_terminal, const char* no_color_env, const char* term_env) {
  if (mode != ColorMode::automatic) return mode == ColorMode::always;
  if (no_color_env != nullptr && *no_color_env != '\0') return false;
  if (term_env != nullptr && std::string_view(term_env) == "dumb") return false;
  return stream_is_terminal;
}

size_t promote_warnings(Diagnostics& diags) {
  size_t promoted = 0;
  for (auto& d : diags.items()) {
    if (d.severity != Severity::warning) continue;
    d.severity = Severity::error;
    d.notes.push_back("-Werror turned this warning into an error");
    ++promoted;
  }
  return promoted;
}

namespace {

/// `text` with every byte sequence that is not well-formed UTF-8 replaced by U+FFFD, one per
/// maximal ill-formed subpart (the Unicode recommendation, and what nlohmann::json's `replace`
/// error handler writes), so that the JSON of a diagnostic never throws.
std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    // The well-formed sequences (Unicode Table 3-7): the lead byte fixes the length and the range
    // of the second byte; later bytes are 80..BF.
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) length = 2;
    else if (b == 0xE0) length = 3, low = 0xA0;
    else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) length = 3;
    else if (b == 0xED) length = 3, high = 0x9F;
    else if (b == 0xF0) length = 4, low = 0x90;
    else if (b >= 0xF1 && b <= 0xF3) length = 4;
    else if (b == 0xF4) length = 4, high = 0x8F;
    if (length == 0) {  // not a lead byte
      out += kReplacement;
      ++i;
      continue;
    }
    size_t k = i + 1;
    for (; k < i + length && k < text.size(); ++k) {
      const auto c = static_cast<unsigned char>(text[k]);
      if (c < (k == i + 1 ? low : 0x80) || c > (k == i + 1 ? high : 0xBF)) break;
    }
    if (k == i + length) {
      out.append(text.substr(i, length));
    } else {
      out += kReplacement;  // the subpart up to the byte that broke it; that byte is read again
    }
    i = k;
  }
  return out;
}

nlohmann::json to_json(const Diagnostic& d) {
  nlohmann::json j;
  j["code"] = info(d.code).name;
  j["id"] = info(d.code).id;
  j["severity"] = severity_name(d.severity);
  j["message"] = valid_utf8(d.message);
  if (!d.location.file.empty()) j["file"] = valid_utf8(d.location.file);
  if (d.location.line > 0) {
    j["line"] = d.location.line;
    j["column"] = d.location.column;
    j["length"] = d.location.length;
  }
  if (!d.fix.empty()) j["fix"] = valid_utf8(d.fix);
  if (!d.notes.empty()) {
    nlohmann::json notes = nlohmann::json::array();
    for (const auto& note : d.notes) notes.push_back(valid_utf8(note));
    j["notes"] = std::move(notes);
  }
  return j;
}

}  // namespace

nlohmann::json to_json(const Diagnostics& diags) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& d : diags) arr.push_back(to_json(d));
  return arr;
}

std::string render_json(const Diagnostics& diags) { return to_json(diags).dump(2) + "\n"; }

std::string render_sarif(const Diagnostics& diags) {
  nlohmann::json rules = nlohmann::json::array();
  std::vector<Code> used;
  for (const auto& d : diags)
    if (std::find(used.begin(), used.end(), d.code) == used.end()) used.push_back(d.code);
  for (Code c : used) {
    const auto& ci = info(c);
    rules.push_back({{"id", ci.name},
                     {"name", ci.id},
                     {"shortDescription", {{"text", ci.title}}},
                     {"defaultConfiguration", {{"level", severity_name(ci.default_severity)}}}});
  }
  nlohmann::json results = nlohmann::json::array();
  for (const auto& d : diags) {
    nlohmann::json r;
    r["ruleId"] = info(d.code).name;
    r["ruleIndex"] = static_cast<size_t>(std::find(used.begin(), used.end(), d.code) - used.begin());
    r["level"] = severity_name(d.severity);
    std::string text = d.message;
    if (!d.fix.empty()) text += " (fix: " + d.fix + ")";
    r["message"] = {{"text", text}};
    if (!d.location.file.empty()) {
      nlohmann::json phys;
      phys["artifactLocation"] = {{"uri", d.location.file}};
      if (d.location.line > 0)
        phys["region"] = {{"startLine", d.location.line},
                          {"startColumn", d.location.column},
                          {"endColumn", d.location.column + d.location.length}};
      r["locations"] = nlohmann::json::array({{{"physicalLocation", phys}}});
    }
    results.push_back(std::move(r));
  }
  nlohmann::json log;
  log["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  log["version"] = "2.1.0";
  log["runs"] = nlohmann::json::array(
      {{{"tool", {{"driver", {{"name", "ptxgate"}, {"version", PTXGATE_VERSION}, {"rules", rules}}}}},
        {"results", results}}});
  return log.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render(const Diagnostics& diags, Format format) {
  switch (format) {
    case Format::text: return render_text(diags);
    case Format::json: return render_json(diags);
    case Format::sarif: return render_sarif(diags);
  }
  return render_text(diags);
}

}  // namespace ptxgate::diag
