// See ops/backend_versions.h. The macros come from ops/CMakeLists.txt, which found (or did not
// find) each library.
#include "ops/backend_versions.h"

#if defined(GROVE_HAS_DNNL)
#include <oneapi/dnnl/dnnl.h>
#endif
#if defined(GROVE_HAS_CUDNN_FRONTEND)
#include <cudnn_frontend_version.h>
#endif

namespace grove::ops {

std::vector<std::string> backend_versions() {
  std::vector<std::string> lines;
#if defined(GROVE_HAS_DNNL)
  const dnnl_version_t* dnnl = dnnl_version();
  lines.push_back("oneDNN " + std::to_string(dnnl->major) + "." + std::to_string(dnnl->minor) +
                  "." + std::to_string(dnnl->patch) +
                  " (CPU float32 convolutions and matrix products)");
#else
  lines.push_back(
      "oneDNN: not built (libdnnl-dev 2 was not found; im2col and Eigen serve the CPU)");
#endif
#if defined(GROVE_HAS_CUDNN_FRONTEND)
  lines.push_back("cudnn-frontend " + std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
                  std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." +
                  std::to_string(CUDNN_FRONTEND_PATCH_VERSION) + " (fused 16-bit attention)");
#elif defined(GROVE_HAS_CUDA)
  lines.push_back(
      "cudnn-frontend: not built (scripts/install_deps.sh fetches it; 16-bit attention runs the "
      "float32 kernels)");
#endif
  return lines;
}

}  // namespace grove::ops
