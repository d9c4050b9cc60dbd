// Ctrl-C for the `grove` program, taken on a thread of its own.
//
// Note [Ctrl-C on a thread of its own]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A signal handler runs on the stack of whichever thread the signal interrupts, and oneDNN's
// CPU matrix products can run with the stack pointer inside a heap buffer: a Ctrl-C during one
// pushed its signal frame into a freed heap chunk (its free-list link held __restore_rt, the
// signal trampoline), and the run crashed later in free() with "corrupted size vs. prev_size"
// or a segfault, in 1 of 3 to 1 of 15 interrupted CPU runs depending on the heap's layout. So
// no handler runs on a computing thread: main() blocks SIGINT before any other thread exists
// (threads inherit the mask) and a watcher thread takes it with sigwait(). What a Ctrl-C does
// is the innermost CtrlCScope's: Exit (the default, as if no one handled it: the process ends
// by the signal, exit status 130 in a shell), Flag (a training run: the first sets
// ctrl_c_requested() and the run stops after its step; the second ends the process at once), or
// Ignore (the launcher of --nproc ranks, which handle it themselves).
#pragma once

namespace grove::program {

enum class CtrlC { Exit, Flag, Ignore };

// Blocks SIGINT in this thread (and so in every thread started after) and starts the watcher.
// Call once, first thing in main(). An inherited ignored SIGINT is taken back to the default,
// since an ignored signal never reaches sigwait.
void start_ctrl_c_watcher();

// While alive, a Ctrl-C does `mode` (scopes nest; the innermost decides). A Flag scope starts
// with ctrl_c_requested() false. Not thread-safe: the program's main thread makes them.
class CtrlCScope {
 public:
  explicit CtrlCScope(CtrlC mode);
  ~CtrlCScope();
  CtrlCScope(const CtrlCScope&) = delete;
  CtrlCScope& operator=(const CtrlCScope&) = delete;

 private:
  CtrlC previous_;
};

// True once a Ctrl-C arrived under a Flag scope (until the next Flag scope starts).
bool ctrl_c_requested();

}  // namespace grove::program
