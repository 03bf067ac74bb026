// read_ptx_entries: a small reader of PTX module directives and .entry declarations (not an
// assembler: instruction bodies are only scanned for how 64-bit parameters are used).
#include "ptxgate/toolchain/ptx_entries.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

#include "ptxgate/ir/limits.hpp"
#include "ptxgate/support/numbers.hpp"
#include "ptxgate/support/text.hpp"

namespace ptxgate::toolchain {
namespace {

using support::trim;

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}

/// The text with comments and string literals blanked (same length, newlines kept), so offsets
/// into it are offsets into the source.
std::string blank_comments(std::string_view text) {
  std::string out(text);
  size_t i = 0;
  while (i < out.size()) {
    if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i)
        if (out[i] != '\n') out[i] = ' ';
    } else if (out[i] == '"') {
      out[i++] = ' ';
      while (i < out.size() && out[i] != '"' && out[i] != '\n') out[i++] = ' ';
      if (i < out.size() && out[i] == '"') out[i++] = ' ';
    } else {
      ++i;
    }
  }
  return out;
}

struct Token {
  std::string_view text;
  size_t offset = 0;
};

/// Words ([A-Za-z0-9_$%.]+) and single punctuation characters.
class Lexer {
 public:
  Lexer(std::string_view text, size_t pos) : text_(text), pos_(pos) {}
  std::optional<Token> next() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (pos_ >= text_.size()) return std::nullopt;
    size_t begin = pos_;
    if (word_char(text_[pos_])) {
      while (pos_ < text_.size() && word_char(text_[pos_])) ++pos_;
    } else {
      ++pos_;
    }
    return Token{text_.substr(begin, pos_ - begin), begin};
  }
  std::optional<Token> peek() {
    size_t saved = pos_;
    auto t = next();
    pos_ = saved;
    return t;
  }
  size_t position() const { return pos_; }
  void seek(size_t pos) { pos_ = pos; }

 private:
  std::string_view text_;
  size_t pos_;
};

/// Byte size of a PTX fundamental type, 0 when `t` is not one.
unsigned type_bytes(std::string_view t) {
  static const std::map<std::string_view, unsigned, std::less<>> sizes = {
      {".b8", 1},  {".u8", 1},  {".s8", 1},  {".b16", 2}, {".u16", 2},  {".s16", 2},   {".f16", 2},
      {".bf16", 2}, {".b32", 4}, {".u32", 4}, {".s32", 4}, {".f32", 4},  {".f16x2", 4}, {".bf16x2", 4},
      {".b64", 8}, {".u64", 8}, {".s64", 8}, {".f64", 8}, {".b128", 16}, {".pred", 1}};
  auto it = sizes.find(t);
  return it == sizes.end() ? 0 : it->second;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || s[0] == '.' || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return word_char(c) && c != '.'; });
}

/// A CUtensorMap passed by value: 128 bytes aligned to 64 (cuda.h; what codegen emits for a
/// `tensor_map` parameter).
const uint64_t kTensorMapBytes = ir::byte_size(ir::Type::tensor_map);
constexpr uint64_t kTensorMapAlign = 64;

struct RawParam {
  std::string name;
  std::string_view type;
  bool ptr = false;
  bool array = false;
  uint64_t elements = 0;  ///< an array's element count
  uint64_t align = 0;     ///< .align N (0: none)
  size_t offset = 0;
  size_t length = 0;
};

/// The register an operand list's first `[...]` address starts with ("%rd4" of "[%rd4+8]").
std::string_view address_register(std::string_view operands) {
  size_t open = operands.find('[');
  if (open == std::string_view::npos) return {};
  std::string_view inside = trim(operands.substr(open + 1));
  size_t end = 0;
  while (end < inside.size() && word_char(inside[end]) && inside[end] != '.') ++end;
  return inside.substr(0, end);
}

/// The block granule an instruction needs (src/ptxgate/ir/block_granule.hpp): 128 for warpgroup instructions,
/// 32 for the warp-wide `.aligned` matrix instructions every lane of a warp must execute, else 1.
/// (Shuffles and votes name their lanes in a mask, so a partial warp may use them.)
uint32_t granule_of(std::string_view opcode) {
  if (opcode.starts_with("wgmma.") || opcode.starts_with("setmaxnreg.")) return ir::device::kWarpgroupSize;
  if (opcode.starts_with("mma.sync.") || opcode.starts_with("ldmatrix.") || opcode.starts_with("stmatrix.") ||
      opcode.starts_with("movmatrix."))
    return ir::device::kWarpSize;
  return 1;
}

