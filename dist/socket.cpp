// Blocking TCP sockets with deadlines (POSIX sockets and poll). See dist/socket.h.
#include "dist/socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace grove::dist {
namespace {

int milliseconds_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

// Waits until `fd` is ready for `events` or the deadline passes; false on timeout.
bool wait_ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, milliseconds_until(deadline));
    if (ready > 0) return true;
    if (ready == 0) return false;
    GROVE_CHECK(errno == EINTR, "poll failed: ", std::strerror(errno));
  }
}

void set_no_delay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

Socket::~Socket() { close(); }

Socket::Socket(Socket&& other) noexcept : fd_(other.fd_), peer_(std::move(other.peer_)) {
  other.fd_ = -1;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    peer_ = std::move(other.peer_);
    other.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Socket Socket::connect(const std::string& host, int port, Clock::time_point deadline) {
  const std::string peer = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string last_error = "no attempt";
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    addrinfo* found = nullptr;
    const int status = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    GROVE_CHECK(status == 0, "cannot resolve the store's host '", host, "': ",
                ::gai_strerror(status), "; check GROVE_MASTER_ADDR");
    for (addrinfo* address = found; address != nullptr; address = address->ai_next) {
      const int fd = ::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC,
                              address->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, address->ai_addr, address->ai_addrlen) == 0) {
        ::freeaddrinfo(found);
        set_no_delay(fd);
        return Socket(fd, peer);
      }
      last_error = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(found);
    GROVE_CHECK(Clock::now() < deadline, "could not connect to the rendezvous store at ", peer,
                " before the timeout (last error: ", last_error,
                "); is rank 0 running, and are GROVE_MASTER_ADDR and GROVE_MASTER_PORT the same "
                "for every process?");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

void Socket::write_exact(const void* data, std::size_t bytes, Clock::time_point deadline) {
  const char* next = static_cast<const char*>(data);
  while (bytes > 0) {
    GROVE_CHECK(wait_ready(fd_, POLLOUT, deadline), "timed out sending to ", peer_);
    const ssize_t sent = ::send(fd_, next, bytes, MSG_NOSIGNAL);
    if (sent < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    GROVE_CHECK(sent > 0, "lost the connection to ", peer_, " while sending (",
                std::strerror(errno), ")");
    next += sent;
    bytes -= static_cast<std::size_t>(sent);
  }
}

void Socket::read_exact(void* data, std::size_t bytes, Clock::time_point deadline) {
  char* next = static_cast<char*>(data);
  while (bytes > 0) {
    GROVE_CHECK(wait_ready(fd_, POLLIN, deadline), "timed out waiting for ", peer_);
    const ssize_t got = ::recv(fd_, next, bytes, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    GROVE_CHECK(got != 0, "the connection to ", peer_, " was closed by the other side");
    GROVE_CHECK(got > 0, "lost the connection to ", peer_, " while receiving (",
                std::strerror(errno), ")");
    next += got;
    bytes -= static_cast<std::size_t>(got);
  }
}

Listener::Listener(int port) {
  fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ipv6 = fd_ >= 0;
  if (!ipv6) fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  GROVE_CHECK(fd_ >= 0, "cannot create a socket: ", std::strerror(errno));
  int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int bound = -1;
  if (ipv6) {
    int zero = 0;  // accept IPv4 connections too
    ::setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(static_cast<std::uint16_t>(port));
    bound = ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    bound = ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  }
  if (bound != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    GROVE_CHECK(false, "cannot listen on port ", port, " for the rendezvous store: ", reason,
                "; set GROVE_MASTER_PORT to a free port");
  }
  GROVE_CHECK(::listen(fd_, 128) == 0, "listen failed: ", std::strerror(errno));
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = address.ss_family == AF_INET6
              ? ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port)
              : ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

Socket Listener::accept() {
  const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  GROVE_CHECK(fd >= 0, "accept failed: ", std::strerror(errno));
  set_no_delay(fd);
  return Socket(fd, "a store client");
}

int pick_free_port() {
  Listener probe(0);
  return probe.port();
}

}  // namespace grove::dist
