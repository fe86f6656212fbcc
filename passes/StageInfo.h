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

#include "dpc/schedule/MemoryAdvice.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Verifier.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <map>
#include <string>
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
/// cluster, each rank's device memory (`pipe.rank_memory_bytes`). None at
/// all for a negative `memoryLimit` (a probe that measures the peaks).
::dpc::schedule::VerifyOptions memoryLimitsOf(ModuleOp module,
                                              double memoryLimit);

/// Each stage's segment arenas in bytes, by segment name ("forward",
/// "backward", ...): first-fit offsets over the buffers' lifetimes in the
/// segment (SegmentArenas.cpp). With `annotate` (plan-memory), each
/// allocating op gets `pipe.offset` and each segment `pipe.arena_bytes`.
using SegmentArenas = std::map<int64_t, std::map<std::string, int64_t>>;
SegmentArenas planSegmentArenas(ModuleOp module, bool annotate = false);

/// VerifyOptions::computeScratchBytes of `arenas`: the arena of the segment
/// an instruction runs, while it runs.
std::function<double(int, const ::dpc::schedule::Instruction &)>
arenaScratch(SegmentArenas arenas);

/// What schedule::memoryAdvice needs of a build of `module`: whether it
/// recomputes already (`recompute`), whether it is bf16, and its largest
/// parameter's bytes.
::dpc::schedule::MemoryLevers memoryLeversOf(ModuleOp module, bool recompute);

} // namespace mlir::dpc

#endif // DPC_PASSES_STAGEINFO_H
