// read_cubin_entries: kernels of a cubin from its ELF tables and NVIDIA's per-kernel attribute
// records (.nv.info). Every offset and size read from the file is checked against the file
// before it is used: a truncated or forged cubin is a PG5001, never a read outside the bytes.
#include "ptxgate/toolchain/cubin_entries.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "ptxgate/ir/ast.hpp"
#include "ptxgate/ir/limits.hpp"
#include "ptxgate/support/numbers.hpp"
#include "ptxgate/support/text.hpp"

namespace ptxgate::toolchain {
namespace {

// Attribute record formats and the attributes read here (cuobjdump names them EIFMT_*/EIATTR_*).
constexpr uint8_t kFmtBval = 0x02, kFmtSval = 0x04;
constexpr uint8_t kAttrMaxThreads = 0x05, kAttrReqntid = 0x10, kAttrFrameSize = 0x11, kAttrKparamInfo = 0x17,
                  kAttrRegcount = 0x2f, kAttrCtaPerCluster = 0x3d, kAttrExplicitCluster = 0x3e,
                  kAttrNumBarriers = 0x4c;
constexpr uint16_t kMachineCuda = 190;
constexpr uint32_t kShtSymtab = 2, kShtNobits = 8;
constexpr uint8_t kSttFunc = 2, kStoCudaEntry = 0x10;
/// sm_90 and newer cubins place the block's reserved shared memory (1 KiB, the driver's
/// CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK) at the start of each kernel's
/// .nv.shared section; they are the cubins with a `.nv.shared.reserved.0` section.
constexpr uint64_t kReservedSharedPrefix = 1024;

diag::Diagnostics one(diag::Code code, std::string message, const diag::Location& where, std::string fix) {
  diag::Diagnostics d;
  d.add(code, std::move(message), where, std::move(fix));
  return d;
}

uint16_t rd16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t rd32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t rd64(const unsigned char* p) { return rd32(p) | (static_cast<uint64_t>(rd32(p + 4)) << 32); }

struct Section {
  std::string_view name;
  uint32_t type = 0, link = 0;
  uint64_t offset = 0, size = 0;
};

/// One attribute record of a .nv.info section.
struct Attribute {
  uint8_t format = 0, attr = 0;
  uint16_t value = 0;               ///< the value (HVAL, BVAL) or the payload's length (SVAL)
  std::string_view payload;         ///< SVAL only
};

/// The records of a .nv.info section; false when one runs past the section.
bool read_attributes(std::string_view bytes, std::vector<Attribute>& out) {
  size_t at = 0;
  while (at + 4 <= bytes.size()) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + at);
    Attribute a{p[0], p[1], rd16(p + 2), {}};
    at += 4;
    if (a.format == kFmtSval) {
      if (a.value > bytes.size() - at) return false;
      a.payload = bytes.substr(at, a.value);
      at += a.value;
    }
    out.push_back(a);
  }
  return at == bytes.size();
}

std::array<uint32_t, 3> dims_of(std::string_view payload) {
  std::array<uint32_t, 3> d{0, 0, 0};
  if (payload.size() < 12) return d;
  const auto* p = reinterpret_cast<const unsigned char*>(payload.data());
  for (int i = 0; i < 3; ++i) d[i] = rd32(p + 4 * i);
  return d;
}

uint64_t product(const std::array<uint32_t, 3>& d) {
  return static_cast<uint64_t>(d[0]) * d[1] * d[2];
}

class CubinReader {
 public:
  explicit CubinReader(const diag::SourceFile& file) : file_(file), bytes_(file.text()) { where_.file = file.path(); }

