// conv2d and its gradients through oneDNN: Note [Convolutions through oneDNN] in
// ops/cpu/conv_dnnl.h. Without oneDNN in the build, launch() declines every convolution.
#include "ops/cpu/conv_dnnl.h"

#ifdef GROVE_HAS_DNNL

#include <dnnl.hpp>

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/tensor.h"

namespace grove::ops::cpu::dnnl_conv {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// At most this many chunks of images (and so threads) per call.
constexpr std::int64_t kChunks = 16;
constexpr std::size_t kAlign = 64;

std::size_t aligned(std::size_t nbytes) {
  return (nbytes + kAlign - 1) / kAlign * kAlign;
}

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// One primitive for chunks of `images` images, with the reorders around it. The operands are
// a (per chunk), b (the weight, shared by all chunks, for Forward and BackwardInput; the input,
// per chunk, for BackwardWeight) and out (per chunk). `*_plain` are grove's layouts, `*_used`
// the primitive's; a reorder exists where they differ.
struct Primitive {
  dnnl::primitive primitive;
  memory::desc a_plain, a_used, b_plain, b_used, out_plain, out_used, bias, scratchpad;
  dnnl::reorder a_in, b_in, out_back;
  bool reorder_a = false, reorder_b = false, reorder_out = false;
  // Offsets in one thread's scratch: a, b (BackwardWeight only), out, the primitive's own.
  std::size_t a_offset = 0, b_offset = 0, out_offset = 0, scratchpad_offset = 0;
  std::size_t thread_bytes = 0;    // one thread's scratch
  std::size_t shared_b_bytes = 0;  // the weight reordered once per call (Forward, BackwardInput)
};

memory::dims dims(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  return {a, b, c, d};
}

// oneDNN wants out = (in + left + right - ((k - 1) d + 1)) / s + 1 exactly; grove's output
// size rounds down, so the right padding is what the last output position actually reads.
std::int64_t right_padding(std::int64_t in, std::int64_t out, std::int64_t kernel,
                           std::int64_t stride, std::int64_t padding, std::int64_t dilation) {
  return (out - 1) * stride + (kernel - 1) * dilation + 1 - in - padding;
}

// nullptr where oneDNN refuses the convolution.
std::unique_ptr<Primitive> make_primitive(Pass pass, const ConvShape& s, std::int64_t images,
                                          bool has_bias) {
  dnnl::engine& engine = cpu_engine();
  const auto f32 = memory::data_type::f32;
  const memory::dims src_dims = dims(images, s.channels, s.height, s.width);
  const memory::dims weight_dims = dims(s.out_channels, s.channels, s.kernel_h, s.kernel_w);
  const memory::dims dst_dims = dims(images, s.out_channels, s.out_h, s.out_w);
  const memory::dims strides = {s.stride_h, s.stride_w};
  const memory::dims dilates = {s.dilation_h - 1, s.dilation_w - 1};  // oneDNN counts from 0
  const memory::dims left = {s.padding_h, s.padding_w};
  const memory::dims right = {
      right_padding(s.height, s.out_h, s.kernel_h, s.stride_h, s.padding_h, s.dilation_h),
      right_padding(s.width, s.out_w, s.kernel_w, s.stride_w, s.padding_w, s.dilation_w)};
  if (right[0] < 0 || right[1] < 0) return nullptr;  // a stride leaves input rows unread
  const memory::desc src_any(src_dims, f32, Tag::any), weight_any(weight_dims, f32, Tag::any),
      dst_any(dst_dims, f32, Tag::any);
  const memory::desc src_plain(src_dims, f32, Tag::nchw), weight_plain(weight_dims, f32, Tag::oihw),
      dst_plain(dst_dims, f32, Tag::nchw), bias_plain({s.out_channels}, f32, Tag::x);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto algorithm = dnnl::algorithm::convolution_direct;

  auto forward_desc = [&](bool bias) {
    return bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm,
                                                  src_any, weight_any, bias_plain, dst_any, strides,
                                                  dilates, left, right)
                : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm,
                                                  src_any, weight_any, dst_any, strides, dilates,
                                                  left, right);
  };
  auto result = std::make_unique<Primitive>();
  Primitive& p = *result;
  try {
    switch (pass) {
      case Pass::Forward: {
        const dnnl::convolution_forward::primitive_desc pd(forward_desc(has_bias), attr, engine);
        p.primitive = dnnl::convolution_forward(pd);
        p.a_plain = src_plain, p.a_used = pd.src_desc();
        p.b_plain = weight_plain, p.b_used = pd.weights_desc();
        p.out_plain = dst_plain, p.out_used = pd.dst_desc();
        p.bias = bias_plain;
        p.scratchpad = pd.scratchpad_desc();
        break;
      }
      case Pass::BackwardInput: {
        const dnnl::convolution_forward::primitive_desc hint(forward_desc(false), engine);
        const dnnl::convolution_backward_data::desc desc(algorithm, src_any, weight_any, dst_any,
                                                         strides, dilates, left, right);
        const dnnl::convolution_backward_data::primitive_desc pd(desc, attr, engine, hint);
        p.primitive = dnnl::convolution_backward_data(pd);
        p.a_plain = dst_plain, p.a_used = pd.diff_dst_desc();
        p.b_plain = weight_plain, p.b_used = pd.weights_desc();
        p.out_plain = src_plain, p.out_used = pd.diff_src_desc();
        p.scratchpad = pd.scratchpad_desc();
        break;
      }
      case Pass::BackwardWeight: {
        const dnnl::convolution_forward::primitive_desc hint(forward_desc(false), engine);
        const dnnl::convolution_backward_weights::desc desc(algorithm, src_any, weight_any, dst_any,
                                                            strides, dilates, left, right);
        const dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, engine, hint);
        p.primitive = dnnl::convolution_backward_weights(pd);
        p.a_plain = dst_plain, p.a_used = pd.diff_dst_desc();
        p.b_plain = src_plain, p.b_used = pd.src_desc();
        p.out_plain = weight_plain, p.out_used = pd.diff_weights_desc();
        p.scratchpad = pd.scratchpad_desc();
        break;
      }
    }
    p.reorder_a = p.a_used != p.a_plain;
    p.reorder_b = p.b_used != p.b_plain;
    p.reorder_out = p.out_used != p.out_plain;
    if (p.reorder_a)
      p.a_in = dnnl::reorder(dnnl::reorder::primitive_desc(engine, p.a_plain, engine, p.a_used));
    if (p.reorder_b)
      p.b_in = dnnl::reorder(dnnl::reorder::primitive_desc(engine, p.b_plain, engine, p.b_used));
    if (p.reorder_out) {
      p.out_back =
          dnnl::reorder(dnnl::reorder::primitive_desc(engine, p.out_used, engine, p.out_plain));
    }
  } catch (const dnnl::error&) {
    return nullptr;
  }
  std::size_t offset = 0;
  auto reserve = [&](bool needed, const memory::desc& desc) {
    const std::size_t at = offset;
    if (needed) offset += aligned(desc.get_size());
    return at;
  };
  p.a_offset = reserve(p.reorder_a, p.a_used);
  p.b_offset = reserve(p.reorder_b && pass == Pass::BackwardWeight, p.b_used);
  p.out_offset = reserve(p.reorder_out, p.out_used);
  p.scratchpad_offset = reserve(true, p.scratchpad);
  p.thread_bytes = offset;
  p.shared_b_bytes = p.reorder_b && pass != Pass::BackwardWeight ? aligned(p.b_used.get_size()) : 0;
  return result;
}

