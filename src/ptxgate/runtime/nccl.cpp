// Communicators and validated collectives over NCCL (see nccl.hpp).
#include "ptxgate/runtime/nccl.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include "ptxgate/runtime/internal/checked_comm.hpp"
#include "ptxgate/runtime/internal/collective_watchdog.hpp"
#include "ptxgate/support/files.hpp"
#include "ptxgate/support/text.hpp"

namespace ptxgate::runtime {
namespace {

std::expected<const NcclApi*, diag::Diagnostics> api_or_default(const NcclApi* api) {
  if (api != nullptr) return api;
  return nccl();
}

diag::Diagnostics one(diag::Code code, std::string message, std::string hint = {}) {
  diag::Diagnostics d;
  d.add(code, std::move(message), {}, std::move(hint));
  return d;
}

bool is_reduction(CollectiveKind k) {
  return k == CollectiveKind::all_reduce || k == CollectiveKind::reduce || k == CollectiveKind::reduce_scatter;
}
bool uses_send(CollectiveKind k) { return k != CollectiveKind::recv; }
bool uses_recv(CollectiveKind k) { return k != CollectiveKind::send; }

}  // namespace

std::string_view nccl_type_name(ncclDataType_t type) {
  switch (type) {
    case ncclInt32: return "i32";
    case ncclUint32: return "u32";
    case ncclInt64: return "i64";
    case ncclUint64: return "u64";
    case ncclFloat32: return "f32";
    case ncclFloat64: return "f64";
    case ncclInt8: return "i8";
    case ncclUint8: return "u8";
    case ncclFloat16: return "f16";
    case ncclBfloat16: return "bf16";
    default: return "?";
  }
}

// ---- UniqueId ----

std::expected<UniqueId, diag::Diagnostics> UniqueId::create(const NcclApi* api) {
  auto a = api_or_default(api);
  if (!a) return std::unexpected(a.error());
  UniqueId u;
  ncclResult_t r = (*a)->ncclGetUniqueId(&u.id);
  if (r != ncclSuccess)
    return std::unexpected(one(diag::Code::nccl_call_failed,
                               fmt::format("ncclGetUniqueId failed: {}", (*a)->ncclGetErrorString(r))));
  return u;
}

std::string UniqueId::to_hex() const {
  std::string out;
  out.reserve(sizeof(id.internal) * 2);
  for (char c : id.internal) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

std::expected<UniqueId, diag::Diagnostics> UniqueId::from_hex(std::string_view text) {
  text = support::trim(text);
  constexpr size_t n = sizeof(ncclUniqueId::internal);
  auto bad = [&](std::string why) {
    return std::unexpected(one(diag::Code::communicator_setup, fmt::format("NCCL unique id is not valid: {}", why),
                               "pass the text UniqueId::to_hex() wrote, unchanged"));
  };
  if (text.size() != 2 * n) return bad(fmt::format("{} characters, expected {} hex digits", text.size(), 2 * n));
  UniqueId u;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < n; ++i) {
    const int hi = digit(text[2 * i]), lo = digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return bad(fmt::format("character {} is not a hex digit", hi < 0 ? 2 * i + 1 : 2 * i + 2));
    u.id.internal[i] = static_cast<char>(hi * 16 + lo);
  }
  return u;
}

std::expected<void, diag::Diagnostics> UniqueId::write_file(const std::filesystem::path& path) const {
  return support::write_file_atomically(path.string(), to_hex() + "\n");
}

std::expected<UniqueId, diag::Diagnostics> UniqueId::read_file(const std::filesystem::path& path) {
  std::ifstream f(path);
  if (!f) return std::unexpected(one(diag::Code::cannot_read_file, fmt::format("cannot read the NCCL unique id from {}", path.string())));
  std::string text(600, '\0');  // 256 digits and some white space; anything longer is not an id
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  return from_hex(text);
}

std::expected<UniqueId, diag::Diagnostics> UniqueId::from_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    return std::unexpected(one(diag::Code::communicator_setup, fmt::format("environment variable {} is not set", name),
                               "set it to the hex text of UniqueId::to_hex() from the process that made the id"));
  return from_hex(v);
}

// ---- Communicator ----

// ---- options ----

