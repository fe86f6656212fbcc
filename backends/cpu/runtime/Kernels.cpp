//===- Kernels.cpp - CPU kernels of the runtime C ABI ---------------------===//
//
// The kernels generated CPU code calls (declared in dpc/runtime/Abi.h).
// Convolutions go to oneDNN and matrix products to its sgemm; the rest are
// plain loops, which the compiler vectorizes well enough for elementwise work
// and which let max pooling follow PyTorch's first-maximum rule exactly.
// Loops over independent outputs (elements, rows, channels, planes) run on
// the kernel threads oneDNN uses too (OpenMP, OMP_NUM_THREADS), each output
// computed by one thread in the serial order, so results do not depend on
// the thread count; reductions across outputs stay on one thread.
//
// Generated code has no unwind tables and no way to handle an error, and a
// bad shape here is a compiler bug, so a kernel that is handed inconsistent
// shapes prints what is wrong and aborts the process; mpirun then stops the
// other ranks. This file holds that report; the kernels are in files by op
// family (Convolution.cpp, Matmul.cpp, Elementwise.cpp, Tensor.cpp,
// Pooling.cpp, Normalization.cpp, Softmax.cpp, RNN.cpp), with what they
// share in Internal.h and ChannelSums.cpp.
//
//===----------------------------------------------------------------------===//

#include "backends/cpu/runtime/Internal.h"

#include <cstdio>
#include <cstdlib>

namespace dpc::cpu {

[[noreturn]] void fail(const char *kernel, const std::string &message) {
  std::fprintf(stderr, "error: %s: %s\n", kernel, message.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string shapeText(const int64_t *shape, int rank) {
  std::string s = "[";
  for (int k = 0; k < rank; ++k)
    s += (k ? "," : "") + std::to_string(shape[k]);
  return s + "]";
}

} // namespace dpc::cpu