  std::expected<PtxModuleSummary, diag::Diagnostics> read() {
    if (!bytes_.starts_with("\x7f" "ELF")) return bad("it does not start with an ELF header");
    if (bytes_.size() < 0x40) return bad(fmt::format("it is {} bytes long, shorter than an ELF header (64)", bytes_.size()));
    const auto* h = data(0);
    if (h[4] != 2 || h[5] != 1) return bad("it is not a little-endian 64-bit ELF");
    if (rd16(h + 0x12) != kMachineCuda)
      return bad(fmt::format("its ELF machine is {}, not CUDA ({})", rd16(h + 0x12), kMachineCuda));
    const uint32_t flags = rd32(h + 0x30);
    // ABI 7 (OSABI 0x33) keeps the SM in e_flags' low byte, ABI 8 (OSABI 0x41) in the second.
    const unsigned sm = h[7] == 0x33 ? (flags & 0xff) : ((flags >> 8) & 0xff);
    if (sm < 10) return bad(fmt::format("its ELF flags {:#x} name no GPU architecture", flags));
    if (auto ok = read_sections(); !ok) return std::unexpected(ok.error());
    if (auto ok = read_segments(); !ok) return std::unexpected(ok.error());

    PtxModuleSummary out;
    out.binary_arch = ir::Target(sm).name();
    bool reserved_prefix = false;
    std::map<std::string_view, const Section*> by_name;
    for (const auto& s : sections_) {
      by_name.emplace(s.name, &s);
      if (s.name == ".nv.shared.reserved.0") reserved_prefix = true;
    }
    auto symbols = read_symbols();
    if (!symbols) return std::unexpected(symbols.error());

    // Module-wide records (.nv.info): registers and stack frame, keyed by symbol index.
    std::map<uint32_t, uint32_t> registers, frame;
    if (auto it = by_name.find(".nv.info"); it != by_name.end()) {
      std::vector<Attribute> attrs;
      if (!read_attributes(contents(*it->second), attrs)) return bad("its .nv.info records run past their section");
      for (const auto& a : attrs) {
        if (a.format != kFmtSval || a.payload.size() < 8) continue;
        const auto* p = reinterpret_cast<const unsigned char*>(a.payload.data());
        if (a.attr == kAttrRegcount) registers[rd32(p)] = rd32(p + 4);
        if (a.attr == kAttrFrameSize) frame[rd32(p)] = rd32(p + 4);
      }
    }

    for (const auto& sym : *symbols) {
      if (!sym.entry) continue;
      PtxEntry entry;
      entry.info.name = std::string(sym.name);
      entry.info.foreign = true;
      entry.location = where_;
      contract::KernelResources res;
      if (auto r = registers.find(sym.index); r != registers.end()) res.registers_per_thread = r->second;
      if (auto f = frame.find(sym.index); f != frame.end()) res.local_bytes = f->second;
      if (auto s = by_name.find(fmt::format(".nv.shared.{}", sym.name)); s != by_name.end()) {
        const uint64_t size = s->second->size;
        res.static_shared_bytes = reserved_prefix ? (size > kReservedSharedPrefix ? size - kReservedSharedPrefix : 0) : size;
      }
      if (auto c = by_name.find(fmt::format(".nv.constant0.{}", sym.name)); c != by_name.end())
        res.constant_bytes = c->second->size;

      struct Param {
        uint32_t size = 0;
        bool seen = false;
      };
      std::vector<Param> params;
      if (auto info = by_name.find(fmt::format(".nv.info.{}", sym.name)); info != by_name.end()) {
        std::vector<Attribute> attrs;
        if (!read_attributes(contents(*info->second), attrs))
          return bad(fmt::format("the records of kernel '{}' (.nv.info.{}) run past their section", sym.name, sym.name));
        for (const auto& a : attrs) {
          if (a.attr == kAttrKparamInfo && a.format == kFmtSval && a.payload.size() >= 12) {
            // u32 index, u16 ordinal, u16 offset, u32 {log2 alignment:8, space:4, cbank:6, size:14}
            const auto* p = reinterpret_cast<const unsigned char*>(a.payload.data());
            const uint16_t ordinal = rd16(p + 4);
            if (ordinal >= 4096) return bad(fmt::format("kernel '{}' has a parameter numbered {}", sym.name, ordinal));
            if (ordinal >= params.size()) params.resize(ordinal + 1u);
            params[ordinal] = {(rd32(p + 8) >> 18) & 0x3fff, true};
          } else if ((a.attr == kAttrReqntid || a.attr == kAttrMaxThreads) && a.format == kFmtSval) {
            // Present means bounded: every axis must be 1 to 1024 (an axis of 0 is no bound of 0).
            const auto dims = dims_of(a.payload);
            if (a.payload.size() < 12 || std::ranges::any_of(dims, [](uint32_t d) { return d < 1 || d > 1024; }))
              return bad(fmt::format("kernel '{}' records a thread bound of {}\u00d7{}\u00d7{} (each axis 1 to 1024)", sym.name,
                                     dims[0], dims[1], dims[2]));
            (a.attr == kAttrReqntid ? entry.info.required_block : entry.max_block) = dims;
          } else if (a.attr == kAttrNumBarriers && a.format == kFmtBval) {
            res.barriers = a.value & 0xff;
          } else if (a.attr == kAttrCtaPerCluster && a.format == kFmtSval) {
            // __cluster_dims__ / .reqnctapercluster: the cluster shape, three u32.
            const auto dims = dims_of(a.payload);
            if (a.payload.size() < 12 || std::ranges::any_of(dims, [](uint32_t d) { return d < 1 || d > 1024; }))
              return bad(fmt::format("kernel '{}' records a cluster shape of {}\u00d7{}\u00d7{} (each axis 1 to 1024)",
                                     sym.name, dims[0], dims[1], dims[2]));
            entry.info.cluster_dims = dims;
          } else if (a.attr == kAttrExplicitCluster) {
            entry.info.explicit_cluster = true;
          }
        }
      }
      if (auto forged = check_limits(sym.name, res); !forged.empty()) return bad(std::move(forged));
      uint64_t limit = 1024;
      if (entry.info.has_required_block()) limit = std::min(limit, product(entry.info.required_block));
      if (entry.max_block[0] != 0) limit = std::min(limit, product(entry.max_block));
      res.max_threads_per_block = static_cast<uint32_t>(limit);
      entry.info.static_shared_bytes = res.static_shared_bytes;
      entry.resources = res;

      for (size_t k = 0; k < params.size(); ++k) {
        const std::string name = fmt::format("param{}", k);
        if (!params[k].seen)
          return bad(fmt::format("kernel '{}' records parameters up to {} but not parameter {}", sym.name,
                                 params.size() - 1, k));
        const uint32_t size = params[k].size;
        // 128 bytes by value: a CUtensorMap (__grid_constant__), launched with a TensorMap. The cubin
        // does not say more (its alignment field is 0 in nvcc's and NVRTC's records).
        const bool map = size == ir::byte_size(ir::Type::tensor_map);
        if (!map && size != 4 && size != 8) {
          diag::Diagnostics d;
          d.add(diag::Code::argument_size_mismatch,
                fmt::format("entry '{}': parameter {} is {} bytes wide; a launch passes 4- and 8-byte scalars and pointers",
                            entry.info.name, k, size),
                where_, "pass the value as a 32- or 64-bit scalar or through a pointer");
          entry.unsupported.append(d);
          continue;
        }
        if (!entry.unsupported.empty()) continue;
        contract::ParamInfo p;
        p.name = name;
        p.index = static_cast<uint32_t>(k);
        p.size_bytes = size;
        if (map) {
          p.type = ir::Type::tensor_map;
        } else if (size == 8) {
          p.is_buffer = true;
          p.type = ir::Type::void_;
          p.access = ir::Access::inout;
        } else {
          p.type = ir::Type::u32;
        }
        entry.info.params.push_back(std::move(p));
      }
      out.entries.push_back(std::move(entry));
    }
    if (out.entries.empty())
      return std::unexpected(one(diag::Code::kernel_not_found, fmt::format("cubin '{}' holds no kernel", file_.path()),
                                 where_, "pass a cubin built from a module with at least one __global__ kernel"));
    return out;
  }

