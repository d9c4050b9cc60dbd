// The collective engines grove_dist was built with, and their versions, for `grove info`: Gloo
// (CPU collectives) and, in a CUDA build, NCCL (GPU collectives). One line each, as
// ops/backend_versions.h.
#pragma once

#include <string>
#include <vector>

namespace grove::dist {

std::vector<std::string> backend_versions();

}  // namespace grove::dist
