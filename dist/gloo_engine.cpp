// The CPU engine: collectives between CPU tensors over Gloo's TCP transport (Debian's
// libgloo-dev, the library PyTorch's CPU backend uses). Built only when CMake found Gloo
// (GROVE_HAS_GLOO); without it make_gloo_engine refuses with the package to install.
//
// Each collective is launched as a CPU-stream kernel (launch_cpu), so it runs in stream order
// and a CPU graph that captured it replays it. Gloo's own errors (a peer's connection closed, the
// timeout passed) become grove::Error naming the ranks the store knows are gone
// (Note [Who went away] in dist/tcp_store.h).
#include "dist/process_group.h"

#ifdef GROVE_HAS_GLOO

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <exception>

#include "core/dtype.h"
#include "core/error.h"
#include "core/stream.h"

namespace grove::dist {
namespace {

// Gloo's view of grove's store.
class GlooStore final : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(TcpStore& store) : store_(store) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set("gloo/" + key, data);
  }
  std::vector<char> get(const std::string& key) override { return store_.get("gloo/" + key); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, store_.timeout()); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> prefixed;
    for (const std::string& key : keys) prefixed.push_back("gloo/" + key);
    store_.wait(prefixed, timeout);
  }

 private:
  TcpStore& store_;
};

class GlooEngine final : public ops::CollectiveEngine {
 public:
  GlooEngine(TcpStore& store, const ProcessGroupOptions& options)
      : store_(store), rank_(options.rank), world_size_(options.world_size),
        timeout_(options.timeout) {
    gloo::transport::tcp::attr attr;
    if (!options.gloo_interface.empty()) {
      attr.iface = options.gloo_interface;
    } else if (options.world_size == 1 || options.master_addr == "localhost" ||
               options.master_addr == "127.0.0.1" || options.master_addr == "::1") {
      attr.hostname = "127.0.0.1";  // one host: the loopback
    }  // else Gloo takes the address of this host's name
    context_ = std::make_shared<gloo::rendezvous::Context>(rank_, world_size_);
    context_->setTimeout(timeout_);
    GlooStore gloo_store(store_);
    guarded("connecting to the other ranks", [&] {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      context_->connectFullMesh(gloo_store, device_);
    });
  }

  void all_reduce(void* data, std::int64_t count, DType dtype, ops::ReduceOp op,
                  Stream stream) override {
    launch_cpu(stream, [this, data, count, dtype, op] {
      dispatch_dtype<DTypes::All>(dtype, "all_reduce_", [&]<typename T>() {
        guarded("all_reduce_", [&] {
          gloo::AllreduceOptions options(context_);
          options.setOutput(static_cast<T*>(data), static_cast<std::size_t>(count));
          options.setTimeout(timeout_);
          if (op == ops::ReduceOp::kMax) {
            options.setReduceFunction(
                static_cast<void (*)(void*, const void*, const void*, std::size_t)>(
                    &gloo::max<T>));
          } else if (op == ops::ReduceOp::kMin) {
            options.setReduceFunction(
                static_cast<void (*)(void*, const void*, const void*, std::size_t)>(
                    &gloo::min<T>));
          } else {
            options.setReduceFunction(
                static_cast<void (*)(void*, const void*, const void*, std::size_t)>(
                    &gloo::sum<T>));
          }
          gloo::allreduce(options);
        });
        if constexpr (std::is_floating_point_v<T>) {
          if (op == ops::ReduceOp::kMean) {
            T* values = static_cast<T*>(data);
            const T scale = T(1) / static_cast<T>(world_size_);
            for (std::int64_t i = 0; i < count; ++i) values[i] *= scale;
          }
        }
      });
    });
  }

  void broadcast(void* data, std::int64_t count, DType dtype, int root, Stream stream) override {
    launch_cpu(stream, [this, data, count, dtype, root] {
      const std::size_t bytes = static_cast<std::size_t>(count) * element_size(dtype);
      guarded("broadcast_", [&] {
        gloo::BroadcastOptions options(context_);
        options.setOutput(static_cast<char*>(data), bytes);
        options.setRoot(root);
        options.setTimeout(timeout_);
        gloo::broadcast(options);
      });
    });
  }

  void all_gather(const void* input, void* output, std::int64_t count, DType dtype,
                  Stream stream) override {
    launch_cpu(stream, [this, input, output, count, dtype] {
      const std::size_t bytes = static_cast<std::size_t>(count) * element_size(dtype);
      guarded("all_gather", [&] {
        gloo::AllgatherOptions options(context_);
        options.setInput(const_cast<char*>(static_cast<const char*>(input)), bytes);
        options.setOutput(static_cast<char*>(output), bytes * static_cast<std::size_t>(world_size_));
        options.setTimeout(timeout_);
        gloo::allgather(options);
      });
    });
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string name() const override { return "gloo"; }

 private:
  // Runs `body`, turning Gloo's exceptions into grove::Error that say which ranks are gone.
  template <typename Body>
  void guarded(const char* what, Body&& body) {
    try {
      body();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& error) {
      store_.throw_collective_failure(what, "gloo", error.what());
    }
  }

  TcpStore& store_;
  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::shared_ptr<gloo::transport::Device> device_;
};

}  // namespace

bool has_gloo() { return true; }

std::unique_ptr<ops::CollectiveEngine> make_gloo_engine(TcpStore& store,
                                                        const ProcessGroupOptions& options) {
  return std::make_unique<GlooEngine>(store, options);
}

}  // namespace grove::dist

#else  // no Gloo in this build

#include "core/error.h"

namespace grove::dist {

bool has_gloo() { return false; }

std::unique_ptr<ops::CollectiveEngine> make_gloo_engine(TcpStore&, const ProcessGroupOptions&) {
  GROVE_CHECK(false, "this build of grove has no Gloo, the engine of collectives between CPU "
                     "tensors: install Debian's libgloo-dev (scripts/install_deps.sh does) and "
                     "rebuild");
  return nullptr;
}

}  // namespace grove::dist

#endif