 private:
  struct Symbol {
    std::string_view name;
    uint32_t index = 0;
    bool entry = false;
  };

  const unsigned char* data(uint64_t offset) const { return reinterpret_cast<const unsigned char*>(bytes_.data()) + offset; }
  bool fits(uint64_t offset, uint64_t size) const { return offset <= bytes_.size() && size <= bytes_.size() - offset; }
  std::string_view contents(const Section& s) const {
    return s.type == kShtNobits ? std::string_view{} : bytes_.substr(s.offset, s.size);
  }
  std::unexpected<diag::Diagnostics> bad(std::string why) const {
    return std::unexpected(one(diag::Code::cannot_read_file, fmt::format("'{}' is not a readable cubin: {}", file_.path(), why),
                               where_, "pass the cubin as ptxas, nvcc -cubin or NVRTC wrote it, or the PTX it was built from"));
  }

  /// What no ptxas writes: a kernel beyond the limits of every device (src/ptxgate/ir/limits.hpp); empty when
  /// the records are within them. Registers above 255 stay a launch verdict (PG3301).
  static std::string check_limits(std::string_view kernel, const contract::KernelResources& res) {
    namespace device = ir::device;
    if (res.local_bytes > device::kMaxLocalBytesPerThread)
      return fmt::format("kernel '{}' records a stack frame of {} bytes per thread; a thread has at most {} bytes "
                         "of local memory",
                         kernel, res.local_bytes, device::kMaxLocalBytesPerThread);
    if (res.static_shared_bytes > device::kMaxStaticSharedBytes)
      return fmt::format("kernel '{}' records {} bytes of static shared memory; a kernel has at most {} (more is "
                         "dynamic shared memory, given at launch)",
                         kernel, res.static_shared_bytes, device::kMaxStaticSharedBytes);
    if (res.barriers > device::kMaxNamedBarriers)
      return fmt::format("kernel '{}' records {} named barriers; a block has {}", kernel, res.barriers,
                         device::kMaxNamedBarriers);
    return {};
  }

