// KernelInfo to and from JSON (the `--emit meta` format and the module cache's metadata).
#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/internal/json_checks.hpp"

namespace ptxgate::contract {

void attach_access_facts(KernelInfo& info, std::shared_ptr<const ir::AccessFacts> facts) {
  info.access = std::move(facts);
  const std::vector<bool> used = info.access ? ir::parameters_used(*info.access, info.params.size())
                                             : std::vector<bool>(info.params.size(), false);
  for (size_t i = 0; i < info.params.size(); ++i) info.params[i].value_in_access_proof = !info.params[i].is_buffer && used[i];
}

nlohmann::json to_json(const KernelInfo& info) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : info.params) {
    nlohmann::json jp{{"name", p.name},
                      {"index", p.index},
                      {"kind", p.is_buffer ? "buffer" : "scalar"},
                      {"type", std::string(ir::type_name(p.type))},
                      {"size_bytes", p.size_bytes}};
    if (p.is_buffer) jp["access"] = std::string(ir::access_name(p.access));
    if (p.alignment > 0) jp["alignment"] = p.alignment;  // absent: no vector access
    params.push_back(std::move(jp));
  }
  nlohmann::json j{{"name", info.name},
                   {"params", params},
                   {"static_shared_bytes", info.static_shared_bytes},
                   {"cooperative", info.cooperative},
                   {"uses_grid_sync", info.uses_grid_sync},
                   {"block_granule", info.block_granule},
                   {"dynamic_shared_element_bytes", info.dynamic_shared_element_bytes},
                   {"hidden_grid_barrier_param", info.hidden_grid_barrier_param}};
  if (info.foreign) j["foreign"] = true;  // absent for ptxgate's own kernels
  if (info.access) j["access"] = ir::to_json(*info.access);
  if (info.checked) j["checked"] = to_json(*info.checked);  // absent: compiled without checked mode
  if (info.has_cluster_dims()) j["cluster_dims"] = info.cluster_dims;  // absent: no cluster shape
  if (info.explicit_cluster) j["explicit_cluster"] = true;
  if (info.has_required_block())
    j["required_block"] = {info.required_block[0], info.required_block[1], info.required_block[2]};
  else
    j["required_block"] = nullptr;
  return j;
}

nlohmann::json to_meta_json(const KernelInfo& info) {
  nlohmann::json j = to_json(info);
  if (info.access) {
    nlohmann::json sites = nlohmann::json::array();
    for (const ir::AccessSite& s : info.access->sites)
      sites.push_back({{"operation", s.operation},
                       {"kind", std::string(ir::access_kind_name(s.kind))},
                       {"space", std::string(ir::space_name(s.space))},
                       {"line", s.line},
                       {"column", s.column}});
    j["access"] = {{"complete", info.access->complete}, {"sites", std::move(sites)}};
  }
  return j;
}

std::expected<KernelInfo, std::string> kernel_info_from_json(const nlohmann::json& j) {
  try {
    KernelInfo info;
    info.name = j.at("name").get<std::string>();
    info.static_shared_bytes = diag::json_integer<uint64_t>(j.at("static_shared_bytes"));
    info.cooperative = j.at("cooperative").get<bool>();
    info.uses_grid_sync = j.at("uses_grid_sync").get<bool>();
    // Metadata written before the granule was recorded says only whether warp operations are used.
    if (j.contains("block_granule")) {
      info.block_granule = diag::json_integer<uint32_t>(j.at("block_granule"));
      if (info.block_granule != 1 && info.block_granule != 32 && info.block_granule != 128)
        return std::unexpected("block_granule must be 1, 32 or 128");
    } else {
      info.block_granule = j.value("uses_warp_operations", false) ? 32 : 1;
    }
    if (j.contains("cluster_dims")) {
      const auto& c = j.at("cluster_dims");
      if (!c.is_array() || c.size() != 3) return std::unexpected("cluster_dims must be [x, y, z]");
      for (size_t i = 0; i < 3; ++i) info.cluster_dims[i] = diag::json_integer<uint32_t>(c[i]);
      if (info.cluster_dims[0] == 0 || info.cluster_dims[1] == 0 || info.cluster_dims[2] == 0)
        return std::unexpected("cluster_dims must be positive");
    }
    info.explicit_cluster = j.value("explicit_cluster", false);
    if (j.contains("dynamic_shared_element_bytes"))
      info.dynamic_shared_element_bytes = diag::json_integer<uint32_t>(j.at("dynamic_shared_element_bytes"));
    info.hidden_grid_barrier_param = j.at("hidden_grid_barrier_param").get<bool>();
    info.foreign = j.value("foreign", false);
    const auto& rb = j.at("required_block");
    if (!rb.is_null()) {
      if (!rb.is_array() || rb.size() != 3) return std::unexpected("required_block must be null or [x, y, z]");
      for (size_t i = 0; i < 3; ++i) info.required_block[i] = diag::json_integer<uint32_t>(rb[i]);
    }
    for (const auto& jp : j.at("params")) {
      ParamInfo p;
      p.name = jp.at("name").get<std::string>();
      p.index = diag::json_integer<uint32_t>(jp.at("index"));
      std::string kind = jp.at("kind").get<std::string>();
      if (kind != "buffer" && kind != "scalar") return std::unexpected("param kind must be buffer or scalar");
      p.is_buffer = kind == "buffer";
      auto t = ir::type_from_name(jp.at("type").get<std::string>());
      if (!t) return std::unexpected("unknown param type");
      p.type = *t;
      p.size_bytes = diag::json_integer<uint32_t>(jp.at("size_bytes"));
      if (p.is_buffer) {
        std::string a = jp.at("access").get<std::string>();
        if (a == "in") p.access = ir::Access::in;
        else if (a == "out") p.access = ir::Access::out;
        else if (a == "inout") p.access = ir::Access::inout;
        else return std::unexpected("unknown buffer access '" + a + "'");
        if (jp.contains("alignment")) p.alignment = diag::json_integer<uint32_t>(jp.at("alignment"));
        if (p.alignment & (p.alignment - 1)) return std::unexpected("buffer alignment must be a power of two");
      }
      info.params.push_back(std::move(p));
    }
    if (j.contains("access")) {
      auto facts = ir::access_facts_from_json(j.at("access"));
      if (!facts) return std::unexpected(facts.error());
      for (const ir::AccessSite& s : facts->sites)
        if (s.space == ir::Space::global && (s.array >= info.params.size() || !info.params[s.array].is_buffer))
          return std::unexpected("an access names no buffer parameter");
      attach_access_facts(info, std::make_shared<const ir::AccessFacts>(std::move(*facts)));
    }
    if (j.contains("checked")) {
      auto checked = checked_info_from_json(j.at("checked"));
      if (!checked) return std::unexpected(checked.error());
      info.checked = std::make_shared<const CheckedInfo>(std::move(*checked));
    }
    return info;
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(std::string("invalid kernel metadata: ") + e.what());
  }
}

}  // namespace ptxgate::contract
