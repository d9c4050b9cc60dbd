// See dist/backend_versions.h. GROVE_HAS_GLOO and GROVE_HAS_NCCL come from dist/CMakeLists.txt.
#include "dist/backend_versions.h"

#if defined(GROVE_HAS_GLOO)
#include <gloo/config.h>
#endif
#if defined(GROVE_HAS_NCCL)
#include <nccl.h>
#endif

namespace grove::dist {

std::vector<std::string> backend_versions() {
  std::vector<std::string> lines;
#if defined(GROVE_HAS_GLOO)
  lines.push_back("Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." +
                  std::to_string(GLOO_VERSION_MINOR) + "." + std::to_string(GLOO_VERSION_PATCH) +
                  " (CPU collectives)");
#else
  lines.push_back("Gloo: not built (libgloo-dev was not found; CPU collectives refuse)");
#endif
#if defined(GROVE_HAS_NCCL)
  int version = 0;
  if (ncclGetVersion(&version) == ncclSuccess) {
    // NCCL 2.19 and later encode major * 10000 + minor * 100 + patch.
    lines.push_back("NCCL " + std::to_string(version / 10000) + "." +
                    std::to_string(version / 100 % 100) + "." + std::to_string(version % 100) +
                    " (GPU collectives)");
  } else {
    lines.push_back("NCCL: built, but the library did not say its version");
  }
#elif defined(GROVE_HAS_CUDA)
  lines.push_back("NCCL: not built (not found at build time; GPU collectives refuse)");
#endif
  return lines;
}

}  // namespace grove::dist
