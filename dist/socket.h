// Blocking TCP sockets with deadlines: the transport of the rendezvous store (dist/tcp_store.h).
//
// Not a general networking library: just what a store needs. Every call that waits takes a
// deadline and throws grove::Error naming the peer and what was being done when the deadline
// passes or the peer goes away, so a dead process is an error, never a hang.
// A Socket owns its file descriptor (moved, never copied) and closes it when destroyed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace grove::dist {

using Clock = std::chrono::steady_clock;

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  ~Socket();
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Connects to host:port, retrying while nobody listens yet (the server may start later than
  // its clients) until `deadline`.
  static Socket connect(const std::string& host, int port, Clock::time_point deadline);

  // Writes/reads exactly `bytes`, waiting at most until `deadline`. read_exact throws when the
  // peer closes the connection first.
  void write_exact(const void* data, std::size_t bytes, Clock::time_point deadline);
  void read_exact(void* data, std::size_t bytes, Clock::time_point deadline);

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  const std::string& peer() const { return peer_; }
  void close();

 private:
  int fd_ = -1;
  std::string peer_;  // "host:port", for messages
};

// A listening socket on all interfaces. Port 0 picks a free port; port() says which.
class Listener {
 public:
  explicit Listener(int port);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const { return port_; }
  int fd() const { return fd_; }
  // Accepts one pending connection (call when poll() says the listener is readable).
  Socket accept();

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A port that was free a moment ago (bind to port 0, read it, close): for launchers that must
// tell every process the store's port before the store exists.
int pick_free_port();

}  // namespace grove::dist
