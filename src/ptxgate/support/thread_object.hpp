// thread_object<T>(): this thread's object of type T, reached with one thread-local lookup a call.
#pragma once

namespace ptxgate::support {

/// This thread's `T` (one per `Tag`): made with `new T()` on the thread's first call, destroyed when
/// the thread exits. In a shared library every thread_local is reached through `__tls_get_addr`, and
/// one whose type has a destructor costs two such calls a use (its guard, then the object); here a
/// call reads one trivially destructible pointer, and only the thread's first call reaches the
/// thread_local that owns the object. A call made while the exiting thread destroys its
/// thread_locals, after the owner went, gets a fresh object that is never freed. Call it from a
/// function that is never inlined, so that callers hold the reference, not a recomputed lookup.
template <class T, class Tag = T>
T& thread_object() {
  static thread_local constinit T* fast = nullptr;
  if (fast != nullptr) [[likely]]
    return *fast;
  struct Owner {
    T* object = new T();
    ~Owner() {
      fast = nullptr;
      delete object;
      object = nullptr;
    }
  };
  static thread_local Owner owner;
  fast = owner.object != nullptr ? owner.object : new T();
  return *fast;
}

}  // namespace ptxgate::support