  /// The program header table and every segment it describes lie inside the file (the driver
  /// loads a cubin by its segments).
  std::expected<void, diag::Diagnostics> read_segments() const {
    const auto* h = data(0);
    const uint64_t phoff = rd64(h + 0x20);
    const uint16_t phentsize = rd16(h + 0x36), phnum = rd16(h + 0x38);
    if (phnum == 0) return {};
    if (phentsize < 0x38 || !fits(phoff, static_cast<uint64_t>(phentsize) * phnum))
      return bad("its program header table lies outside the file");
    for (uint16_t i = 0; i < phnum; ++i) {
      const auto* ph = data(phoff + static_cast<uint64_t>(i) * phentsize);
      const uint64_t offset = rd64(ph + 0x08), file_size = rd64(ph + 0x20);
      if (file_size != 0 && !fits(offset, file_size)) return bad(fmt::format("segment {} lies outside the file", i));
    }
    return {};
  }

  std::expected<void, diag::Diagnostics> read_sections() {
    const auto* h = data(0);
    const uint64_t shoff = rd64(h + 0x28);
    const uint16_t shentsize = rd16(h + 0x3a), shnum = rd16(h + 0x3c), shstrndx = rd16(h + 0x3e);
    if (shnum == 0 || shentsize < 0x40 || shstrndx >= shnum || !fits(shoff, static_cast<uint64_t>(shentsize) * shnum))
      return bad("its section header table lies outside the file");
    sections_.resize(shnum);
    for (uint16_t i = 0; i < shnum; ++i) {
      const auto* sh = data(shoff + static_cast<uint64_t>(i) * shentsize);
      Section& s = sections_[i];
      s.type = rd32(sh + 4);
      s.offset = rd64(sh + 0x18);
      s.size = rd64(sh + 0x20);
      s.link = rd32(sh + 0x28);
      name_offsets_.push_back(rd32(sh));
      if (s.type != kShtNobits && !fits(s.offset, s.size)) return bad(fmt::format("section {} lies outside the file", i));
    }
    const std::string_view names = contents(sections_[shstrndx]);
    for (uint16_t i = 0; i < shnum; ++i) {
      auto name = string_at(names, name_offsets_[i]);
      if (!name) return bad(fmt::format("the name of section {} lies outside its string table", i));
      sections_[i].name = *name;
    }
    return {};
  }

  static std::optional<std::string_view> string_at(std::string_view table, uint64_t offset) {
    if (offset >= table.size()) return std::nullopt;
    const size_t end = table.find('\0', offset);
    if (end == std::string_view::npos) return std::nullopt;
    return table.substr(offset, end - offset);
  }

  std::expected<std::vector<Symbol>, diag::Diagnostics> read_symbols() const {
    std::vector<Symbol> out;
    for (const auto& s : sections_) {
      if (s.type != kShtSymtab) continue;
      if (s.link >= sections_.size()) return bad("its symbol table names no string table");
      const std::string_view table = contents(s), strings = contents(sections_[s.link]);
      for (uint64_t k = 0; k + 24 <= table.size(); k += 24) {
        const auto* p = reinterpret_cast<const unsigned char*>(table.data() + k);
        auto name = string_at(strings, rd32(p));
        if (!name) return bad(fmt::format("the name of symbol {} lies outside its string table", k / 24));
        const bool entry = (p[4] & 0xf) == kSttFunc && (p[5] & kStoCudaEntry) != 0 && !name->empty();
        out.push_back({*name, static_cast<uint32_t>(k / 24), entry});
      }
    }
    return out;
  }

  const diag::SourceFile& file_;
  std::string_view bytes_;
  diag::Location where_;
  std::vector<Section> sections_;
  std::vector<uint32_t> name_offsets_;
};

}  // namespace

std::expected<PtxModuleSummary, diag::Diagnostics> read_cubin_entries(const diag::SourceFile& cubin) {
  return CubinReader(cubin).read();
}

std::expected<PtxModuleSummary, diag::Diagnostics> read_kernel_entries(const diag::SourceFile& module) {
  if (module.text().starts_with("\x7f" "ELF")) return read_cubin_entries(module);
  if (is_binary_module(module.text())) {
    diag::Location where;
    where.file = module.path();
    return std::unexpected(one(diag::Code::cannot_read_file,
                               fmt::format("'{}' is a fatbin, which holds one cubin or PTX per architecture", module.path()),
                               where,
                               "pass the cubin for your device (nvcc -cubin -arch=sm_XX, or cuobjdump -xelf all on the "
                               "fatbin) or the PTX (nvcc -ptx)"));
  }
  return read_ptx_entries(module);
}