namespace {

/// The options after the environment's overrides: PG4205 for a value that is not one.
std::expected<CommunicatorOptions, diag::Diagnostics> resolve_options(const CommunicatorOptions& options) {
  CommunicatorOptions out = options;
  if (const char* v = std::getenv("PTXGATE_NCCL_CHECKED"); v != nullptr && *v != '\0') {
    const std::string_view text(v);
    if (text != "0" && text != "1")
      return std::unexpected(one(diag::Code::communicator_setup,
                                 fmt::format("PTXGATE_NCCL_CHECKED={} is neither 0 nor 1", text),
                                 "set it to 1 (checked collectives) or 0, or unset it"));
    out.checked = text == "1";
  }
  if (const char* v = std::getenv("PTXGATE_NCCL_TIMEOUT_MS"); v != nullptr && *v != '\0') {
    const std::string_view text(v);
    long long ms = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (ec != std::errc() || end != text.data() + text.size() || ms < 0)
      return std::unexpected(one(diag::Code::communicator_setup,
                                 fmt::format("PTXGATE_NCCL_TIMEOUT_MS={} is not a number of milliseconds", text),
                                 "set it to a decimal number (0: no watchdog), or unset it"));
    out.timeout = std::chrono::milliseconds(ms);
  }
  if (out.timeout.count() < 0)
    return std::unexpected(one(diag::Code::communicator_setup,
                               fmt::format("watchdog timeout of {} ms", out.timeout.count()),
                               "pass a timeout of zero (no watchdog) or more"));
  return out;
}

}  // namespace

std::expected<void, diag::Diagnostics> Communicator::set_up(std::span<Communicator* const> comms,
                                                            const CommunicatorOptions& options) {
  auto resolved = resolve_options(options);
  if (!resolved) return std::unexpected(resolved.error());
  for (Communicator* c : comms) c->options_ = *resolved;
  if (resolved->checked)
    if (auto ok = internal::enable_checking(comms, resolved->timeout); !ok) return ok;
  if (resolved->timeout.count() > 0)
    for (Communicator* c : comms) c->watchdog_ = std::make_unique<internal::Watchdog>(*c, resolved->timeout);
  return {};
}

std::expected<std::vector<std::unique_ptr<Communicator>>, diag::Diagnostics> Communicator::init_all(
    std::span<const std::shared_ptr<Context>> contexts, const CommunicatorOptions& options, const NcclApi* api) {
  auto a = api_or_default(api);
  if (!a) return std::unexpected(a.error());
  if (contexts.empty())
    return std::unexpected(one(diag::Code::communicator_setup, "a communicator of no devices", "pass at least one context"));
  std::vector<int> devices;
  for (size_t i = 0; i < contexts.size(); ++i) {
    if (!contexts[i]) return std::unexpected(one(diag::Code::communicator_setup, fmt::format("context {} is null", i)));
    const int ordinal = contexts[i]->live().ordinal;
    for (size_t j = 0; j < i; ++j)
      if (devices[j] == ordinal)
        return std::unexpected(one(diag::Code::communicator_setup,
                                   fmt::format("contexts {} and {} are both device {}: one rank per device", j, i, ordinal),
                                   "pass one context per device"));
    devices.push_back(ordinal);
  }
  std::vector<ncclComm_t> comms(contexts.size(), nullptr);
  const int n = static_cast<int>(contexts.size());
  ncclResult_t r = (*a)->ncclCommInitAll(comms.data(), n, devices.data());
  if (r != ncclSuccess)
    return std::unexpected(one(diag::Code::nccl_call_failed,
                               fmt::format("ncclCommInitAll over {} devices failed: {} ({})", n, (*a)->ncclGetErrorString(r),
                                           (*a)->ncclGetLastError(nullptr))));
  std::vector<std::unique_ptr<Communicator>> out;
  for (int i = 0; i < n; ++i) {
    std::unique_ptr<Communicator> c(new Communicator());
    c->ctx_ = contexts[static_cast<size_t>(i)];
    c->api_ = *a;
    c->comm_ = comms[static_cast<size_t>(i)];
    c->rank_ = i;
    c->nranks_ = n;
    c->device_ = devices[static_cast<size_t>(i)];
    out.push_back(std::move(c));
  }
  std::vector<Communicator*> raw;
  for (auto& c : out) raw.push_back(c.get());
  if (auto ok = set_up(raw, options); !ok) return std::unexpected(ok.error());
  return out;
}

