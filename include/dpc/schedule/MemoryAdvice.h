//===- MemoryAdvice.h - What would make a plan fit its memory ---*- C++ -*-===//
//
// When a schedule breaks its memory limit, the verifier names each rank's
// first instruction over it. MemoryAdvice adds the one line a user acts on:
// by how much the fullest rank is over, how its peak divides between what
// stays resident all step (weights, gradients, optimizer state) and what
// comes and goes (stashed activations, in-flight buffers), and which of
// dpc compile's levers would close the gap on its own: more stages,
// recomputation, bf16 activations, a sharded optimizer.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SCHEDULE_MEMORYADVICE_H
#define DPC_SCHEDULE_MEMORYADVICE_H

#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"

#include <string>

namespace dpc::schedule {

/// The levers already pulled in this build.
struct MemoryLevers {
  bool recompute = false;
  bool bf16 = false;
  /// The model's largest parameter in bytes (one weight, no state): no
  /// split puts less than it, with its gradient and state, on one rank.
  double largestParamBytes = 0;
};

/// For a result with MemoryLimit violations, the advice; "" when every rank
/// fits.
std::string memoryAdvice(const Schedule &schedule, const VerifyOptions &options,
                         const VerifyResult &result,
                         const MemoryLevers &levers);

} // namespace dpc::schedule

#endif // DPC_SCHEDULE_MEMORYADVICE_H