std::expected<ForeignEntry, diag::Diagnostics> select_foreign_entry(const diag::SourceFile& module,
                                                                   std::string_view kernel, std::string_view arch,
                                                                   std::string_view signature) {
  auto read = read_kernel_entries(module);
  if (!read) return std::unexpected(std::move(read.error()));
  auto found = require_ptx_entry(*read, kernel, module.path());
  if (!found) return std::unexpected(std::move(found.error()));
  ForeignEntry out;
  out.entry = **found;
  out.cubin = !read->binary_arch.empty();
  out.target = out.cubin ? read->binary_arch : read->target;
  out.isa_version = out.cubin ? 0 : read->isa_major * 10 + read->isa_minor;
  if (!signature.empty())
    if (auto ok = apply_signature(out.entry, signature); !ok) return std::unexpected(std::move(ok.error()));
  auto runs = out.cubin ? check_cubin_target(out.target, arch, out.entry.location)
                        : check_ptx_target(out.target, arch, out.entry.location);
  if (!runs) return std::unexpected(std::move(runs.error()));
  return out;
}

std::expected<void, diag::Diagnostics> apply_signature(PtxEntry& entry, std::string_view signature) {
  std::vector<std::string_view> items;
  for (size_t begin = 0; begin <= signature.size();) {
    size_t comma = signature.find(',', begin);
    if (comma == std::string_view::npos) comma = signature.size();
    items.push_back(support::trim(signature.substr(begin, comma - begin)));
    begin = comma + 1;
  }
  if (signature.find_first_not_of(" \t") == std::string_view::npos) items.clear();
  auto& params = entry.info.params;
  if (items.size() != params.size())
    return std::unexpected(one(diag::Code::argument_count_mismatch,
                               fmt::format("the signature names {} parameter{}; kernel '{}' takes {}", items.size(),
                                           items.size() == 1 ? "" : "s", entry.info.name, params.size()),
                               entry.location, "name one type per parameter, in order, e.g. \"f32[], u64, f32\""));
  std::vector<contract::ParamInfo> restated = params;
  for (size_t k = 0; k < items.size(); ++k) {
    std::string_view item = items[k];
    const bool buffer = item.ends_with("[]");
    if (buffer) item.remove_suffix(2);
    std::optional<ir::Type> type = buffer && item.empty() ? std::optional<ir::Type>(ir::Type::void_) : ir::type_from_name(item);
    if (!type || (!buffer && *type == ir::Type::bool_))
      return std::unexpected(one(diag::Code::expected_token,
                                 fmt::format("signature item {} '{}' is not a type", k, items[k]), entry.location,
                                 "write a scalar type (i32 u32 i64 u64 f32 f64) or a buffer T[] (f32[], u8[], [])"));
    const uint32_t size = buffer ? 8u : ir::byte_size(*type);
    if (size != params[k].size_bytes)
      return std::unexpected(one(diag::Code::argument_size_mismatch,
                                 fmt::format("signature item {} '{}' is {} bytes but parameter {} of kernel '{}' is {} bytes",
                                             k, items[k], size, k, entry.info.name, params[k].size_bytes),
                                 entry.location, fmt::format("name a {}-byte type for parameter {}", params[k].size_bytes, k)));
    restated[k].is_buffer = buffer;
    restated[k].type = *type;
    restated[k].access = ir::Access::inout;
  }
  params = std::move(restated);
  return {};
}

std::expected<void, diag::Diagnostics> check_cubin_target(std::string_view cubin_arch, std::string_view arch,
                                                          const diag::Location& where) {
  auto c = ir::Target::parse(cubin_arch);
  auto a = ir::Target::parse(arch);
  if (!c || !a) return {};
  if (!c->cubin_runs_on(*a))
    return std::unexpected(one(diag::Code::unknown_target,
                               fmt::format("a cubin for {} cannot run on a device of {}: a cubin runs only on its own major "
                                           "architecture, at the same or a newer minor version",
                                           cubin_arch, arch),
                               where,
                               fmt::format("assemble the kernel for {} (ptxas -arch={}, nvcc -cubin -arch={}) or load its PTX",
                                           arch, arch, arch)));
  return {};
}

}  // namespace ptxgate::toolchain