std::expected<std::unique_ptr<Communicator>, diag::Diagnostics> Communicator::init_rank(std::shared_ptr<Context> ctx,
                                                                                       int nranks, int rank,
                                                                                       const UniqueId& id,
                                                                                       const CommunicatorOptions& options,
                                                                                       const NcclApi* api) {
  auto a = api_or_default(api);
  if (!a) return std::unexpected(a.error());
  if (!ctx) return std::unexpected(one(diag::Code::communicator_setup, "communicator on a null context"));
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return std::unexpected(one(diag::Code::communicator_setup,
                               fmt::format("rank {} of {}: ranks are 0 to nranks - 1 and nranks is at least 1", rank, nranks)));
  if (auto ok = ctx->make_current(); !ok) return std::unexpected(ok.error());
  std::unique_ptr<Communicator> c(new Communicator());
  c->api_ = *a;
  ncclResult_t r = (*a)->ncclCommInitRank(&c->comm_, nranks, id.id, rank);
  if (r != ncclSuccess) {
    c->comm_ = nullptr;  // NCCL owns (and has released) a communicator whose init failed
    return std::unexpected(one(diag::Code::nccl_call_failed,
                               fmt::format("ncclCommInitRank (rank {} of {}) failed: {} ({})", rank, nranks,
                                           (*a)->ncclGetErrorString(r), (*a)->ncclGetLastError(nullptr))));
  }
  c->ctx_ = std::move(ctx);
  c->rank_ = rank;
  c->nranks_ = nranks;
  c->device_ = c->ctx_->live().ordinal;
  c->one_rank_per_process_ = true;
  Communicator* raw[] = {c.get()};
  if (auto ok = set_up(raw, options); !ok) return std::unexpected(ok.error());
  return c;
}

Communicator::Communicator() = default;

Communicator::~Communicator() {
  watchdog_.reset();  // joins its thread: nothing aborts from there any more
  if (checked_ && one_rank_per_process_ && !failed() && !finalized_ && options_.timeout.count() > 0)
    if (auto ok = finalize(); !ok) internal::deliver_report(options_, ok.error());
  internal::release_checking(*this);
  // A communicator that failed in a way that needed it was aborted already (fail()); one stopped
  // by a mismatch or finalized has only matched calls in flight, which complete.
  if (comm_ != nullptr) api_->ncclCommDestroy(comm_);
}

void Communicator::fail(std::string reason, diag::Diagnostics report, bool abort_nccl) noexcept {
  std::lock_guard lock(mutex_);
  if (failed_.load(std::memory_order_relaxed)) return;
  failure_ = std::move(reason);
  failure_report_ = std::move(report);
  aborted_ = abort_nccl;
  failed_.store(true, std::memory_order_release);
  if (!abort_nccl) return;
  if (checked_ && checked_->shadow != nullptr) {
    api_->ncclCommAbort(checked_->shadow);
    checked_->shadow = nullptr;
  }
  if (comm_ != nullptr) api_->ncclCommAbort(comm_);
  comm_ = nullptr;
}

void Communicator::abort(std::string reason) noexcept { fail(std::move(reason), {}, true); }

std::expected<void, diag::Diagnostics> Communicator::healthy(std::string_view what) {
  std::lock_guard lock(mutex_);
  return healthy_locked(what);
}

std::expected<void, diag::Diagnostics> Communicator::healthy_locked(std::string_view what) {
  if (failed()) [[unlikely]] {
    return std::unexpected(one(diag::Code::communicator_failed,
                               fmt::format("{} on rank {} of a communicator that was {}: {}", what, rank_,
                                           aborted_ ? "aborted" : "stopped", failure_),
                               "create a new communicator (every rank); this one cannot be used again"));
  }
  ncclResult_t async = ncclSuccess;
  ncclResult_t r = api_->ncclCommGetAsyncError(comm_, &async);
  if (r == ncclSuccess && (async == ncclSuccess || async == ncclInProgress)) [[likely]]
    return {};
  const ncclResult_t e = r != ncclSuccess ? r : async;
  const char* last = api_->ncclGetLastError(comm_);
  std::string reason = fmt::format("NCCL reported {} ({}) at {}", api_->ncclGetErrorString(e), last ? last : "", what);
  abort(reason);
  return std::unexpected(one(diag::Code::communicator_failed,
                             fmt::format("{} on rank {}: {}; the communicator was aborted", what, rank_, reason),
                             "a peer failed or the network broke; create a new communicator on every rank"));
}

std::expected<void, diag::Diagnostics> Communicator::finalize() {
  Communicator* self[] = {this};
  return finalize_all(self);
}

