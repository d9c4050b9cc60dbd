// Layout checks: does a set of tensors read from a file have the names, shapes and dtypes that
// the model (or optimizer) about to receive it expects?
//
// What it is not: a value check, and not order-sensitive: two sets with the same entries in
// another order have the same layout. Devices are not compared (a file's tensors are on the
// CPU, a model's may be anywhere).
#pragma once

#include <string_view>

#include "models/checkpoint/safetensors.h"

namespace grove::checkpoint {

// Throws grove::Error unless `found` has exactly the names of `expected`, each with the same
// shape and dtype. The message starts with `what` (e.g. "checkpoint 'run/step_100.safetensors',
// model weights") and lists every difference at once: missing entries (expected, not found),
// unexpected ones (found, not expected), and mis-shaped ones with both shapes and dtypes; a
// name given twice in either set is reported too. Long lists are cut after 20 entries with a
// count of the rest. Reads metadata only (never tensor data); thread-safe.
void check_same_layout(const NamedTensors& expected, const NamedTensors& found,
                       std::string_view what);

}  // namespace grove::checkpoint