// The process's primitives; see the Note on why they are never evicted.
const Primitive* cached_primitive(Pass pass, const ConvShape& s, std::int64_t images,
                                  bool has_bias) {
  using Key = std::array<std::int64_t, 17>;
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Primitive>> cache;
  const Key key = {static_cast<std::int64_t>(pass),
                   images,
                   has_bias,
                   s.channels,
                   s.height,
                   s.width,
                   s.out_channels,
                   s.kernel_h,
                   s.kernel_w,
                   s.out_h,
                   s.out_w,
                   s.stride_h,
                   s.stride_w,
                   s.padding_h,
                   s.padding_w,
                   s.dilation_h,
                   s.dilation_w};
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(key);
  if (found == cache.end()) {
    // Made for one thread, as it runs: one chunk per thread (oneDNN fixes a primitive's thread
    // count when it makes it).
    ThreadsGuard one_thread(1);
    found = cache.emplace(key, make_primitive(pass, s, images, has_bias)).first;
  }
  return found->second.get();  // null: refused, and remembered as such
}

// What the kernel captures: trivially copyable.
struct Plan {
  Pass pass = Pass::Forward;
  ConvShape shape;
  ConvThreads threads;
  std::int64_t chunks = 1;
  const Primitive* small = nullptr;  // chunks of floor(N / chunks) images
  const Primitive* large = nullptr;  // chunks of one image more (null if none)
  const float* a = nullptr;
  const float* b = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  char* scratch = nullptr;  // threads x thread_bytes, then the shared weight
  std::size_t thread_bytes = 0;
  float* partials = nullptr;  // BackwardWeight with several chunks: chunks x weight elements
};