std::expected<void, diag::Diagnostics> Communicator::finalize_all(std::span<Communicator* const> comms) {
  std::vector<internal::ExchangeSide> sides;
  for (Communicator* c : comms) {
    if (auto ok = c->healthy("finalize"); !ok) return ok;
    const uint64_t seq = internal::CommunicatorAccess::next_call(*c);
    if (c->checked())
      sides.push_back({c, internal::Fingerprint::of(internal::FingerprintKind::finalize, c->rank(), c->size(), seq)});
  }
  if (auto ok = internal::exchange_and_match(sides); !ok) return ok;
  for (Communicator* c : comms) {
    c->finalized_ = true;
    c->fail(fmt::format("rank {} finalized it (call #{})", c->rank(), c->calls()), {}, false);
  }
  return {};
}

std::expected<void, diag::Diagnostics> Communicator::check(ncclResult_t r, std::string_view call, std::string_view what) {
  if (r == ncclSuccess || r == ncclInProgress) return {};
  const char* last = api_->ncclGetLastError(comm_);
  std::string message = fmt::format("{} for {} on rank {} failed: {} ({})", call, what, rank_, api_->ncclGetErrorString(r),
                                    last ? last : "");
  // Usage errors leave the communicator usable; anything else (system, internal, remote) fails it.
  if (r != ncclInvalidArgument && r != ncclInvalidUsage) abort(message);
  return std::unexpected(one(diag::Code::nccl_call_failed, std::move(message)));
}

