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

} // namespace mlir::dpc

#endif // DPC_PASSES_COSTMODEL_H
