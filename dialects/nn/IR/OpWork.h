//===- OpWork.h - What an nn op's kernels do --------------------*- C++ -*-===//
//
// The work counts of an nn op and of the gradient ops autodiff builds for it,
// and the kernel terms the counts alone miss, measured on this machine. Each
// op family states its ops' counts beside their verifiers (estimate<Family>Work
// in NN<Family>.cpp); passes/CostModel turns counts into time.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_OPWORK_H
#define DPC_DIALECTS_NN_IR_OPWORK_H

#include "mlir/IR/Operation.h"

#include <cstdint>

namespace mlir::dpc::nn {

/// Work of one op. "grad" counts are those of the gradient ops of a forward
/// op (zero for ops that are themselves gradients or updates).
struct OpWork {
  double flops = 0;
  double bytes = 0;
  double gradFlops = 0;
  double gradBytes = 0;
  /// Bytes of the op's results: what a stage boundary after it would carry.
  int64_t activationBytes = 0;
  /// Bytes of the parameters (`nn.param` operands) the op reads.
  int64_t parameterBytes = 0;
  /// The fixed time of the op's own kernel call (none for a view) and of
  /// the calls its gradient ops make, which no roofline sees.
  double callMs = 0;
  double gradCallMs = 0;
  /// How many times the flops' time at the peak rate the op's (its
  /// gradient ops') compute takes, where a kernel measurably fills only
  /// part of its vectors (convolutions of few channels).
  double computeScale = 1;
  double gradComputeScale = 1;
  /// The least time the op's (its gradient ops') loop takes, where a
  /// kernel runs measurably below the peak rate whatever its size (max
  /// pooling).
  double loopMs = 0;
  double gradLoopMs = 0;
};

/// What a kernel call costs on this machine beyond the roofline, from
/// `dpc profile --fusion off` of LeNet-5, the MLP, ResNet-18, the attention
/// model and tiny-gpt (the e2e oracle's exports, microbatches of 16, one
/// kernel thread as each of two ranks on this 2-core machine gets; 487
/// timed calls, docs/SCHEDULES.md "The analytic model's kernel terms").
///
/// The fixed cost of a call: least squares of measured minus roofline time
/// over the calls whose roofline time is under 1 us, where the call is all
/// there is (argument checks, dispatch, a oneDNN primitive's cache lookup
/// and stream, the first touch of small buffers): 0.82 us over the 6
/// oneDNN calls (matmuls and their gradients), 1.20 us over the 31 plain
/// loops (adds, sums, relus, losses). A fused region is one call where its
/// ops were several, so the schedule prices a fused build slightly high.
constexpr double kOneDnnCallMs = 0.8e-3;
constexpr double kLoopCallMs = 1.2e-3;

/// Max pooling's loops (PyTorch's first-maximum rule, scalar) take 2.43 ns
/// per window element forward and backward, least squares over LeNet-5's
/// four pooling calls (2.3-3.1 ns each), 5-12x what the roofline gives
/// their compares and bytes.
constexpr double kMaxPoolWindowMs = 2.43e-6;

/// oneDNN's convolutions compute the channels they write in blocks of 16
/// (a 512-bit vector of f32): the output's channels forward, the input's
/// for the input gradient, the filter's output channels for the filter
/// gradient. LeNet-5's calls writing 6 channels take 2.5-3.6x their
/// flops' time at the peak (the block's 2.67x), its 16-channel forward
/// 0.98x and its 16x6 filter gradient 1.65x (priced 1x), and ResNet-18's
/// convolutions (multiples of 16 channels) 0.86-1.12x.
constexpr int64_t kConvChannelBlock = 16;

/// What a family's cost rule says of an op.
enum class CostRule {
  /// Not an op of the family.
  NotInFamily,
  /// An op of the family that runs no kernel of its own (a parameter read,
  /// a relayout, a fused region's parts).
  NoWork,
  /// An op of the family whose counts the rule filled in.
  Counted,
};

/// A family's cost rule: fills in the counts of `op` in `work`, which holds
/// the bytes the op reads and writes and kLoopCallMs as its call's cost
/// already (a oneDNN kernel sets kOneDnnCallMs; a view, none). Every nn op
/// is in exactly one family; an op that no rule knows is an error
/// (annotate-costs says so).
using FamilyCostRule = CostRule (*)(Operation *op, OpWork &work);

CostRule estimateConvWork(Operation *op, OpWork &work);
CostRule estimateLossWork(Operation *op, OpWork &work);
CostRule estimateMathWork(Operation *op, OpWork &work);
CostRule estimateOptimizerWork(Operation *op, OpWork &work);
CostRule estimatePoolNormWork(Operation *op, OpWork &work);
CostRule estimateRecurrentWork(Operation *op, OpWork &work);
CostRule estimateTensorWork(Operation *op, OpWork &work);

/// The rules of every family, in the order they are asked.
constexpr FamilyCostRule kFamilyCostRules[] = {
    estimateConvWork,      estimateLossWork,     estimateMathWork,
    estimateOptimizerWork, estimatePoolNormWork, estimateRecurrentWork,
    estimateTensorWork};

} // namespace mlir::dpc::nn

#endif // DPC_DIALECTS_NN_IR_OPWORK_H