/// Marks the 64-bit parameters whose value the body uses as a global pointer, sums the body's
/// static .shared arrays and finds its block granule.
void scan_body(std::string_view body, std::vector<RawParam>& params, std::vector<bool>& pointer, uint64_t& shared,
               uint32_t& granule) {
  std::map<std::string, size_t, std::less<>> param_of_register;  // "%rd1" -> parameter index
  size_t begin = 0;
  while (begin < body.size()) {
    size_t end = body.find(';', begin);
    if (end == std::string_view::npos) end = body.size();
    std::string_view stmt = trim(body.substr(begin, end - begin));
    begin = end + 1;
    // Scope braces, labels ("$L__BB0_2:"), line info (".loc 1 28 0", no ';') and predicates
    // ("@%p1", "@!%p1") before the opcode.
    for (bool changed = true; changed;) {
      changed = false;
      while (!stmt.empty() && (stmt.front() == '{' || stmt.front() == '}')) {
        stmt = trim(stmt.substr(1));
        changed = true;
      }
      size_t colon = stmt.find(':');
      if (colon != std::string_view::npos && is_identifier(trim(stmt.substr(0, colon)))) {
        stmt = trim(stmt.substr(colon + 1));
        changed = true;
      }
      if (stmt.starts_with(".loc") || stmt.starts_with(".file")) {  // line-info directives end at the line's end
        size_t nl = stmt.find('\n');
        stmt = nl == std::string_view::npos ? std::string_view{} : trim(stmt.substr(nl + 1));
        changed = true;
      }
      if (!stmt.empty() && stmt.front() == '@') {
        size_t sp = stmt.find_first_of(" \t\n");
        stmt = sp == std::string_view::npos ? std::string_view{} : trim(stmt.substr(sp));
        changed = true;
      }
    }
    size_t sp = stmt.find_first_of(" \t\n");
    std::string_view opcode = stmt.substr(0, sp);
    std::string_view operands = sp == std::string_view::npos ? std::string_view{} : trim(stmt.substr(sp));
    granule = std::max(granule, granule_of(opcode));
    if (opcode == ".shared") {
      Lexer lex(operands, 0);
      uint64_t align = 1, element = 0, count = 1;
      while (auto t = lex.next()) {
        if (t->text == ".align") {
          if (auto n = lex.next()) align = std::max<uint64_t>(1, support::parse_count(n->text).value_or(1));
        } else if (unsigned b = type_bytes(t->text)) {
          element = b;
        } else if (t->text == "[") {
          auto n = lex.next();
          uint64_t dim = n ? support::parse_count(n->text).value_or(0) : 0;
          count = dim != 0 && count <= UINT64_MAX / dim ? count * dim : 0;
        }
      }
      align = std::max<uint64_t>(align, element);
      if (element != 0 && count != 0 && count <= (UINT64_MAX >> 8) / element)
        shared = (shared + align - 1) / align * align + element * count;
      continue;
    }
    if (opcode.starts_with("ld.param.")) {
      if (!opcode.ends_with(".u64") && !opcode.ends_with(".b64") && !opcode.ends_with(".s64")) continue;
      size_t comma = operands.find(',');
      if (comma == std::string_view::npos) continue;
      std::string_view reg = trim(operands.substr(0, comma));
      std::string_view addr = trim(operands.substr(comma + 1));
      if (addr.size() < 2 || addr.front() != '[') continue;
      addr = trim(addr.substr(1, addr.find_first_of("+]") - 1));
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i].name == addr) param_of_register[std::string(reg)] = i;
      continue;
    }
    std::string_view source;
    if (opcode.starts_with("cvta.to.global")) {
      size_t comma = operands.find(',');
      if (comma != std::string_view::npos) source = trim(operands.substr(comma + 1));
    } else if ((opcode.starts_with("ld.") || opcode.starts_with("st.") || opcode.starts_with("atom.") ||
                opcode.starts_with("red.")) &&
               opcode.find(".shared") == std::string_view::npos && opcode.find(".local") == std::string_view::npos &&
               opcode.find(".param") == std::string_view::npos && opcode.find(".const") == std::string_view::npos) {
      source = address_register(operands);
    }
    if (source.empty()) continue;
    if (auto it = param_of_register.find(source); it != param_of_register.end()) pointer[it->second] = true;
  }
}

diag::Diagnostics one(diag::Code code, std::string message, diag::Location where, std::string fix) {
  diag::Diagnostics d;
  d.add(code, std::move(message), std::move(where), std::move(fix));
  return d;
}

