// Starting the ranks of a local job with posix_spawn and waiting for them. See dist/launch.h.
#include "dist/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "dist/socket.h"

extern char** environ;

namespace grove::dist {
namespace {

// This process's environment without the GROVE_* variables a rank gets from the launcher.
std::vector<std::string> inherited_environment() {
  static const char* const kOwn[] = {"GROVE_RANK=",        "GROVE_WORLD_SIZE=",
                                     "GROVE_LOCAL_RANK=",  "GROVE_MASTER_ADDR=",
                                     "GROVE_MASTER_PORT=", "GROVE_TIMEOUT_S="};
  std::vector<std::string> kept;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    bool own = false;
    for (const char* prefix : kOwn) own = own || text.rfind(prefix, 0) == 0;
    if (!own) kept.push_back(text);
  }
  return kept;
}

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

std::string current_executable() {
  std::vector<char> path(4096);
  const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  GROVE_CHECK(length > 0, "cannot find the running executable (/proc/self/exe): ",
              std::strerror(errno));
  return std::string(path.data(), static_cast<std::size_t>(length));
}

int launch_local(const LaunchOptions& options) {
  GROVE_CHECK(options.nproc >= 1, "expected at least one process, but got ", options.nproc);
  GROVE_CHECK(!options.argv.empty(), "launch_local needs a program to start");
  const int port = pick_free_port();
  std::vector<pid_t> pids;
  std::vector<char*> argv;
  for (const std::string& word : options.argv) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);

  auto kill_all = [&](int signal) {
    for (pid_t pid : pids) {
      if (pid > 0) ::kill(pid, signal);
    }
  };
  for (int rank = 0; rank < options.nproc; ++rank) {
    std::vector<std::string> environment = inherited_environment();
    environment.push_back("GROVE_RANK=" + std::to_string(rank));
    environment.push_back("GROVE_LOCAL_RANK=" + std::to_string(rank));
    environment.push_back("GROVE_WORLD_SIZE=" + std::to_string(options.nproc));
    environment.push_back("GROVE_MASTER_ADDR=localhost");
    environment.push_back("GROVE_MASTER_PORT=" + std::to_string(port));
    environment.push_back("GROVE_TIMEOUT_S=" + std::to_string(options.timeout.count()));
    for (const auto& [name, value] : options.extra_environment) {
      environment.push_back(name + "=" + value);
    }
    std::vector<char*> envp;
    for (std::string& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (rank != 0) {  // rank 0 prints the job's progress; the others' stdout is dropped
      posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
      kill_all(SIGKILL);
      for (pid_t started : pids) ::waitpid(started, nullptr, 0);
      GROVE_CHECK(false, "could not start rank ", rank, " (", options.argv[0],
                  "): ", std::strerror(spawned));
    }
    pids.push_back(pid);
  }

  // Wait for every rank; once one fails, give the others the timeout and a grace period.
  std::vector<int> statuses(pids.size(), -1);
  std::size_t running = pids.size();
  bool failed = false;
  Clock::time_point kill_at = Clock::time_point::max();
  while (running > 0) {
    bool reaped = false;
    for (std::size_t rank = 0; rank < pids.size(); ++rank) {
      if (pids[rank] <= 0) continue;
      int status = 0;
      if (::waitpid(pids[rank], &status, WNOHANG) != pids[rank]) continue;
      statuses[rank] = exit_status(status);
      pids[rank] = -1;
      --running;
      reaped = true;
      if (statuses[rank] != 0 && !failed) {
        failed = true;
        kill_at = Clock::now() + options.timeout + options.grace;
      }
    }
    if (reaped) continue;
    if (Clock::now() >= kill_at) {
      kill_all(SIGKILL);
      kill_at = Clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int status : statuses) {
    if (status != 0) return status;
  }
  return 0;
}

}  // namespace grove::dist
