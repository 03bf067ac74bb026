// Owned<Resource>: the one ownership of a driver resource made in a context (released exactly once).
#pragma once

#include <memory>
#include <utility>

#include "ptxgate/runtime/context.hpp"

namespace ptxgate::runtime {

/// The one ownership of a driver resource made in a context, for the handle types (Stream,
/// DeviceBuffer, HostBuffer, Event): move-only, the context kept alive while the resource
/// lives, released exactly once by `Resource::release(Context&)` (which ignores errors, so it is
/// safe in a poisoned context and never throws). `Resource` is a value type whose default value
/// holds nothing (`held()` false); moving from an Owned leaves that value behind.
template <class Resource>
class Owned {
 public:
  Owned() = default;
  Owned(std::shared_ptr<Context> ctx, Resource resource) noexcept
      : ctx_(std::move(ctx)), resource_(std::move(resource)) {}
  Owned(Owned&& o) noexcept : ctx_(std::move(o.ctx_)), resource_(std::exchange(o.resource_, Resource{})) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      ctx_ = std::move(o.ctx_);
      resource_ = std::exchange(o.resource_, Resource{});
    }
    return *this;
  }
  ~Owned() { reset(); }
  /// Releases the resource now.
  void reset() noexcept {
    if (ctx_ && resource_.held()) resource_.release(*ctx_);
    resource_ = Resource{};
    ctx_.reset();
  }
  const Resource& operator*() const { return resource_; }
  /// The resource itself, for its owner to change what it records (never to release it).
  Resource& get() { return resource_; }
  const Resource* operator->() const { return &resource_; }
  Context* context() const { return ctx_.get(); }
  const std::shared_ptr<Context>& shared_context() const { return ctx_; }

 private:
  std::shared_ptr<Context> ctx_;
  Resource resource_{};
};

}  // namespace ptxgate::runtime