/// The ".maxntid"/".reqntid" numbers after the directive (1 to 3 of them).
std::optional<std::array<uint32_t, 3>> read_dims(Lexer& lex) {
  std::array<uint32_t, 3> dims{1, 1, 1};
  for (size_t i = 0; i < 3; ++i) {
    auto t = lex.next();
    if (!t) return std::nullopt;
    auto n = support::parse_count(t->text);
    if (!n || *n == 0 || *n > 1024) return std::nullopt;
    dims[i] = static_cast<uint32_t>(*n);
    auto comma = lex.peek();
    if (!comma || comma->text != ",") return dims;
    lex.next();
  }
  return dims;
}

struct EntryReader {
  const diag::SourceFile& file;
  std::string_view clean;
  diag::Diagnostics& errors;

  diag::Location at(size_t offset, size_t length) const {
    return diag::locate(file, static_cast<uint32_t>(offset), static_cast<uint32_t>(std::max<size_t>(1, length)));
  }

  /// Reads one `.entry` whose keyword ends at `pos`; returns where reading continues.
  size_t read(size_t pos, std::vector<PtxEntry>& entries) {
    Lexer lex(clean, pos);
    auto name = lex.next();
    if (!name || !is_identifier(name->text)) {
      errors.append(one(diag::Code::expected_token, ".entry is not followed by a kernel name", at(pos, 1),
                        "pass PTX as nvcc -ptx, NVRTC or Triton wrote it"));
      return name ? name->offset + name->text.size() : clean.size();
    }
    PtxEntry entry;
    entry.info.name = std::string(name->text);
    entry.info.foreign = true;
    entry.location = at(name->offset, name->text.size());
    std::vector<RawParam> params;
    auto malformed = [&](size_t offset, std::string what) {
      errors.append(one(diag::Code::expected_token, fmt::format("entry '{}': {}", entry.info.name, what), at(offset, 1),
                        "pass PTX as nvcc -ptx, NVRTC or Triton wrote it"));
      return clean.size();
    };
    auto t = lex.next();
    if (t && t->text == "(") {
      for (bool more = true; more;) {
        auto first = lex.next();
        if (!first) return malformed(name->offset, "its parameter list is not closed");
        if (first->text == ")" && params.empty()) break;
        if (first->text != ".param") return malformed(first->offset, fmt::format("'{}' where .param was expected", first->text));
        RawParam p;
        p.offset = first->offset;
        while (true) {
          auto w = lex.next();
          if (!w) return malformed(name->offset, "its parameter list is not closed");
          if (w->text == "," || w->text == ")") {
            more = w->text == ",";
            p.length = w->offset - p.offset;
            break;
          }
          if (w->text == ".ptr") {
            p.ptr = true;
          } else if (w->text == ".align") {
            if (auto n = lex.next()) p.align = support::parse_count(n->text).value_or(0);
          } else if (type_bytes(w->text) != 0) {
            p.type = w->text;
          } else if (w->text == "[") {
            p.array = true;
            if (auto n = lex.next(); n && n->text != "]") {
              p.elements = support::parse_count(n->text).value_or(0);
              while (auto close = lex.next())
                if (close->text == "]") break;
            }
          } else if (is_identifier(w->text)) {
            p.name = std::string(w->text);
          } else if (w->text.front() != '.') {
            return malformed(w->offset, fmt::format("unexpected '{}' in a parameter", w->text));
          }
        }
        if (p.name.empty() || p.type.empty())
          return malformed(p.offset, "a parameter without a name or a type");
        params.push_back(std::move(p));
      }
      t = lex.next();
    }
    // Performance directives up to the body ('{') or the end of a declaration (';').
    while (t && t->text != "{" && t->text != ";") {
      if (t->text == ".maxntid" || t->text == ".reqntid") {
        auto dims = read_dims(lex);
        if (!dims) return malformed(t->offset, fmt::format("{} needs 1 to 3 counts from 1 to 1024", t->text));
        if (t->text == ".reqntid")
          entry.info.required_block = *dims;
        else
          entry.max_block = *dims;
      } else if (t->text == ".reqnctapercluster") {
        auto dims = read_dims(lex);
        if (!dims) return malformed(t->offset, ".reqnctapercluster needs 1 to 3 counts from 1 to 1024");
        entry.info.cluster_dims = *dims;
      } else if (t->text == ".explicitcluster") {
        entry.info.explicit_cluster = true;
      } else if (t->text == ".pragma") {
        // `.pragma "nounroll";` applies to the entry (ptxas accepts it there): its `;` does not
        // end a declaration. Its strings are blanked (commas stay); skip to the `;`.
        do t = lex.next();
        while (t && t->text == ",");
        if (!t || t->text != ";") return malformed(name->offset, ".pragma is not followed by strings and ';'");
      }
      t = lex.next();
    }
    if (!t) return malformed(name->offset, "no body");
    if (t->text == ";") return lex.position();  // a declaration (.extern .entry)
    size_t body_begin = lex.position();
    size_t depth = 1, i = body_begin;
    for (; i < clean.size() && depth > 0; ++i) {
      if (clean[i] == '{') ++depth;
      if (clean[i] == '}') --depth;
    }
    if (depth != 0) return malformed(name->offset, "its body is not closed");
    std::vector<bool> pointer(params.size(), false);
    for (size_t k = 0; k < params.size(); ++k) pointer[k] = params[k].ptr;
    scan_body(clean.substr(body_begin, i - 1 - body_begin), params, pointer, entry.info.static_shared_bytes,
              entry.info.block_granule);
    for (size_t k = 0; k < params.size(); ++k) {
      const RawParam& p = params[k];
      contract::ParamInfo info;
      info.name = p.name;
      info.index = static_cast<uint32_t>(k);
      const unsigned bytes = type_bytes(p.type);
      // `.param .align 64 .b8 m[128]`: a CUtensorMap by value (__grid_constant__), launched with a TensorMap.
      const bool map = p.array && bytes == 1 && p.elements == kTensorMapBytes && p.align == kTensorMapAlign;
      if (!map && (p.array || (bytes != 4 && bytes != 8) || p.type == ".f16x2" || p.type == ".bf16x2")) {
        entry.unsupported.append(one(diag::Code::argument_size_mismatch,
                          fmt::format("entry '{}': parameter {} '{}' is {}{}; a launch passes 4- and 8-byte scalars and "
                                      "pointers",
                                      entry.info.name, k, p.name, p.array ? "an array of " : "", p.type),
                          at(p.offset, p.length), "pass the value as a 32- or 64-bit scalar or through a pointer"));
        continue;
      }
      if (!entry.unsupported.empty()) continue;
      info.size_bytes = map ? kTensorMapBytes : bytes;
      if (map) {
        info.type = ir::Type::tensor_map;
      } else if (bytes == 8 && pointer[k] && p.type != ".f64") {
        info.is_buffer = true;
        info.type = ir::Type::void_;
        info.access = ir::Access::inout;
      } else if (p.type == ".f32") {
        info.type = ir::Type::f32;
      } else if (p.type == ".f64") {
        info.type = ir::Type::f64;
      } else if (p.type == ".s32") {
        info.type = ir::Type::i32;
      } else if (p.type == ".s64") {
        info.type = ir::Type::i64;
      } else {
        info.type = bytes == 8 ? ir::Type::u64 : ir::Type::u32;
      }
      entry.info.params.push_back(std::move(info));
    }
    entries.push_back(std::move(entry));
    return i;
  }
};

}  // namespace

