// DistributedDataParallel: buckets, hooks and the reductions. See models/nn/distributed.h.
#include "models/nn/distributed.h"

#include "autograd/autograd.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "ops/collective.h"

namespace grove::nn {

struct DistributedDataParallel::Bucket {
  std::vector<std::string> names;  // the parameters, in bucket order
  std::vector<Tensor> parameters;
  std::vector<std::int64_t> offsets;  // where each parameter starts in `flat`
  std::int64_t numel = 0;             // the parameters' elements together: flat's size
  std::vector<bool> arrived;          // this step
  std::size_t pending = 0;            // gradients not arrived yet this step
  Tensor flat;                        // (total numel,) on the parameters' device and dtype
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 DdpOptions options)
    : module_(std::move(module)), options_(options), alive_(std::make_shared<bool>(true)) {
  GROVE_CHECK(module_ != nullptr, "DistributedDataParallel needs a module, but got null");
  GROVE_CHECK(options_.bucket_bytes > 0, "expected bucket_bytes > 0");
  autograd::NoGradGuard no_grad;
  // Every rank starts from rank 0's parameters and buffers.
  for (const auto& [name, parameter] : module_->named_parameters()) {
    ops::broadcast_(parameter.detach(), 0, options_.group);
  }
  for (const auto& [name, buffer] : module_->named_buffers()) {
    if (buffer.numel() > 0) ops::broadcast_(buffer, 0, options_.group);
  }

  // Buckets, from the last parameter to the first; a new bucket when the device or dtype
  // changes or the bytes would pass bucket_bytes.
  NamedTensors named = module_->named_parameters();
  for (auto it = named.rbegin(); it != named.rend(); ++it) {
    const auto& [name, parameter] = *it;
    if (!parameter.requires_grad()) continue;
    const Bucket* last = buckets_.empty() ? nullptr : buckets_.back().get();
    const bool fits =
        last != nullptr && last->parameters.front().device() == parameter.device() &&
        last->parameters.front().dtype() == parameter.dtype() &&
        static_cast<std::size_t>(last->numel + parameter.numel()) *
                element_size(parameter.dtype()) <=
            options_.bucket_bytes;
    if (!fits) buckets_.push_back(std::make_unique<Bucket>());
    Bucket& bucket = *buckets_.back();
    bucket.names.push_back(name);
    bucket.parameters.push_back(parameter);
    bucket.offsets.push_back(bucket.numel);
    bucket.numel += parameter.numel();
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = *buckets_[b];
    const Tensor& first = bucket.parameters.front();
    bucket.flat =
        zeros({bucket.numel}, TensorOptions().dtype(first.dtype()).device(first.device()));
    bucket.arrived.assign(bucket.parameters.size(), false);
    bucket.pending = bucket.parameters.size();
    for (std::size_t slot = 0; slot < bucket.parameters.size(); ++slot) {
      std::weak_ptr<bool> alive = alive_;
      autograd::register_post_accumulate_grad_hook(
          bucket.parameters[slot], [this, alive, b, slot](const Tensor&) {
            if (alive.lock()) on_gradient(b, slot);
          });
    }
  }
}

DistributedDataParallel::~DistributedDataParallel() { *alive_ = false; }

std::size_t DistributedDataParallel::num_buckets() const { return buckets_.size(); }

void DistributedDataParallel::on_gradient(std::size_t bucket_index, std::size_t slot) {
  Bucket& bucket = *buckets_[bucket_index];
  GROVE_CHECK(!bucket.arrived[slot], "DistributedDataParallel: the gradient of '",
              bucket.names[slot],
              "' arrived twice in one step (two backward passes without finish_gradient_sync() "
              "between them?); gradient accumulation without reducing is not supported");
  bucket.arrived[slot] = true;
  --bucket.pending;
  if (bucket.pending == 0) launch_ready_buckets();
}

void DistributedDataParallel::launch_ready_buckets() {
  autograd::NoGradGuard no_grad;
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_]->pending == 0) {
    Bucket& bucket = *buckets_[next_bucket_];
    for (std::size_t i = 0; i < bucket.parameters.size(); ++i) {
      const Tensor grad = bucket.parameters[i].grad();
      bucket.flat.narrow(0, bucket.offsets[i], grad.numel()).copy_(grad.reshape({-1}));
    }
    ops::all_reduce_(bucket.flat, ops::ReduceOp::kMean, options_.group);
    for (std::size_t i = 0; i < bucket.parameters.size(); ++i) {
      const Tensor grad = bucket.parameters[i].grad();
      grad.copy_(bucket.flat.narrow(0, bucket.offsets[i], grad.numel()).view(grad.sizes()));
    }
    ++reductions_;
    ++next_bucket_;
  }
}

void DistributedDataParallel::finish_gradient_sync() {
  std::string missing;
  for (const auto& bucket : buckets_) {
    for (std::size_t i = 0; i < bucket->parameters.size(); ++i) {
      if (!bucket->arrived[i]) missing += (missing.empty() ? "" : ", ") + bucket->names[i];
    }
  }
  // Ready for the next step whatever happens below.
  for (auto& bucket : buckets_) {
    bucket->arrived.assign(bucket->parameters.size(), false);
    bucket->pending = bucket->parameters.size();
  }
  const std::size_t launched = next_bucket_;
  next_bucket_ = 0;
  GROVE_CHECK(missing.empty(), "DistributedDataParallel: no gradient arrived this step for ",
              missing,
              "; every parameter must get a gradient each step (use all of them in the loss, "
              "or set requires_grad false on those you freeze before wrapping the model)");
  GROVE_INTERNAL_ASSERT(launched == buckets_.size(), "only ", launched, " of ", buckets_.size(),
                        " buckets were reduced although every gradient arrived");
}

}  // namespace grove::nn
