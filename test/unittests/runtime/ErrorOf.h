//===- ErrorOf.h - The message of a runtime error in tests ------*- C++ -*-===//

#ifndef DPC_TEST_UNITTESTS_RUNTIME_ERROROF_H
#define DPC_TEST_UNITTESTS_RUNTIME_ERROROF_H

#include "dpc/runtime/Error.h"

#include <string>

namespace dpc::runtime {

/// The message of the Error `f` throws, or "" when it throws none.
template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace dpc::runtime

#endif // DPC_TEST_UNITTESTS_RUNTIME_ERROROF_H
