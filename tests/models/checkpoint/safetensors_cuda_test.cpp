// save_safetensors with tensors on a CUDA device: each is copied to the host (non-contiguous
// ones made contiguous) and the file equals the one written from the same values on the CPU,
// byte for byte. Skipped without a device.
#include <gtest/gtest.h>

#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "models/checkpoint/safetensors.h"
#include "tests/models/checkpoint/checkpoint_test_util.h"

namespace grove::checkpoint {
namespace {

using testing::read_bytes;
using testing::TempDir;

#define SKIP_WITHOUT_GPU() \
  if (!::grove::cuda_is_available()) GTEST_SKIP() << "no CUDA device"

TEST(SafetensorsCudaTest, DeviceTensorsAreWrittenAsTheirHostCopies) {
  SKIP_WITHOUT_GPU();
  TempDir dir;
  const NamedTensors on_cpu = {
      {"weight", from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
      {"steps", from_vector<std::int64_t>({7, 8})},
      {"mask", from_vector<bool>({true, false, true})},
      {"scalar", full({}, 2.5, DType::Float64)},
  };
  NamedTensors on_gpu;
  for (const auto& [name, tensor] : on_cpu) on_gpu.emplace_back(name, tensor.to(cuda(0)));
  // A non-contiguous device tensor: the transpose of a (3, 2) tensor holds `weight`'s values.
  on_gpu[0].second = from_vector<float>({1, 4, 2, 5, 3, 6}, {3, 2}).to(cuda(0)).t();
  ASSERT_FALSE(on_gpu[0].second.is_contiguous());

  save_safetensors(dir / "cpu.safetensors", on_cpu, {{"device", "any"}});
  save_safetensors(dir / "gpu.safetensors", on_gpu, {{"device", "any"}});
  EXPECT_EQ(read_bytes(dir / "gpu.safetensors"), read_bytes(dir / "cpu.safetensors"));

  const SafetensorsFile file = load_safetensors(dir / "gpu.safetensors");
  EXPECT_TRUE(file.checksum_verified);
  for (const auto& [name, tensor] : file.tensors) EXPECT_TRUE(tensor.device().is_cpu()) << name;
}

}  // namespace
}  // namespace grove::checkpoint
