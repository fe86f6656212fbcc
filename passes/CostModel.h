//===- CostModel.h - Analytic cost of nn ops --------------------*- C++ -*-===//
//
// Counts the work of an nn op and of the gradient ops autodiff will build for
// it, and turns counts into time with a roofline model of a target. Shared by
// annotate-costs and, through its attributes, the planner.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_COSTMODEL_H
#define DPC_PASSES_COSTMODEL_H

#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::dpc {

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

/// A target's peak rates for the roofline model.
struct TargetRates {
  double flopsPerSecond;
  double bytesPerSecond;

  /// Milliseconds for `flops` and `bytes` on this target: the slower of the
  /// compute and the memory bound.
  double milliseconds(double flops, double bytes) const;
};

/// The work of `op`, or nullopt when `op` is not an nn op with a cost rule.
std::optional<OpWork> estimateWork(Operation *op);

/// Milliseconds of `work` on `rates`: the op's own kernel call, or with
/// `gradient` its gradient ops' calls. The roofline's bound (the compute
/// scaled by computeScale, the bytes, the loop's least time) plus the
/// fixed cost of the calls.
double estimateMs(const OpWork &work, const TargetRates &rates,
                  bool gradient = false);

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

/// Whether a bf16 build (`pipe.precision`) computes `op` in bf16: the
/// convolutions and matmuls and their gradients, the ops lower-to-runtime
/// calls the `_bf16` kernels for (a Winograd convolution stays f32).
bool computesInBf16(Operation *op);

/// How much faster than f32 a bf16 build computes those ops, on their
/// floating-point work: the analytic model divides their compute bound by
/// it, and adds reading their f32 operands and writing them as bf16 (6
/// bytes an element) at the memory rate (a measured profile of the bf16
/// build replaces both). `dpc profile` of ResNet-18 (4 x 16, one thread,
/// direct convolutions in both precisions) measured its convolutions at
/// 0.54x the f32 time, forward and backward together (docs/ARCHITECTURE.md,
/// "bf16 mixed precision").
constexpr double kBf16Speedup = 1.85;

} // namespace mlir::dpc

#endif // DPC_PASSES_COSTMODEL_H
