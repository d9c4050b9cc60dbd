// Running a test body on a new thread: a fresh thread has fresh per-thread state (its CPU tree
// manager, autocast, the cuBLASLt plan cache), whatever ran before on the test's own thread.
// Shared by the suites that need it (tests/misuse, tests/models/optim).
#pragma once

#include <exception>
#include <functional>
#include <thread>

namespace grove::testing {

// Runs `body` on a new thread, waits for it, and rethrows what it threw.
inline void on_fresh_thread(const std::function<void()>& body) {
  std::exception_ptr error;
  std::thread thread([&] {
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
  });
  thread.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace grove::testing