std::int64_t chunk_begin(const Plan& plan, std::int64_t chunk) {
  return chunk * plan.shape.batch / plan.chunks;
}

memory wrap(const memory::desc& desc, const void* ptr) {
  return memory(desc, cpu_engine(), const_cast<void*>(ptr));
}

// The weight as each primitive reads it (Forward, BackwardInput): the plain weight, or its
// reorder, made once per call. The two chunk sizes' primitives may want different layouts.
struct SharedWeights {
  const void* small = nullptr;
  const void* large = nullptr;
};

void run_chunk(const Plan& plan, std::int64_t chunk, int thread, SharedWeights weights) {
  static thread_local dnnl::stream stream(cpu_engine());
  const ConvShape& s = plan.shape;
  const std::int64_t begin = chunk_begin(plan, chunk);
  const std::int64_t images = chunk_begin(plan, chunk + 1) - begin;
  const bool small = images == s.batch / plan.chunks;
  const Primitive& p = small ? *plan.small : *plan.large;
  char* scratch = plan.scratch + thread * plan.thread_bytes;
  const std::int64_t input_image = s.channels * s.height * s.width;
  const std::int64_t output_image = s.out_channels * s.out_h * s.out_w;

  // a: the input (Forward) or the gradient, per chunk.
  const float* a_plain = plan.a + begin * (plan.pass == Pass::Forward ? input_image : output_image);
  memory a = wrap(p.a_plain, a_plain);
  if (p.reorder_a) {
    memory used = wrap(p.a_used, scratch + p.a_offset);
    p.a_in.execute(stream, a, used);
    a = used;
  }
  // b: the weight (shared, reordered once) or the input (BackwardWeight, per chunk).
  memory b;
  if (plan.pass == Pass::BackwardWeight) {
    b = wrap(p.b_plain, plan.b + begin * input_image);
    if (p.reorder_b) {
      memory used = wrap(p.b_used, scratch + p.b_offset);
      p.b_in.execute(stream, b, used);
      b = used;
    }
  } else {
    b = wrap(p.b_used, small ? weights.small : weights.large);
  }
  // out: the output or grad_input, per chunk; the weight gradient's chunk sum.
  float* out_plain = nullptr;
  switch (plan.pass) {
    case Pass::Forward:
      out_plain = plan.out + begin * output_image;
      break;
    case Pass::BackwardInput:
      out_plain = plan.out + begin * input_image;
      break;
    case Pass::BackwardWeight:
      out_plain = plan.partials == nullptr
                      ? plan.out
                      : plan.partials + chunk * s.out_channels * s.unfolded_rows();
      break;
  }
  memory out_final = wrap(p.out_plain, out_plain);
  memory out = p.reorder_out ? wrap(p.out_used, scratch + p.out_offset) : out_final;
  memory scratchpad = wrap(p.scratchpad, scratch + p.scratchpad_offset);

  switch (plan.pass) {
    case Pass::Forward: {
      std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, a},
                                              {DNNL_ARG_WEIGHTS, b},
                                              {DNNL_ARG_DST, out},
                                              {DNNL_ARG_SCRATCHPAD, scratchpad}};
      if (plan.bias != nullptr) args.emplace(DNNL_ARG_BIAS, wrap(p.bias, plan.bias));
      p.primitive.execute(stream, args);
      break;
    }
    case Pass::BackwardInput:
      p.primitive.execute(stream, {{DNNL_ARG_DIFF_DST, a},
                                   {DNNL_ARG_WEIGHTS, b},
                                   {DNNL_ARG_DIFF_SRC, out},
                                   {DNNL_ARG_SCRATCHPAD, scratchpad}});
      break;
    case Pass::BackwardWeight:
      p.primitive.execute(stream, {{DNNL_ARG_DIFF_DST, a},
                                   {DNNL_ARG_SRC, b},
                                   {DNNL_ARG_DIFF_WEIGHTS, out},
                                   {DNNL_ARG_SCRATCHPAD, scratchpad}});
      break;
  }
  if (p.reorder_out) p.out_back.execute(stream, out, out_final);
  stream.wait();
}

