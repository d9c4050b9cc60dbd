// The rendezvous store's server and client. See dist/tcp_store.h.
//
// Wire format, one frame per request and one per reply:
//   request: u8 command, u32 key length, key, u32 value length, value
//   reply:   u8 status (1 ok / found, 0 absent), u32 value length, value
// Integers are in the host's byte order: every process of a job runs the same build.
#include "dist/tcp_store.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"

namespace grove::dist {
namespace {

enum Command : std::uint8_t { kHello = 1, kSet, kGet, kAdd, kGoodbye };

// Frames are small and written in one piece; a peer that sends half a frame and stalls for this
// long is treated as gone.
constexpr std::chrono::seconds kFrameTimeout(30);

void write_frame(Socket& socket, std::uint8_t head, const std::string& key,
                 const std::vector<char>& value, Clock::time_point deadline) {
  std::vector<char> frame(1 + 4 + key.size() + 4 + value.size());
  char* out = frame.data();
  *out++ = static_cast<char>(head);
  const auto key_size = static_cast<std::uint32_t>(key.size());
  std::memcpy(out, &key_size, 4);
  out += 4;
  if (!key.empty()) std::memcpy(out, key.data(), key.size());
  out += key.size();
  const auto value_size = static_cast<std::uint32_t>(value.size());
  std::memcpy(out, &value_size, 4);
  out += 4;
  if (!value.empty()) std::memcpy(out, value.data(), value.size());
  socket.write_exact(frame.data(), frame.size(), deadline);
}

void write_reply(Socket& socket, std::uint8_t status, const std::vector<char>& value,
                 Clock::time_point deadline) {
  std::vector<char> frame(1 + 4 + value.size());
  frame[0] = static_cast<char>(status);
  const auto value_size = static_cast<std::uint32_t>(value.size());
  std::memcpy(frame.data() + 1, &value_size, 4);
  if (!value.empty()) std::memcpy(frame.data() + 5, value.data(), value.size());
  socket.write_exact(frame.data(), frame.size(), deadline);
}

std::vector<char> read_sized(Socket& socket, Clock::time_point deadline) {
  std::uint32_t size = 0;
  socket.read_exact(&size, 4, deadline);
  GROVE_CHECK(size <= (1u << 30), "the store received a frame of ", size,
              " bytes from ", socket.peer(), "; is something other than grove on that port?");
  std::vector<char> bytes(size);
  socket.read_exact(bytes.data(), size, deadline);
  return bytes;
}

std::int64_t as_counter(const std::vector<char>& value) {
  std::int64_t counter = 0;
  if (value.size() == sizeof(counter)) std::memcpy(&counter, value.data(), sizeof(counter));
  return counter;
}

std::vector<char> counter_bytes(std::int64_t counter) {
  std::vector<char> bytes(sizeof(counter));
  std::memcpy(bytes.data(), &counter, sizeof(counter));
  return bytes;
}

std::vector<char> text_bytes(const std::string& text) { return {text.begin(), text.end()}; }

}  // namespace

// The server: one thread polling the listener, its clients and a wake-up pipe.
class StoreServer {
 public:
  explicit StoreServer(int port) : listener_(port) {
    GROVE_CHECK(::pipe(wake_) == 0, "pipe failed: ", std::strerror(errno));
    thread_ = std::thread([this] { serve(); });
  }
  ~StoreServer() {
    stop_ = true;
    const char byte = 1;
    [[maybe_unused]] const ssize_t written = ::write(wake_[1], &byte, 1);
    thread_.join();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  int port() const { return listener_.port(); }

 private:
  struct Client {
    Socket socket;
    int rank = -1;  // after its hello
  };

  void serve() {
    while (!stop_) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listener_.fd(), POLLIN, 0}};
      for (const Client& client : clients_) fds.push_back({client.socket.fd(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
      if (fds[0].revents != 0) break;
      // Serve the clients that polled readable (not the one just accepted, which was not
      // polled); drop those whose connection closed.
      std::vector<std::size_t> closed;
      for (std::size_t i = 0; i + 2 < fds.size(); ++i) {
        const short events = fds[i + 2].revents;
        if (events == 0) continue;
        if (!serve_one(clients_[i])) closed.push_back(i);
      }
      for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
        Client& client = clients_[*it];
        if (client.rank >= 0 && finished_.count(client.rank) == 0) {
          data_["grove/lost/" + std::to_string(client.rank)] = text_bytes("lost");
        }
        clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(*it));
      }
      if (fds[1].revents & POLLIN) {
        try {
          clients_.push_back(Client{listener_.accept(), -1});
        } catch (const Error&) {
          // A connection that went away before it was accepted: nothing to serve.
        }
      }
    }
  }

  // Reads one request and answers it; false when the connection closed or broke.
  bool serve_one(Client& client) {
    try {
      const auto deadline = Clock::now() + kFrameTimeout;
      std::uint8_t command = 0;
      client.socket.read_exact(&command, 1, deadline);
      const std::vector<char> key_bytes = read_sized(client.socket, deadline);
      const std::string key(key_bytes.begin(), key_bytes.end());
      const std::vector<char> value = read_sized(client.socket, deadline);
      std::uint8_t status = 1;
      std::vector<char> reply;
      switch (command) {
        case kHello:
          client.rank = static_cast<int>(as_counter(value));
          break;
        case kSet:
          data_[key] = value;
          break;
        case kGet: {
          const auto found = data_.find(key);
          if (found == data_.end()) {
            status = 0;
          } else {
            reply = found->second;
          }
          break;
        }
        case kAdd: {
          std::vector<char>& slot = data_[key];
          slot = counter_bytes(as_counter(slot) + as_counter(value));
          reply = slot;
          break;
        }
        case kGoodbye:
          if (client.rank >= 0) {
            finished_.insert(client.rank);
            data_["grove/finished/" + std::to_string(client.rank)] = text_bytes("finished");
          }
          break;
        default:
          return false;  // not a grove client
      }
      write_reply(client.socket, status, reply, deadline);
      return command != kGoodbye;
    } catch (const Error&) {
      return false;
    }
  }

