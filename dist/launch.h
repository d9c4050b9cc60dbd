// Starting a data-parallel job on this host: N copies of a program, each told its rank through
// the environment (GROVE_RANK, GROVE_WORLD_SIZE, GROVE_LOCAL_RANK, GROVE_MASTER_ADDR,
// GROVE_MASTER_PORT; dist/process_group.h), reported as one job. This is what
// `grove train --nproc N` does, and what the multi-process tests use.
//
// Output: rank 0's standard output and error pass through; the other ranks' standard output is
// dropped (rank 0 prints the job's progress) and their standard error passes through, each line
// as the rank writes it. Exit: when every rank has exited, the job's status is the first
// non-zero status in rank order (a rank killed by a signal counts as 128 + the signal), else 0.
// When one rank fails, the others are given the group's timeout plus a grace period to notice
// (their collectives fail with an error naming it) and are then killed, so a job never hangs.
// Several hosts: start the program on each host yourself with the same variables (see README).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace grove::dist {

struct LaunchOptions {
  int nproc = 1;
  std::vector<std::string> argv;                     // the program and its arguments
  std::chrono::seconds timeout{300};                 // GROVE_TIMEOUT_S given to each rank
  std::chrono::seconds grace{10};                    // after the timeout, before killing
  std::vector<std::pair<std::string, std::string>> extra_environment;  // for every rank
};

// Runs the job to the end and returns its exit status (see above). Throws grove::Error when a
// process cannot be started.
int launch_local(const LaunchOptions& options);

// The path of the running executable (to start more copies of it).
std::string current_executable();

}  // namespace grove::dist
