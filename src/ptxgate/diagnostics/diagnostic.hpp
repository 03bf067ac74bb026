// Diagnostic records, the code table, source files, and rendering as text, JSON and SARIF.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ptxgate::diag {

/// Every diagnostic code of ptxgate, from src/ptxgate/diagnostics/codes.def.
enum class Code : uint16_t {
#define PG_DIAG(code, id, severity, title) id,
#include "ptxgate/diagnostics/codes.def"
#undef PG_DIAG
};

enum class Severity : uint8_t { error, warning, note };

/// One row of the code table.
struct CodeInfo {
  Code code;
  std::string_view name;      ///< "PG1001"
  std::string_view id;        ///< "invalid_character"
  Severity default_severity;
  std::string_view title;     ///< short description
};

/// The table of every code, in declaration order.
std::span<const CodeInfo> all_codes();
const CodeInfo& info(Code code);
/// Looks a code up by its "PG1234" name.
std::optional<Code> code_from_name(std::string_view name);
std::string_view severity_name(Severity s);

/// A text file with precomputed line starts; owns the text.
class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  /// 1-based line and column (in bytes) of a byte offset.
  std::pair<uint32_t, uint32_t> line_col(uint32_t offset) const;
  /// The text of a 1-based line without its newline.
  std::string_view line_text(uint32_t line) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

/// Where a diagnostic points. line == 0 means "no source position" (e.g. a launch).
struct Location {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  uint32_t length = 1;       ///< caret width in bytes
  /// The line's text, for the excerpt. A line longer than kMaxExcerptBytes is cut to a window
  /// around the column, with "..." where text was left out, so a diagnostic costs the same on
  /// a one-line file of megabytes.
  std::string source_line;
  /// Byte `column - 1` of the line is byte `column - 1 - source_line_offset` of source_line
  /// (0 unless the line was cut).
  uint32_t source_line_offset = 0;
};

/// The most bytes of a source line a Location keeps (locate() cuts longer lines).
inline constexpr uint32_t kMaxExcerptBytes = 160;

struct Diagnostic {
  Code code = Code::internal_error;
  Severity severity = Severity::error;
  std::string message;       ///< names the offending thing, its value and the limit
  Location location;
  std::string fix;           ///< what to change; may be empty for notes
  std::vector<std::string> notes;
};

/// An ordered list of diagnostics, the error type of every fallible public call.
class Diagnostics {
 public:
  Diagnostic& add(Code code, std::string message, Location location = {}, std::string fix = {});
  void append(const Diagnostics& other);
  bool has_errors() const;
  size_t error_count() const;
  size_t warning_count() const;
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  std::vector<Diagnostic>& items() { return items_; }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<Diagnostic> items_;
};

/// Builds a Location for a byte range of a source file.
Location locate(const SourceFile& file, uint32_t offset, uint32_t length);

enum class Format : uint8_t { text, json, sarif };
std::optional<Format> format_from_name(std::string_view name);

/// Renders like a compiler: `path:line:col: error[PG1234]: message`, the source
/// line with a caret, then `fix: ...`. Ends with a summary line when
/// `with_summary` is set and there is anything to summarise.
std::string render_text(const Diagnostics& diags, bool with_summary = true);

/// How render_text decorates its text.
struct TextStyle {
  bool color = false;  ///< ANSI colours as clang's: bold location and message, red error, magenta
                       ///< warning, cyan note, green caret and fix
};
std::string render_text(const Diagnostics& diags, bool with_summary, const TextStyle& style);

/// `--color=auto|always|never`.
enum class ColorMode : uint8_t { automatic, always, never };
std::optional<ColorMode> color_mode_from_name(std::string_view name);
/// Whether to colour a stream: always and never decide alone; auto colours a terminal unless
/// NO_COLOR is set to a non-empty value (no-color.org) or TERM is "dumb".
bool use_color(ColorMode mode, bool stream_is_terminal, const char* no_color_env, const char* term_env);

/// `-Werror`: every warning becomes an error, with a note saying so. Returns how many changed.
size_t promote_warnings(Diagnostics& diags);
/// The JSON array of diagnostic objects that render_json prints, for a command's own JSON document:
/// messages quote user bytes (paths, specs, source text) that need not be UTF-8, so every text is
/// made valid UTF-8 (each ill-formed sequence becomes U+FFFD) and the document always dumps.
nlohmann::json to_json(const Diagnostics& diags);
/// A JSON array of diagnostic objects (to_json, printed).
std::string render_json(const Diagnostics& diags);
/// A SARIF 2.1.0 log with one run of the tool "ptxgate".
std::string render_sarif(const Diagnostics& diags);
std::string render(const Diagnostics& diags, Format format);

}  // namespace ptxgate::diag
