// The misuse suite's one shape of test: a table of wrong calls, each with the facts its error
// message must name. A case passes when its call throws grove::Error (not another exception, not
// an internal-error report, not nothing) whose message() contains every fact. A call that
// crashes fails the whole binary, and one that hangs fails at ctest's timeout: both are bugs.
//
// Each tests/misuse/*_test.cpp file writes one or more tables (functions returning
// std::vector<MisuseCase>) and instantiates the parameterised test over each with
// GROVE_MISUSE_SUITE(Area, table_function). Facts are substrings, not whole messages, so wording
// can improve without breaking the table; each fact is one a user needs to fix the call (the
// shapes, dtypes, indices or devices involved, and what was expected).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <ostream>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "core/error.h"

namespace grove::misuse {

struct MisuseCase {
  MisuseCase(std::string name, std::function<void()> call, std::vector<std::string> facts,
             std::string skip_reason = {})
      : name(std::move(name)),
        call(std::move(call)),
        facts(std::move(facts)),
        skip_reason(std::move(skip_reason)) {}

  std::string name;                // unique in its table; letters, digits and '_' (a test name)
  std::function<void()> call;      // the wrong call; builds its own inputs
  std::vector<std::string> facts;  // substrings the error message must contain
  std::string skip_reason;  // non-empty: a known failure whose fix is elsewhere; skipped, with it
};

// GoogleTest prints a case by its name (not as bytes) when it fails.
inline void PrintTo(const MisuseCase& misuse, std::ostream* out) {
  *out << misuse.name;
}

// Whether the call threw a grove::Error naming every fact, and if not, what it did instead.
inline ::testing::AssertionResult fails_with_grove_error(const MisuseCase& misuse) {
  std::string message;
  try {
    misuse.call();
    return ::testing::AssertionFailure() << "no exception was thrown";
  } catch (const Error& error) {
    message = error.message();
  } catch (const std::exception& error) {
    return ::testing::AssertionFailure()
           << "threw a non-grove exception (" << typeid(error).name() << "): " << error.what();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw something that is not a std::exception";
  }
  if (message.starts_with("internal error in grove")) {
    return ::testing::AssertionFailure()
           << "a user's mistake was reported as a bug in grove: " << message;
  }
  for (const std::string& fact : misuse.facts) {
    if (message.find(fact) == std::string::npos) {
      return ::testing::AssertionFailure() << "the message lacks \"" << fact << "\": " << message;
    }
  }
  return ::testing::AssertionSuccess() << message;
}

// A test name GoogleTest accepts: letters, digits and '_' only.
inline std::string case_name(const ::testing::TestParamInfo<MisuseCase>& info) {
  std::string name = info.param.name;
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  }
  return name;
}

class MisuseTest : public ::testing::TestWithParam<MisuseCase> {};

// Appends `more` to `cases` (tables built from several helper functions).
inline void append(std::vector<MisuseCase>& cases, std::vector<MisuseCase> more) {
  for (MisuseCase& one : more) cases.push_back(std::move(one));
}

}  // namespace grove::misuse

// One parameterised test per table: Area/MisuseTest.Throws/<case name>.
#define GROVE_MISUSE_SUITE(Area, table_function)                                \
  namespace {                                                                   \
  class Area : public ::grove::misuse::MisuseTest {};                           \
  TEST_P(Area, ThrowsAGroveErrorNamingTheProblem) {                             \
    const ::grove::misuse::MisuseCase& misuse = GetParam();                     \
    if (!misuse.skip_reason.empty()) GTEST_SKIP() << misuse.skip_reason;        \
    EXPECT_TRUE(::grove::misuse::fails_with_grove_error(misuse));               \
  }                                                                             \
  INSTANTIATE_TEST_SUITE_P(Misuse, Area, ::testing::ValuesIn(table_function()), \
                           ::grove::misuse::case_name);                         \
  }
