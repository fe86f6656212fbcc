//===- StageInfo.h - What build-schedule knows of each stage ----*- C++ -*-===//
//
// The schedule library's view of an outlined module's stages: compute times
// from the segments' `nn.cost`, resident parameter bytes, stashed and sent
// bytes per microbatch. build-schedule builds its streams from it; dpc
// compile --seq-buckets writes it into the manifest per shape bucket.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_STAGEINFO_H
#define DPC_PASSES_STAGEINFO_H

#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"

#include "mlir/IR/BuiltinOps.h"

#include <vector>

namespace mlir::dpc {

/// One entry per (virtual) stage of the outlined segments of `module`, in
/// stage order. The values the backward-input half stashes for the weight
/// half count as stashed bytes only with `splitBackward` (a schedule that
/// runs the halves, zb-h1): the others run the whole backward, which
/// stashes nothing.
std::vector<::dpc::schedule::StageInfo>
collectStageInfo(ModuleOp module, bool splitBackward = true);

/// The memory limits a rank of `module` is held to: `memoryLimit` (dpc
/// compile --memory-limit; 0 for none) and, for a build planned on a
/// cluster, each rank's device memory (`pipe.rank_memory_bytes`).
::dpc::schedule::VerifyOptions memoryLimitsOf(ModuleOp module,
                                              double memoryLimit);

} // namespace mlir::dpc

#endif // DPC_PASSES_STAGEINFO_H