  Listener listener_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::vector<Client> clients_;
  std::map<std::string, std::vector<char>> data_;
  std::set<int> finished_;  // ranks that said goodbye
  std::thread thread_;
};

TcpStore::TcpStore(std::string host, int port, int rank, int world_size, bool serve,
                   std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), rank_(rank), world_size_(world_size),
      timeout_(timeout) {
  if (serve) {
    server_ = std::make_unique<StoreServer>(port);
    port_ = server_->port();
  }
  socket_ = Socket::connect(serve ? std::string("localhost") : host_, port_,
                            Clock::now() + timeout_);
  request(kHello, std::string(), counter_bytes(rank));
}

TcpStore::~TcpStore() {
  try {
    if (socket_.valid()) request(kGoodbye, std::string(), {});
  } catch (const Error&) {
    // The server is gone already (rank 0 finished first): nobody to tell.
  }
  socket_.close();
  server_.reset();
}

std::optional<std::vector<char>> TcpStore::request(std::uint8_t command, const std::string& key,
                                                   const std::vector<char>& value) {
  std::lock_guard<std::mutex> guard(mutex_);
  const auto deadline = Clock::now() + std::max<std::chrono::milliseconds>(timeout_, kFrameTimeout);
  try {
    write_frame(socket_, command, key, value, deadline);
    std::uint8_t status = 0;
    socket_.read_exact(&status, 1, deadline);
    std::vector<char> reply = read_sized(socket_, deadline);
    if (status == 0) return std::nullopt;
    return reply;
  } catch (const Error& error) {
    GROVE_CHECK(false, "rank ", rank_, " lost the rendezvous store at ", host_, ":", port_,
                ", which rank 0 runs: ", error.message(),
                ". Rank 0 has probably exited or crashed; look at its output first");
  }
  return {};
}

std::optional<std::vector<char>> TcpStore::try_get(const std::string& key) {
  return request(kGet, key, {});
}

std::vector<char> TcpStore::get(const std::string& key) { return get(key, timeout_); }

std::vector<char> TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  wait({key}, timeout);
  return *try_get(key);
}

void TcpStore::set(const std::string& key, const std::vector<char>& value) {
  request(kSet, key, value);
}

std::int64_t TcpStore::add(const std::string& key, std::int64_t delta) {
  return as_counter(request(kAdd, key, counter_bytes(delta)).value_or(std::vector<char>()));
}

void TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(50);
  for (const std::string& key : keys) {
    while (!try_get(key)) {
      if (Clock::now() >= deadline) {
        // A rank that went away is the likely reason. See Note [Who went away].
        const std::string gone = describe_gone_ranks();
        GROVE_CHECK(false, "rank ", rank_, " timed out after ", timeout.count(),
                    " ms waiting for '", key, "' in the rendezvous store",
                    gone.empty() ? std::string() : "; " + gone,
                    ". Every process must reach the same point; raise the timeout "
                    "(GROVE_TIMEOUT_S) if some are just slow");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
  }
}

TcpStore::GoneRanks TcpStore::gone_ranks() {
  GoneRanks gone;
  try {
    for (int r = 0; r < world_size_; ++r) {
      if (try_get("grove/lost/" + std::to_string(r))) {
        gone.lost.push_back(r);
      } else if (try_get("grove/finished/" + std::to_string(r))) {
        gone.finished.push_back(r);
      }
    }
  } catch (const Error&) {
    gone.store_unreachable = true;
    gone.lost = {0};
  }
  return gone;
}

std::string TcpStore::describe_gone_ranks() {
  GoneRanks gone = gone_ranks();
  // A peer's death reaches the other ranks' connections about when it reaches the store's
  // server; give the server a moment to mark it before saying nobody is known gone.
  for (int attempt = 0; attempt < 20 && gone.lost.empty() && gone.finished.empty() &&
                        !gone.store_unreachable;
       ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    gone = gone_ranks();
  }
  std::string text;
  auto list = [](const std::vector<int>& ranks) {
    std::string names;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      names += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
    }
    return (ranks.size() == 1 ? "rank " : "ranks ") + names;
  };
  if (gone.store_unreachable) {
    return "rank 0 (which runs the rendezvous store) is unreachable: it exited or crashed";
  }
  if (!gone.lost.empty()) text += list(gone.lost) + " exited without finishing (crashed or killed)";
  if (!gone.finished.empty()) {
    text += (text.empty() ? "" : "; ") + list(gone.finished) +
            " already finished (did every rank run the same collectives?)";
  }
  return text;
}

void TcpStore::throw_collective_failure(const char* what, const char* engine,
                                        const std::string& engine_said) {
  const std::string gone = describe_gone_ranks();
  GROVE_CHECK(false, what, " failed on rank ", rank_, " of ", world_size_, " (", engine, "): ",
              gone.empty() ? std::string("no rank is known to have exited") : gone, ". ",
              engine, " said: ", engine_said,
              gone.empty() ? ". If every rank is alive, check that all of them run the same "
                             "collectives in the same order, or raise GROVE_TIMEOUT_S"
                           : "");
  std::abort();  // not reached
}

}  // namespace grove::dist
