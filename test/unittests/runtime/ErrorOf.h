//===- ErrorOf.h - The message of a dpc::Error in tests ---------*- C++ -*-===//
//
// The runtime's and the planner's tests check what host code throws
// (docs/ARCHITECTURE.md, "Errors") through these.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_RUNTIME_ERROROF_H
#define DPC_TEST_UNITTESTS_RUNTIME_ERROROF_H

#include "dpc/runtime/Error.h"

#include <string>

namespace dpc {

/// The message of the Error `f` throws, or "" when it throws none.
template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

/// The message of the InputError (the user's to fix, exit 2) `f` throws;
/// "(not an InputError) MESSAGE" for another Error, "(no error)" when it
/// throws none, so that a test expecting the user's error sees which.
template <typename F> std::string inputErrorOf(F &&f) {
  try {
    f();
  } catch (const InputError &e) {
    return e.what();
  } catch (const Error &e) {
    return std::string("(not an InputError) ") + e.what();
  }
  return "(no error)";
}

namespace runtime {
using dpc::errorOf;
using dpc::inputErrorOf;
} // namespace runtime

} // namespace dpc

#endif // DPC_TEST_UNITTESTS_RUNTIME_ERROROF_H
