// ThreadObserverList: the observers one thread has registered, for core's observers
// (Note [Core observers] in core/core_observer.h) and dispatch's (Note [Op observers] in
// ops/dispatch.h).
//
// It is meant to be a thread_local. It holds at most kMaxThreadObservers pointers inline, with
// no heap: it is constant-initialised (a constinit thread_local needs no initialisation check
// on each read) and trivially destructible (nothing runs when a thread ends, nothing leaks if
// it ends with observers registered). It does not own the observers.
// Not thread-safe: only its own thread touches it.
#pragma once

#include <algorithm>
#include <array>
#include <span>

#include "core/error.h"

namespace grove {

inline constexpr int kMaxThreadObservers = 8;

template <typename Observer>
class ThreadObserverList {
 public:
  bool empty() const { return count_ == 0; }
  // The observers in registration order. Callers that call them iterate over a copy of the
  // list, so that an observer may add or remove observers from inside a callback.
  std::span<Observer* const> observers() const {
    return {observers_.data(), static_cast<std::size_t>(count_)};
  }

  // `what` names the caller's function in error messages.
  void add(Observer* observer, const char* what) {
    GROVE_CHECK(observer != nullptr, what, ": the observer is null");
    GROVE_CHECK(count_ < kMaxThreadObservers, what, ": this thread already has ",
                kMaxThreadObservers, " observers registered, the most it can have; remove one ",
                "first (observer guards remove theirs when they go out of scope)");
    observers_[static_cast<std::size_t>(count_++)] = observer;
  }

  void remove(Observer* observer, const char* what) {
    const auto end = observers_.begin() + count_;
    const auto found = std::find(observers_.begin(), end, observer);
    GROVE_CHECK(found != end, what,
                ": that observer is not registered on this thread (observers are per thread: "
                "remove it on the thread that added it)");
    std::copy(found + 1, end, found);
    --count_;
  }

 private:
  std::array<Observer*, kMaxThreadObservers> observers_{};
  int count_ = 0;
};

}  // namespace grove
