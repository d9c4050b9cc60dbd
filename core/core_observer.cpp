// Where core's view, copy and write events go: autograd's slot and the calling thread's
// observers. See Note [Core observers] in core_observer.h.
#include "core/core_observer.h"

#include <atomic>

#include "core/tensor.h"

namespace grove {

namespace detail {
thread_local constinit ThreadObserverList<CoreObserver> thread_core_observers;
}  // namespace detail

namespace {

std::atomic<CoreObserver*> autograd_observer{nullptr};
thread_local constinit bool suspended = false;

bool requires_grad(const CoreWrite& write) {
  return write.target.requires_grad() || (write.source != nullptr && write.source->requires_grad());
}

// Calls `notify` on autograd's observer (if `for_autograd`) and then on a copy of this thread's
// list, so that callbacks may register or remove observers.
template <typename Notify>
void notify_all(bool for_autograd, Notify notify) {
  if (suspended) return;
  if (for_autograd) {
    if (CoreObserver* observer = autograd_observer.load(std::memory_order_acquire)) {
      notify(*observer);
    }
  }
  if (thread_has_core_observers()) {
    const ThreadObserverList<CoreObserver> list = detail::thread_core_observers;
    for (CoreObserver* observer : list.observers()) notify(*observer);
  }
}

}  // namespace

void set_autograd_core_observer(CoreObserver* observer) {
  autograd_observer.store(observer, std::memory_order_release);
}

void add_core_observer(CoreObserver* observer) {
  detail::thread_core_observers.add(observer, "add_core_observer");
}

void remove_core_observer(CoreObserver* observer) {
  detail::thread_core_observers.remove(observer, "remove_core_observer");
}

SuspendCoreObservers::SuspendCoreObservers() : previous_(suspended) {
  suspended = true;
}

SuspendCoreObservers::~SuspendCoreObservers() {
  suspended = previous_;
}

void report_derived(const Tensor& source, const Tensor& result, DerivedKind kind,
                    IntArrayRef args) {
  notify_all(source.requires_grad(),
             [&](CoreObserver& observer) { observer.on_derived(source, result, kind, args); });
}

void report_before_write(const CoreWrite& write) {
  notify_all(requires_grad(write), [&](CoreObserver& observer) { observer.before_write(write); });
}

void report_write(const CoreWrite& write) {
  notify_all(requires_grad(write), [&](CoreObserver& observer) { observer.on_write(write); });
}

}  // namespace grove
