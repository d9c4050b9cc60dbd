#include "core/host_reads.h"

#include "core/stream.h"

namespace grove {
namespace {

thread_local bool host_reads_forbidden = false;

}  // namespace

NoHostReadsGuard::NoHostReadsGuard() : previous_(host_reads_forbidden) {
  host_reads_forbidden = true;
}

NoHostReadsGuard::~NoHostReadsGuard() {
  host_reads_forbidden = previous_;
}

void check_host_read(Device device, const char* what) {
  if (host_reads_forbidden) [[unlikely]] {
    throw HostReadDuringTrace(
        detail::join_message(
            what, " reads tensor data on the host while a function is being traced (", device,
            "); a traced function is replayed without running its C++ code, so the value "
            "would never be read again. Move the read out of the compiled function (return "
            "the tensor and read it after the call), or run this function eagerly"),
        __FILE__, __LINE__);
  }
  check_not_capturing(device, what);
}

}  // namespace grove