bool is_binary_module(std::string_view text) {
  if (text.starts_with("\x7f" "ELF")) return true;
  return text.size() >= 4 && static_cast<unsigned char>(text[0]) == 0x50 && static_cast<unsigned char>(text[1]) == 0xED &&
         static_cast<unsigned char>(text[2]) == 0x55 && static_cast<unsigned char>(text[3]) == 0xBA;
}

ModuleFormat module_format(std::string_view bytes) {
  if (bytes.starts_with("\x7f" "ELF")) return ModuleFormat::cubin;
  if (is_binary_module(bytes)) return ModuleFormat::fatbin;
  size_t i = 0;
  while (i < bytes.size()) {
    if (std::isspace(static_cast<unsigned char>(bytes[i]))) {
      ++i;
    } else if (bytes.compare(i, 2, "//") == 0) {
      const size_t nl = bytes.find('\n', i);
      i = nl == std::string_view::npos ? bytes.size() : nl + 1;
    } else if (bytes.compare(i, 2, "/*") == 0) {
      const size_t end = bytes.find("*/", i + 2);
      i = end == std::string_view::npos ? bytes.size() : end + 2;
    } else {
      break;
    }
  }
  const std::string_view rest = bytes.substr(i);
  const bool version = rest.starts_with(".version") && (rest.size() == 8 || !word_char(rest[8]));
  return version ? ModuleFormat::ptx : ModuleFormat::ir;
}

