// ModuleCache: memory tier over the disk tier with one lookup/compile per key in flight.
#include "ptxgate/module_cache/module_cache.hpp"

#include <fmt/format.h>

namespace ptxgate::module_cache {
namespace {

diag::Diagnostics internal_error(std::string message) {
  diag::Diagnostics d;
  d.add(diag::Code::internal_error, std::move(message), {},
        "this is a bug in ptxgate; please report it with the command that triggered it");
  return d;
}

DiskCache open_disk(const ModuleCacheOptions& options, diag::Diagnostics& warnings) {
  if (!options.use_disk) return DiskCache::disabled();
  return DiskCache::open(options.directory, warnings);
}

}  // namespace

std::string_view outcome_name(CacheOutcome outcome) {
  switch (outcome) {
    case CacheOutcome::memory_hit: return "memory_hit";
    case CacheOutcome::disk_hit: return "disk_hit";
    case CacheOutcome::compiled: return "compiled";
    case CacheOutcome::joined: return "joined";
  }
  return "unknown";
}

ModuleCache::ModuleCache(ModuleCacheOptions options)
    : disk_(open_disk(options, open_warnings_)), memory_(options.memory_capacity) {}

CacheCounters ModuleCache::counters() const {
  std::lock_guard lock(counters_mutex_);
  return counters_;
}

ModuleCache::Flight ModuleCache::fill(const CacheKey& key, const std::string& target_arch, const CompileFn& compile,
                                      const nlohmann::json& inputs_summary) {
  Flight flight;
  // A flight that finished just before this one started has already filled memory.
  if (auto hit = memory_.get(key)) {
    flight.result = std::pair{*hit, CacheOutcome::memory_hit};
    return flight;
  }
  if (auto from_disk = disk_.lookup(key, target_arch, flight.warnings)) {
    auto entry = std::make_shared<const CacheEntry>(std::move(*from_disk));
    memory_.put(key, entry);
    flight.result = std::pair{entry, CacheOutcome::disk_hit};
    return flight;
  }
  std::expected<CacheEntry, diag::Diagnostics> compiled = std::unexpected(diag::Diagnostics{});
  try {
    compiled = compile ? compile() : std::unexpected(internal_error("module cache miss with no compile function"));
  } catch (const std::exception& e) {
    compiled = std::unexpected(internal_error(fmt::format("compilation threw an exception: {}", e.what())));
  } catch (...) {
    compiled = std::unexpected(internal_error("compilation threw an unknown exception"));
  }
  if (compiled && compiled->target_arch.empty()) compiled->target_arch = target_arch;
  if (compiled && compiled->target_arch != target_arch)
    compiled = std::unexpected(internal_error(fmt::format("compilation for {} produced an entry for {}", target_arch,
                                                          compiled->target_arch)));
  if (!compiled) {
    diag::Diagnostics errors = flight.warnings;
    errors.append(compiled.error());
    flight.result = std::unexpected(std::move(errors));
    return flight;
  }
  disk_.publish(key, *compiled, inputs_summary, flight.warnings);
  auto entry = std::make_shared<const CacheEntry>(std::move(*compiled));
  memory_.put(key, entry);
  flight.result = std::pair{entry, CacheOutcome::compiled};
  return flight;
}

std::expected<CacheResult, diag::Diagnostics> ModuleCache::get_or_compile(const CacheKey& key,
                                                                          const std::string& target_arch,
                                                                          const CompileFn& compile,
                                                                          const nlohmann::json& inputs_summary) {
  try {
    CacheResult result;
    result.key = key;
    if (!open_warnings_.empty() && !open_warnings_reported_.exchange(true)) result.warnings.append(open_warnings_);
    if (auto hit = memory_.get(key); hit && (*hit)->target_arch == target_arch) {
      result.entry = *hit;
      result.outcome = CacheOutcome::memory_hit;
    } else {
      auto [flight, leader] = flights_.run(key, [&] { return fill(key, target_arch, compile, inputs_summary); });
      if (leader) result.warnings.append(flight.warnings);
      if (!flight.result) {
        std::lock_guard lock(counters_mutex_);
        ++counters_.compile_failures;
        diag::Diagnostics errors = result.warnings;
        errors.append(flight.result.error());
        return std::unexpected(std::move(errors));
      }
      result.entry = flight.result->first;
      result.outcome = leader ? flight.result->second : CacheOutcome::joined;
      if (result.entry->target_arch != target_arch)
        return std::unexpected(internal_error(
            fmt::format("cache key {} maps to {} but {} was requested", key.hex, result.entry->target_arch, target_arch)));
    }
    std::lock_guard lock(counters_mutex_);
    switch (result.outcome) {
      case CacheOutcome::memory_hit: ++counters_.memory_hits; break;
      case CacheOutcome::disk_hit: ++counters_.disk_hits; break;
      case CacheOutcome::compiled: ++counters_.compiles; break;
      case CacheOutcome::joined: ++counters_.joined; break;
    }
    return result;
  } catch (const std::exception& e) {
    return std::unexpected(internal_error(fmt::format("module cache failure: {}", e.what())));
  }
}

std::expected<CacheResult, diag::Diagnostics> ModuleCache::compile(const ir::Module& verified,
                                                                  const CompileRequest& request) {
  const toolchain::Toolkit toolkit = request.toolkit();
  auto inputs = key_inputs_for(verified, request, toolkit);
  return get_or_compile(
      derive_key(inputs), request.codegen.target.name(), [&] { return compile_to_entry(verified, request, toolkit); },
      inputs.summary());
}

}  // namespace ptxgate::module_cache
