// See Note [Ctrl-C on a thread of its own] in ctrl_c.h.
#include "models/program/ctrl_c.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <thread>

namespace grove::program {
namespace {

std::atomic<CtrlC> mode{CtrlC::Exit};
std::atomic<bool> requested{false};

sigset_t interrupt_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  return set;
}

// Ends the process by SIGINT, as the default action would have: the watcher unblocks it for
// itself and raises it (a thread's own raise() is delivered to that thread).
[[noreturn]] void end_by_ctrl_c() {
  std::signal(SIGINT, SIG_DFL);
  const sigset_t set = interrupt_set();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(SIGINT);
  std::_Exit(128 + SIGINT);  // not reached
}

void watch() {
  const sigset_t set = interrupt_set();
  while (true) {
    int signal_number = 0;
    if (sigwait(&set, &signal_number) != 0) continue;
    switch (mode.load()) {
      case CtrlC::Ignore:
        break;
      case CtrlC::Flag:
        if (!requested.exchange(true)) break;  // the first: the run stops after its step
        end_by_ctrl_c();                       // the second: at once
      case CtrlC::Exit:
        end_by_ctrl_c();
    }
  }
}

}  // namespace

void start_ctrl_c_watcher() {
  std::signal(SIGINT, SIG_DFL);
  const sigset_t set = interrupt_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(watch).detach();
}

CtrlCScope::CtrlCScope(CtrlC new_mode) : previous_(mode.load()) {
  if (new_mode == CtrlC::Flag) requested.store(false);
  mode.store(new_mode);
}

CtrlCScope::~CtrlCScope() {
  mode.store(previous_);
}

bool ctrl_c_requested() {
  return requested.load();
}

}  // namespace grove::program