std::expected<void, diag::Diagnostics> Communicator::synchronize(const Stream& stream) {
  if (stream.context() != ctx_.get())
    return std::unexpected(one(diag::Code::collective_device,
                               fmt::format("synchronize of a stream of another context than communicator rank {} (device {})",
                                           rank_, device_)));
  Context& ctx = *ctx_;
  if (auto ok = ctx.make_current(); !ok) return ok;
  const bool failed_before = failed();
  // A failure while this waited (the watchdog's timeout, a peer's error) is reported as it was
  // found; one from before is PG4204.
  auto unhealthy = [&](std::expected<void, diag::Diagnostics> r) -> std::expected<void, diag::Diagnostics> {
    if (r || failed_before) return r;
    std::lock_guard lock(mutex_);
    if (failure_report_.empty()) return r;
    return std::unexpected(failure_report_);
  };
  const uint64_t mark = ctx.tracker().before_sync(stream.handle());
  for (;;) {
    if (auto ok = healthy("synchronize"); !ok) return unhealthy(std::move(ok));
    CUresult r = ctx.api().cuStreamQuery(stream.handle());
    if (r == CUDA_SUCCESS) break;
    if (r != CUDA_ERROR_NOT_READY) return ctx.check(r, "cuStreamQuery", "communicator stream");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  ctx.tracker().after_sync(stream.handle(), mark);
  return unhealthy(healthy("synchronize"));
}

// ---- validation ----

namespace {

/// The rules of one buffer argument, each violation added to `d` (false when any): the buffer
/// exists, is in the communicator's context, has an element type NCCL and the IR share, and holds
/// the range. validate_collective calls it only for an argument its fast test did not accept.
[[gnu::noinline, gnu::cold]] bool check_end_slow(diag::Diagnostics& d, const Communicator& comm, std::string_view name,
                                                 const CollectiveEnd& e, const char* role) {
  if (e.buffer == nullptr || e.buffer->context() == nullptr) {
    d.add(diag::Code::collective_device, fmt::format("{} {} buffer is empty (moved from or reset)", name, role));
    return false;
  }
  bool ok = true;
  if (e.buffer->context() != &comm.context()) {
    d.add(diag::Code::collective_device,
          fmt::format("{} {} buffer is on device {}, but communicator rank {} is on device {}", name, role,
                      e.buffer->context()->live().ordinal, comm.rank(), comm.device()),
          {}, "allocate each rank's buffers in that rank's context");
    ok = false;
  }
  const size_t size = nccl_type_size(e.type);
  if (size == 0) {
    d.add(diag::Code::collective_type_mismatch,
          fmt::format("{} {} buffer has NCCL type {}, which the IR does not have", name, role, static_cast<int>(e.type)),
          {}, "use i8, u8, i32, u32, i64, u64, f16, bf16, f32 or f64 elements");
    return false;
  }
  const size_t capacity = e.buffer->size_bytes() / size;
  if (e.first > capacity || e.count > capacity - e.first) {
    d.add(diag::Code::collective_count,
          fmt::format("{} {} range: elements [{}, {}) of {}, past the buffer's {} elements", name, role, e.first,
                      e.first + e.count, nccl_type_name(e.type), capacity),
          {}, "pass a span inside the buffer");
    ok = false;
  }
  return ok;
}

}  // namespace

std::expected<void, diag::Diagnostics> validate_collective(const Communicator& comm, const Stream& stream,
                                                           const Collective& c) {
  diag::Diagnostics d;
  const std::string_view name = collective_name(c.kind);
  const int nranks = comm.size();
  if (stream.context() == nullptr) {
    d.append(moved_from_stream(name));
  } else if (stream.context() != &comm.context()) {
    d.add(diag::Code::collective_device,
          fmt::format("{} on a stream of device {}, but communicator rank {} is on device {}", name,
                      stream.context()->live().ordinal, comm.rank(), comm.device()),
          {}, "issue each rank's collective on a stream of that rank's context");
  }
  // The common case, an argument every rule accepts, is decided without building a message.
  auto check_end = [&](const CollectiveEnd& e, const char* role) {
    const DeviceBuffer* b = e.buffer;
    const size_t size = nccl_type_size(e.type);
    if (b != nullptr && b->context() == &comm.context() && size != 0) [[likely]] {
      const size_t capacity = b->size_bytes() / size;
      if (e.first <= capacity && e.count <= capacity - e.first) [[likely]]
        return true;
    }
    return check_end_slow(d, comm, name, e, role);
  };
  const bool send_ok = uses_send(c.kind) && check_end(c.send, "send");
  const bool recv_ok = uses_recv(c.kind) && check_end(c.recv, "receive");
  if (uses_send(c.kind) && uses_recv(c.kind) && send_ok && recv_ok) {
    if (c.send.type != c.recv.type)
      d.add(diag::Code::collective_type_mismatch,
            fmt::format("{} sends {} elements into a {} receive buffer", name, nccl_type_name(c.send.type),
                        nccl_type_name(c.recv.type)),
            {}, "give both buffers the same element type");
    // Counts, and where the send range may sit inside the receive range (NCCL's in-place forms).
    const size_t ns = c.send.count, nr = c.recv.count;
    size_t in_place_offset = 0;  // elements: the send range's start inside the receive range (or the reverse)
    bool send_inside_recv = true;
    switch (c.kind) {
      case CollectiveKind::all_gather:
        if (nr != ns * static_cast<size_t>(nranks))
          d.add(diag::Code::collective_count,
                fmt::format("all-gather of {} elements per rank over {} ranks needs {} receive elements, got {}", ns,
                            nranks, ns * static_cast<size_t>(nranks), nr),
                {}, "make the receive span ranks × the send span");
        in_place_offset = static_cast<size_t>(comm.rank()) * ns;
        break;
      case CollectiveKind::reduce_scatter:
        if (ns != nr * static_cast<size_t>(nranks))
          d.add(diag::Code::collective_count,
                fmt::format("reduce-scatter of {} elements per rank over {} ranks needs {} send elements, got {}", nr,
                            nranks, nr * static_cast<size_t>(nranks), ns),
                {}, "make the send span ranks × the receive span");
        in_place_offset = static_cast<size_t>(comm.rank()) * nr;
        send_inside_recv = false;
        break;
      default:
        if (ns != nr)
          d.add(diag::Code::collective_count,
                fmt::format("{} of {} send elements into {} receive elements: the counts must be equal", name, ns, nr),
                {}, "give both spans the same number of elements");
        break;
    }
    if (c.send.buffer == c.recv.buffer && c.send.type == c.recv.type) {
      const size_t s0 = c.send.first, s1 = s0 + ns, r0 = c.recv.first, r1 = r0 + nr;
      const bool overlap = s0 < r1 && r0 < s1 && ns > 0 && nr > 0;
      const bool in_place = send_inside_recv ? s0 == r0 + in_place_offset : r0 == s0 + in_place_offset;
      if (overlap && !in_place) {
        std::string allowed =
            c.kind == CollectiveKind::all_gather
                ? fmt::format("in place the send range must be the receive range's block of rank {} (element {})",
                              comm.rank(), r0 + in_place_offset)
            : c.kind == CollectiveKind::reduce_scatter
                ? fmt::format("in place the receive range must be the send range's block of rank {} (element {})",
                              comm.rank(), s0 + in_place_offset)
                : std::string("in place the send and receive ranges must be the same range");
        d.add(diag::Code::collective_in_place,
              fmt::format("{} send elements [{}, {}) and receive elements [{}, {}) of one buffer overlap; {}", name, s0,
                          s1, r0, r1, allowed),
              {}, "use separate buffers, or NCCL's in-place form");
      }
    }
  }
  if (is_reduction(c.kind) && (c.op < 0 || c.op >= ncclNumOps))
    d.add(diag::Code::collective_reduction,
          fmt::format("{} with reduction operation {}: the built-in ones are 0 (sum) to {} (avg)", name, c.op,
                      ncclNumOps - 1),
          {}, "pass a ReduceOp");
  const bool rooted = c.kind == CollectiveKind::broadcast || c.kind == CollectiveKind::reduce;
  const bool peered = c.kind == CollectiveKind::send || c.kind == CollectiveKind::recv;
  if ((rooted || peered) && (c.root < 0 || c.root >= nranks))
    d.add(diag::Code::collective_rank,
          fmt::format("{} with {} {}, but the communicator has ranks 0 to {}", name, rooted ? "root" : "peer", c.root,
                      nranks - 1));
  if (!d.empty() && d.has_errors()) [[unlikely]]
    return std::unexpected(std::move(d));
  return {};
}

namespace {

using internal::CommunicatorAccess;

CUdeviceptr address(const CollectiveEnd& e) { return e.buffer->pointer() + e.first * nccl_type_size(e.type); }

/// The NCCL call of `c` (already validated) on `s`. The caller holds the communicator's lock (the
/// watchdog aborts it from its thread); a communicator that failed since, by an earlier call of
/// the same group, is not called.
std::expected<void, diag::Diagnostics> issue_locked(Communicator& comm, CUstream s, const Collective& c) {
  if (comm.failed()) [[unlikely]]
    return comm.healthy(collective_name(c.kind));
  const NcclApi& api = comm.api();
  const void* send = uses_send(c.kind) ? reinterpret_cast<const void*>(address(c.send)) : nullptr;
  void* recv = uses_recv(c.kind) ? reinterpret_cast<void*>(address(c.recv)) : nullptr;
  const auto op = static_cast<ncclRedOp_t>(c.op);
  const char* call = "";
  ncclResult_t r = ncclSuccess;
  switch (c.kind) {
    case CollectiveKind::all_reduce:
      call = "ncclAllReduce";
      r = api.ncclAllReduce(send, recv, c.send.count, c.send.type, op, comm.handle(), s);
      break;
    case CollectiveKind::broadcast:
      call = "ncclBroadcast";
      r = api.ncclBroadcast(send, recv, c.send.count, c.send.type, c.root, comm.handle(), s);
      break;
    case CollectiveKind::reduce:
      call = "ncclReduce";
      r = api.ncclReduce(send, recv, c.send.count, c.send.type, op, c.root, comm.handle(), s);
      break;
    case CollectiveKind::all_gather:
      call = "ncclAllGather";
      r = api.ncclAllGather(send, recv, c.send.count, c.send.type, comm.handle(), s);
      break;
    case CollectiveKind::reduce_scatter:
      call = "ncclReduceScatter";
      r = api.ncclReduceScatter(send, recv, c.recv.count, c.send.type, op, comm.handle(), s);
      break;
    case CollectiveKind::send:
      call = "ncclSend";
      r = api.ncclSend(send, c.send.count, c.send.type, c.root, comm.handle(), s);
      break;
    case CollectiveKind::recv:
      call = "ncclRecv";
      r = api.ncclRecv(recv, c.recv.count, c.recv.type, c.root, comm.handle(), s);
      break;
  }
  if (r == ncclSuccess || r == ncclInProgress) [[likely]]
    return {};
  // The subject is formatted only for the diagnostic: the issue path is host-bound for small calls.
  return comm.check(r, call,
                    fmt::format("{} of {} elements", collective_name(c.kind),
                                c.kind == CollectiveKind::recv ? c.recv.count : c.send.count));
}

/// Issues `c` through the context's tracking, with the communicator's lock held: after
/// conflicting work of other streams, and recorded as a read of its send range and a write of
/// its receive range. Lock order: the communicator's, then the tracker's.
std::expected<void, diag::Diagnostics> tracked_locked(Communicator& comm, const Stream& stream, const Collective& c) {
  Context& ctx = comm.context();
  // Health only: NCCL selects the communicator's device itself, and the tracker makes the context
  // current before the driver calls it needs (a stream wait, an event record), so a group over
  // several devices does not switch the calling thread's context once per rank.
  if (ctx.poisoned()) [[unlikely]]
    return ctx.healthy("nccl", collective_name(c.kind));
  BufferAccess accesses[2];
  size_t n = 0;
  if (uses_send(c.kind)) accesses[n++] = {c.send.buffer->track(), AccessMode::read};
  if (uses_recv(c.kind)) accesses[n++] = {c.recv.buffer->track(), AccessMode::write};
  return ctx.tracker().submit(stream.handle(), std::span<const BufferAccess>(accesses, n),
                              [&] { return issue_locked(comm, stream.handle(), c); });
}

/// Whether calls on `comm` exchange fingerprints first (checked mode with peers).
bool exchanges(const Communicator& comm) { return comm.checked() && comm.size() > 1; }

/// Checked mode: the fingerprint exchange of call `seq` (`calls`, all on `comm`) before it runs.
std::expected<void, diag::Diagnostics> matched(Communicator& comm, uint64_t seq, std::span<const Collective> calls) {
  if (!exchanges(comm)) return {};
  internal::ExchangeSide side{&comm, internal::Fingerprint::of_call(comm.rank(), comm.size(), seq, calls)};
  return internal::exchange_and_match(std::span<internal::ExchangeSide>(&side, 1));
}

/// Hands call `seq` (`calls`, just issued on `stream`) to the communicator's watchdog, if any.
std::expected<void, diag::Diagnostics> watched(Communicator& comm, const Stream& stream, uint64_t seq,
                                               std::span<const Collective> calls) {
  internal::Watchdog* dog = CommunicatorAccess::watchdog(comm);
  if (dog == nullptr) return {};
  return dog->watch(stream, internal::Fingerprint::of_call(comm.rank(), comm.size(), seq, calls));
}

}  // namespace

std::expected<void, diag::Diagnostics> run_collective(Communicator& comm, const Stream& stream, const Collective& c) {
  if (auto ok = validate_collective(comm, stream, c); !ok) return ok;
  const std::span<const Collective> call(&c, 1);
  const std::string_view name = collective_name(c.kind);
  std::unique_lock lock(CommunicatorAccess::mutex(comm), std::defer_lock);
  uint64_t seq = 0;
  if (exchanges(comm)) {
    // The exchange waits for the other ranks without the lock (the watchdog may abort meanwhile).
    if (auto ok = comm.healthy(name); !ok) return ok;
    seq = CommunicatorAccess::next_call(comm);
    if (auto ok = matched(comm, seq, call); !ok) return ok;
    lock.lock();
  } else {
    // One lock for the health check and the call.
    lock.lock();
    if (auto ok = CommunicatorAccess::healthy_locked(comm, name); !ok) return ok;
    seq = CommunicatorAccess::next_call(comm);
  }
  if (auto ok = tracked_locked(comm, stream, c); !ok) return ok;
  lock.unlock();
  return watched(comm, stream, seq, call);
}

// ---- Group ----

std::expected<void, diag::Diagnostics> Group::add(Communicator& comm, const Stream& s, const Collective& c) {
  if (ended_) return std::unexpected(one(diag::Code::collective_group, fmt::format("{} added to a group that already ended", collective_name(c.kind)),
                                         "start a new Group"));
  if (auto ok = validate_collective(comm, s, c); !ok) return ok;
  if (size_ < kInline)
    std::construct_at(&inline_[size_].call, Call{&comm, &s, c});
  else
    more_.push_back({&comm, &s, c});
  ++size_;
  return {};
}

namespace {

/// One communicator of a group: its first call's kind (which names it in a health report) and
/// the number the group has on it.
struct GroupComm {
  Communicator* comm;
  CollectiveKind first;
  uint64_t seq;
};

/// The locks of a group's communicators, taken in address order (the watchdog takes one at a
/// time) and released when it goes.
class LockedComms {
 public:
  explicit LockedComms(std::span<GroupComm> comms) : comms_(comms) {}
  ~LockedComms() { unlock(); }
  LockedComms(const LockedComms&) = delete;
  LockedComms& operator=(const LockedComms&) = delete;
  void lock() {
    // Insertion sort by address: groups are small.
    for (size_t i = 1; i < comms_.size(); ++i)
      for (size_t j = i; j > 0 && comms_[j].comm < comms_[j - 1].comm; --j) std::swap(comms_[j], comms_[j - 1]);
    for (const GroupComm& c : comms_) CommunicatorAccess::mutex(*c.comm).lock();
    locked_ = true;
  }
  void unlock() {
    if (!locked_) return;
    locked_ = false;
    for (size_t i = comms_.size(); i > 0; --i) CommunicatorAccess::mutex(*comms_[i - 1].comm).unlock();
  }

 private:
  std::span<GroupComm> comms_;
  bool locked_ = false;
};

}  // namespace

std::expected<void, diag::Diagnostics> Group::end() {
  if (ended_) return std::unexpected(one(diag::Code::collective_group, "group ended twice", "start a new Group"));
  ended_ = true;
  if (size_ == 0) return {};
  // The group is one call of each of its communicators, numbered on each; a group of up to
  // kInline calls keeps them on the stack.
  GroupComm local[kInline];
  std::vector<GroupComm> heap(size_ > kInline ? size_ : 0);
  const std::span<GroupComm> room = size_ > kInline ? std::span<GroupComm>(heap) : std::span<GroupComm>(local);
  size_t n = 0;
  bool exchange = false, watch = false;
  auto position = [&](const Communicator* comm) {
    size_t k = 0;
    while (k < n && room[k].comm != comm) ++k;
    return k;
  };
  for (size_t i = 0; i < size_; ++i) {
    const Call& call = at(i);
    if (position(call.comm) < n) continue;
    room[n++] = {call.comm, call.c.kind, 0};
    exchange = exchange || exchanges(*call.comm);
    watch = watch || CommunicatorAccess::watchdog(*call.comm) != nullptr;
  }
  const std::span<GroupComm> comms = room.first(n);  // in the order of their first call
  // Checked mode and the watchdog see each communicator's part: its collectives, sends and
  // receives in the order added, and the streams they go on.
  struct PerComm {
    Communicator* comm = nullptr;
    uint64_t seq = 0;
    std::vector<Collective> calls;
    std::vector<const Stream*> streams;
  };
  std::vector<PerComm> per_comm;
  if (exchange || watch) {
    per_comm.resize(n);
    for (size_t k = 0; k < n; ++k) per_comm[k].comm = comms[k].comm;
    for (size_t i = 0; i < size_; ++i) {
      const Call& call = at(i);
      PerComm& p = per_comm[position(call.comm)];
      p.calls.push_back(call.c);
      if (std::find(p.streams.begin(), p.streams.end(), call.stream) == p.streams.end()) p.streams.push_back(call.stream);
    }
  }
  LockedComms locks(comms);
  if (exchange) {
    // The exchange waits for the other ranks without the locks (the watchdog may abort meanwhile).
    for (const GroupComm& c : comms)
      if (auto ok = c.comm->healthy(collective_name(c.first)); !ok) return ok;
    std::vector<internal::ExchangeSide> sides;
    for (PerComm& p : per_comm) {
      p.seq = CommunicatorAccess::next_call(*p.comm);
      if (exchanges(*p.comm))
        sides.push_back({p.comm, internal::Fingerprint::of_call(p.comm->rank(), p.comm->size(), p.seq, p.calls)});
    }
    if (auto ok = internal::exchange_and_match(sides); !ok) return ok;
    locks.lock();
  } else {
    // One lock per communicator for its health check and its calls.
    for (const GroupComm& c : comms)  // the first unhealthy one in the order of the calls is reported
      if (c.comm->failed()) [[unlikely]]
        return c.comm->healthy(collective_name(c.first));
    locks.lock();
    for (const GroupComm& c : comms)
      if (auto ok = CommunicatorAccess::healthy_locked(*c.comm, collective_name(c.first)); !ok) return ok;
    for (PerComm& p : per_comm) p.seq = CommunicatorAccess::next_call(*p.comm);
    if (per_comm.empty())
      for (const GroupComm& c : comms) (void)CommunicatorAccess::next_call(*c.comm);
  }
  const NcclApi& api = at(0).comm->api();
  if (ncclResult_t started = api.ncclGroupStart(); started != ncclSuccess)
    return std::unexpected(
        one(diag::Code::nccl_call_failed, fmt::format("ncclGroupStart failed: {}", api.ncclGetErrorString(started))));
  std::expected<void, diag::Diagnostics> first_error;
  for (size_t i = 0; i < size_; ++i) {
    const Call& call = at(i);
    auto ok = tracked_locked(*call.comm, *call.stream, call.c);
    if (!ok && first_error) first_error = std::move(ok);
  }
  // The group is always closed, also after a failed call, so NCCL's group state stays balanced.
  const ncclResult_t r = api.ncclGroupEnd();
  if (!first_error) return first_error;
  if (r != ncclSuccess && r != ncclInProgress) [[unlikely]]
    return at(0).comm->check(r, "ncclGroupEnd", fmt::format("group of {} calls", size_));
  locks.unlock();
  for (const PerComm& p : per_comm)
    for (const Stream* s : p.streams)
      if (auto ok = watched(*p.comm, *s, p.seq, p.calls); !ok) return ok;
  return {};
}

}  // namespace ptxgate::runtime
