// How large the deliberately long device work of a few GPU tests is, normally and under
// compute-sanitizer.
//
// Note [GPU tests under compute-sanitizer]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Some GPU tests queue long device work on purpose: hundreds of MiB copied or filled before the
// operation under test, so that a missing stream wait or an early reuse of a block would read
// unfinished data; or a thousand steps, so that memory growth would show. Under compute-sanitizer
// every kernel runs tens to thousands of times slower (racecheck most), and those tests alone
// outlasted a 300 s shard on an H200. There the device is slow next to the host anyway, so
// the work that makes it slow can shrink without the test losing its point: these tests ask
// sanitizer_scaled(normal, reduced). scripts/gpu_sanitize.sh sets GROVE_TEST_UNDER_SANITIZER=1
// for every process it starts; nothing else does.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace grove::testing {

inline bool under_compute_sanitizer() {
  const char* value = std::getenv("GROVE_TEST_UNDER_SANITIZER");
  return value != nullptr && value[0] == '1';
}

// `normal` in an ordinary run, `reduced` under compute-sanitizer:
// Note [GPU tests under compute-sanitizer].
inline std::int64_t sanitizer_scaled(std::int64_t normal, std::int64_t reduced) {
  return under_compute_sanitizer() ? reduced : normal;
}

}  // namespace grove::testing
