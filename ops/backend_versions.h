// The optional libraries the op kernels were built with, and their versions, for `grove info`:
// oneDNN (CPU float32 convolutions and GEMMs) and, in a CUDA build, the cudnn-frontend headers
// (fused 16-bit attention). One line each, "name version (what for)" or "name: not built (why)".
#pragma once

#include <string>
#include <vector>

namespace grove::ops {

std::vector<std::string> backend_versions();

}  // namespace grove::ops
