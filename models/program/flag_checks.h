// Checks of the `grove` program's flags that CLI11 does not make, shared by its commands.
//
// Numbers: CLI11 converts a flag's text with the standard library, which wraps "-1" into an
// unsigned flag (--seed -1 became 18446744073709551615) and clamps a number too large for its
// type, so the error that follows names a number the user never typed. whole_number() checks
// the text itself, before any conversion, and names what was typed.
//
// Output files: a run that would fail to write its checkpoint or logits at the end must fail
// before its first step, as a run with an unwritable --metrics does. prepare_output_file() makes
// the missing folders of the path (as users expect) and tries the folder for writing.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace grove::program {

// A CLI11 validator: the flag's text is a whole number from `min` to `max` (decimal, an
// optional '-'), else "expected a whole number from MIN to MAX, got TEXT".
CLI::Validator whole_number(std::int64_t min, std::uint64_t max);
// The common ranges: 0 to the largest int64, and 0 to the largest uint64.
CLI::Validator count_flag();
CLI::Validator seed_flag();

// Makes the folders of `path` that are missing and checks that a file can be written there;
// throws grove::Error naming `flag` and the folder otherwise (or when `path` is a folder).
void prepare_output_file(const std::string& path, const char* flag);

}  // namespace grove::program