// The weight in `p`'s layout: plan.b itself, or reordered into `target` (one thread: the weight
// is small, and the reorder is then the same for any thread count).
const void* weight_for(const Primitive* p, const Plan& plan, char* target) {
  if (p == nullptr || !p->reorder_b) return plan.b;
  ThreadsGuard one_thread(1);
  static thread_local dnnl::stream stream(cpu_engine());
  memory plain = wrap(p->b_plain, plan.b);
  memory used = wrap(p->b_used, target);
  p->b_in.execute(stream, plain, used);
  stream.wait();
  return target;
}

void run(const Plan& plan) {
  SharedWeights weights;
  if (plan.pass != Pass::BackwardWeight) {
    char* shared = plan.scratch + plan.threads.threads * plan.thread_bytes;
    weights.small = weight_for(plan.small, plan, shared);
    weights.large = weight_for(plan.large, plan, shared + plan.small->shared_b_bytes);
  }
  // An exception must not leave an OpenMP region: the first one is kept and rethrown after it.
  std::exception_ptr error;
  std::mutex error_mutex;
  for_each_item(plan.threads, plan.chunks, [&](std::int64_t chunk, int thread) {
    try {
      run_chunk(plan, chunk, thread, weights);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
  if (plan.partials != nullptr) {
    // The chunks' sums, added in chunk order: the same for every thread count.
    const std::int64_t n = plan.shape.out_channels * plan.shape.unfolded_rows();
    const float* partials = plan.partials;
    float* out = plan.out;
    const std::int64_t chunks = plan.chunks;
    for (std::int64_t i = 0; i < n; ++i) {
      float total = partials[i];
      for (std::int64_t c = 1; c < chunks; ++c) total += partials[c * n + i];
      out[i] = total;
    }
  }
}

}  // namespace

bool launch(Pass pass, const ConvShape& shape, const float* a, const float* b, const float* bias,
            float* out, Device device) {
  if (shape.groups != 1 || shape.batch == 0) return false;

  Plan plan;
  plan.pass = pass;
  plan.shape = shape;
  plan.chunks = std::min(shape.batch, kChunks);
  const std::int64_t small_images = shape.batch / plan.chunks;
  const bool has_bias = bias != nullptr;
  plan.small = cached_primitive(pass, shape, small_images, has_bias);
  if (plan.small == nullptr) return false;
  if (shape.batch % plan.chunks != 0) {
    plan.large = cached_primitive(pass, shape, small_images + 1, has_bias);
    if (plan.large == nullptr) return false;
  }
  const std::int64_t work =
      shape.batch * shape.out_channels * shape.unfolded_rows() * shape.pixels();
  plan.threads = conv_threads(work, plan.chunks);
  plan.threads.parallel_gemm = false;  // one chunk per thread, oneDNN serial inside
  plan.thread_bytes =
      std::max(plan.small->thread_bytes, plan.large == nullptr ? 0 : plan.large->thread_bytes);
  const bool partial_sums = pass == Pass::BackwardWeight && plan.chunks > 1;
  const std::int64_t weight_elements = shape.out_channels * shape.unfolded_rows();
  const std::size_t partial_bytes =
      partial_sums ? aligned(plan.chunks * weight_elements * sizeof(float)) : 0;
  const std::size_t shared_bytes =
      plan.small->shared_b_bytes + (plan.large == nullptr ? 0 : plan.large->shared_b_bytes);
  const std::size_t scratch_bytes =
      plan.threads.threads * plan.thread_bytes + shared_bytes + partial_bytes;
  // Note [Scratch copies before a CPU kernel]: allocated before launch, dies after it.
  Tensor scratch;
  if (scratch_bytes > 0) {
    const auto floats = static_cast<std::int64_t>(scratch_bytes / sizeof(float));
    scratch = empty({floats}, TensorOptions(DType::Float32).device(device));
    plan.scratch = static_cast<char*>(scratch.data_ptr());
    if (partial_sums) {
      plan.partials = reinterpret_cast<float*>(plan.scratch + scratch_bytes - partial_bytes);
    }
  }
  plan.a = a;
  plan.b = b;
  plan.bias = bias;
  plan.out = out;
  launch_cpu(current_stream(device), [plan] { run(plan); });
  return true;
}

}  // namespace grove::ops::cpu::dnnl_conv

#else  // no oneDNN in this build

namespace grove::ops::cpu::dnnl_conv {

bool launch(Pass, const ConvShape&, const float*, const float*, const float*, float*, Device) {
  return false;
}

}  // namespace grove::ops::cpu::dnnl_conv

#endif
