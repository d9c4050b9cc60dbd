// Process groups: the processes of one data-parallel job, how they find each other and the
// engines that run their collectives (Gloo between CPU tensors, NCCL between CUDA tensors).
//
// A job is `world_size` processes, each with a `rank` in [0, world_size) and, on a host with
// several GPUs, a `local_rank` that picks its GPU. They meet at the rendezvous store that rank 0
// runs at GROVE_MASTER_ADDR:GROVE_MASTER_PORT (dist/tcp_store.h); through it Gloo exchanges its
// addresses and NCCL its unique id. The settings come from the environment, as torchrun's do:
//   GROVE_RANK, GROVE_WORLD_SIZE     this process's rank and the number of processes (0 and 1)
//   GROVE_LOCAL_RANK                 its index on this host, for the GPU (default: GROVE_RANK)
//   GROVE_MASTER_ADDR, _PORT         where rank 0 runs the store (localhost; the port is needed
//                                    when world size > 1)
//   GROVE_TIMEOUT_S                  how long any collective or rendezvous may wait (300)
//   GROVE_GLOO_IFNAME                the network interface Gloo should use (default: the
//                                    loopback on one host, else the host name's address)
// `grove train --nproc N` sets them for N local processes (dist/launch.h).
//
// Every collective is an op (ops/collective.h); the group registers its engines with the op
// layer under its id, and the first group created becomes the default one.
// Lifetime: a group must outlive every graph that captured its collectives. Destroying it waits
// (with the timeout) until every rank has come to the same point, so rank 0's store is not
// torn down while others still need it.
// Thread safety: collectives of one group are issued from one thread at a time (as with NCCL and
// Gloo themselves); the store may be used from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/device.h"
#include "dist/tcp_store.h"
#include "ops/collective.h"

namespace grove::dist {

struct ProcessGroupOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "localhost";
  int master_port = 0;  // 0 with world size 1: any free port
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
  std::string gloo_interface;  // empty: see GROVE_GLOO_IFNAME above
  bool cuda = false;           // also create the NCCL engine, on cuda(local_rank)

  // Reads the GROVE_* variables above; refuses malformed or inconsistent values with a message
  // naming the variable.
  static ProcessGroupOptions from_environment();
};

// Whether this build has each engine (Gloo needs Debian's libgloo-dev at build time; NCCL the
// CUDA backend and the NCCL library).
bool has_gloo();
bool has_nccl();

class ProcessGroup {
 public:
  // Joins the group: connects to (rank 0: starts) the store, then creates the engines, which is
  // itself collective: every rank must construct its group.
  explicit ProcessGroup(const ProcessGroupOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  int local_rank() const { return options_.local_rank; }
  int id() const { return id_; }  // for ops/collective.h's `group` arguments
  const ProcessGroupOptions& options() const { return options_; }
  TcpStore& store() { return *store_; }

  // Waits until every rank has called barrier() as often as this one (through the store).
  void barrier();

 private:
  ProcessGroupOptions options_;
  int id_;
  std::unique_ptr<TcpStore> store_;
  std::unique_ptr<ops::CollectiveEngine> cpu_engine_;
  std::unique_ptr<ops::CollectiveEngine> cuda_engine_;
  std::int64_t barriers_ = 0;
};

// The default group: created by init_process_group (from the environment unless given options),
// used by collectives called without a group. destroy_process_group() ends it.
ProcessGroup& init_process_group();
ProcessGroup& init_process_group(const ProcessGroupOptions& options);
bool is_initialized();
ProcessGroup& default_process_group();  // throws when none was initialised
void destroy_process_group();

// The engines (dist/gloo_engine.cpp, dist/nccl_engine.cpp); each throws when this build lacks it.
std::unique_ptr<ops::CollectiveEngine> make_gloo_engine(TcpStore& store,
                                                        const ProcessGroupOptions& options);
std::unique_ptr<ops::CollectiveEngine> make_nccl_engine(TcpStore& store,
                                                        const ProcessGroupOptions& options);

}  // namespace grove::dist