namespace {

/// The module directives, and with `entries` every `.entry`, of PTX text.
std::expected<PtxModuleSummary, diag::Diagnostics> read_ptx(const diag::SourceFile& file, bool entries) {
  diag::Location whole;
  whole.file = file.path();
  if (is_binary_module(file.text()))
    return std::unexpected(one(diag::Code::cannot_read_file,
                               fmt::format("'{}' is a {}, not PTX text", file.path(),
                                           file.text().starts_with("\x7f" "ELF") ? "cubin (ELF)" : "fatbin"),
                               whole,
                               "pass the PTX it was built from (nvcc -ptx, NVRTC's nvrtcGetPTX, Triton's "
                               "compiled.asm[\"ptx\"])"));
  const std::string clean = blank_comments(file.text());
  PtxModuleSummary out;
  diag::Diagnostics errors;
  EntryReader reader{file, clean, errors};
  size_t depth = 0;
  bool has_version = false;
  Lexer lex(clean, 0);
  while (auto t = lex.next()) {
    if (t->text == "{") ++depth;
    if (t->text == "}" && depth > 0) --depth;
    if (depth != 0) continue;
    if (t->text == ".version" && !has_version) {
      auto v = lex.next();
      const std::string_view text = v ? v->text : std::string_view{};
      const size_t dot = text.find('.');
      auto major = support::parse_count(text.substr(0, dot), 99);
      auto minor = support::parse_count(dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1), 99);
      if (dot == std::string_view::npos || !major || !minor) {
        errors.append(one(diag::Code::expected_token, ".version is not MAJOR.MINOR", reader.at(t->offset, t->text.size()),
                          "pass PTX as nvcc -ptx, NVRTC or Triton wrote it"));
        continue;
      }
      out.isa_major = static_cast<unsigned>(*major);
      out.isa_minor = static_cast<unsigned>(*minor);
      has_version = true;
    } else if (t->text == ".target" && out.target.empty()) {
      if (auto v = lex.next(); v && is_identifier(v->text)) out.target = std::string(v->text);
    } else if (t->text == ".entry") {
      if (!entries) break;  // the module directives come before every entry
      lex.seek(reader.read(lex.position(), out.entries));
    }
  }
  if (!has_version || out.target.empty())
    errors.append(one(diag::Code::expected_token,
                      fmt::format("'{}' is not PTX: it has no {} directive", file.path(), !has_version ? ".version" : ".target"),
                      whole, "pass PTX text as nvcc -ptx, NVRTC or Triton wrote it"));
  if (entries && !errors.has_errors() && out.entries.empty())
    errors.append(one(diag::Code::kernel_not_found, fmt::format("'{}' declares no kernel (.entry with a body)", file.path()),
                      whole, "pass the PTX of a module with at least one __global__ / @triton.jit kernel"));
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  return out;
}

}  // namespace

std::expected<PtxModuleSummary, diag::Diagnostics> read_ptx_entries(const diag::SourceFile& file) {
  return read_ptx(file, true);
}

std::expected<PtxModuleSummary, diag::Diagnostics> read_ptx_header(const diag::SourceFile& file) {
  return read_ptx(file, false);
}

std::expected<const PtxEntry*, diag::Diagnostics> require_ptx_entry(const PtxModuleSummary& module, std::string_view name,
                                                                    const std::string& path) {
  std::string names;
  for (const auto& e : module.entries) {
    if (e.info.name == name) {
      if (!e.unsupported.empty()) return std::unexpected(e.unsupported);
      return &e;
    }
    names += names.empty() ? e.info.name : ", " + e.info.name;
  }
  diag::Location where;
  where.file = path;
  return std::unexpected(one(diag::Code::kernel_not_found, fmt::format("no kernel '{}' in '{}'", name, path), where,
                             fmt::format("kernels in this module: {}", names.empty() ? "(none)" : names)));
}

std::expected<void, diag::Diagnostics> check_ptx_target(std::string_view ptx_target, std::string_view arch,
                                                        const diag::Location& where) {
  auto p = ir::Target::parse(ptx_target);
  auto a = ir::Target::parse(arch);
  if (!p || !a) return {};
  if (!p->ptx_runs_on(a->generic()))
    return std::unexpected(one(
        diag::Code::unknown_target,
        fmt::format("PTX for {} cannot run on a device of {}{}", ptx_target, arch,
                    p->sm() <= a->sm() ? " (architecture-specific PTX runs only on its own architecture)" : ""),
        where, fmt::format("compile the kernel for {} or older (nvcc -arch=compute_{})", arch, a->sm())));
  return {};
}

}  // namespace ptxgate::toolchain
