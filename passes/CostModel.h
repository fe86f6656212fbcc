//===- CostModel.h - Analytic cost of nn ops --------------------*- C++ -*-===//
//
// Counts the work of an nn op and of the gradient ops autodiff will build for
// it, by its family's cost rule (dialects/nn/IR/OpWork.h), and turns counts
// into time with a roofline model of a target. Shared by annotate-costs and,
// through its attributes, the planner.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_COSTMODEL_H
#define DPC_PASSES_COSTMODEL_H

#include "dialects/nn/IR/OpWork.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::dpc {

using nn::OpWork;

/// A target's peak rates for the roofline model.
struct TargetRates {
  double flopsPerSecond;
  double bytesPerSecond;

  /// Milliseconds for `flops` and `bytes` on this target: the slower of the
  /// compute and the memory bound.
  double milliseconds(double flops, double bytes) const;
};

/// The work of `op` by its family's cost rule (OpWork.h): nullopt for an op
/// that runs no kernel of its own (not an nn op, a parameter read, ...);
/// failure, with an error on `op`, for an nn op that no rule knows.
FailureOr<std::optional<OpWork>> estimateWork(Operation *op);

/// Milliseconds of `work` on `rates`: the op's own kernel call, or with
/// `gradient` its gradient ops' calls. The roofline's bound (the compute
/// scaled by computeScale, the bytes, the loop's least time) plus the
/// fixed cost of the calls.
double estimateMs(const OpWork &work, const TargetRates &rates,
                  bool gradient = false);

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
