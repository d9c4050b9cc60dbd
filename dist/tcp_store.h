// The rendezvous store: a small key-value service over TCP through which the processes of one job
// find each other (Gloo's addresses, NCCL's unique id), count arrivals at barriers and learn which
// process went away.
//
// One process (rank 0) runs the server on a thread of its own; every process, rank 0 included,
// talks to it as a client. Keys are strings, values bytes; a value once set can be read by anyone;
// `add` is an atomic counter. Reads that wait (get, wait) poll the server until the key exists or
// the timeout passes, then throw grove::Error naming the key and the ranks known to be gone.
//
// Note [Who went away]
// ~~~~~~~~~~~~~~~~~~~~
// A collective that fails because a peer died learns little from its transport ("connection
// closed by peer" at some address). The store knows more: each client opens its connection with
// its rank, and the server marks the rank "lost" when that connection closes without a goodbye
// (the process crashed or was killed) and "finished" when it says goodbye. A failing collective
// asks the store (gone_ranks) and names them in its error; when the store itself is unreachable,
// rank 0, which runs it, is the one that went away.
//
// Thread safety: a TcpStore may be used from several threads; requests are serialised.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dist/socket.h"

namespace grove::dist {

class StoreServer;  // dist/tcp_store.cpp

class TcpStore {
 public:
  // Connects to the store at host:port as `rank` of `world_size`. With `serve` (rank 0), first starts the server
  // listening on `port` (0: any free port; port() tells which). Waits for the server up to
  // `timeout`, which is also the default timeout of every waiting call.
  TcpStore(std::string host, int port, int rank, int world_size, bool serve,
           std::chrono::milliseconds timeout);
  ~TcpStore();  // says goodbye (the rank counts as finished) and stops the server if it runs one
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::vector<char>& value);
  // Waits until `key` exists, then returns its value.
  std::vector<char> get(const std::string& key);
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout);
  std::optional<std::vector<char>> try_get(const std::string& key);
  // Adds `delta` to the counter under `key` (0 if it did not exist) and returns the new value.
  std::int64_t add(const std::string& key, std::int64_t delta);
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);

  // Ranks whose connection closed without a goodbye ("lost") or with one ("finished").
  // See Note [Who went away]. Never throws: when the store is unreachable it returns {0} as lost.
  struct GoneRanks {
    std::vector<int> lost;
    std::vector<int> finished;
    bool store_unreachable = false;
  };
  GoneRanks gone_ranks();
  // "rank 1 exited without finishing (crashed or killed)", or "" when nobody is known gone.
  std::string describe_gone_ranks();
  // Throws the error of a collective `what` that failed on this rank in `engine` ("gloo",
  // "nccl"), naming the ranks that are gone and quoting what the engine said.
  [[noreturn]] void throw_collective_failure(const char* what, const char* engine,
                                             const std::string& engine_said);

  int port() const { return port_; }
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  // One request and its reply; nullopt when the server answers "absent" (a get of a missing
  // key).
  std::optional<std::vector<char>> request(std::uint8_t command, const std::string& key,
                                           const std::vector<char>& value);

  std::string host_;
  int port_;
  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<StoreServer> server_;
  Socket socket_;
  std::mutex mutex_;  // one request at a time on socket_
};

}  // namespace grove::dist
