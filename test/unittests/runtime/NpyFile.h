// Writes a test's .npy array from a vector of its values.

#ifndef DPC_TEST_UNITTESTS_RUNTIME_NPYFILE_H
#define DPC_TEST_UNITTESTS_RUNTIME_NPYFILE_H

#include "dpc/runtime/Data.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dpc::test {

/// `values` as an .npy array of `shape` with numpy's dtype `descr` ("<f4",
/// "<i8", "|u1"...), which must match T's size.
template <typename T>
void writeNpy(const std::string &path, const std::string &descr,
              const std::vector<int64_t> &shape, const std::vector<T> &values) {
  runtime::writeNpyFile(path, descr, shape, values.data(),
                        values.size() * sizeof(T));
}

} // namespace dpc::test

#endif // DPC_TEST_UNITTESTS_RUNTIME_NPYFILE_H
