//===- CostModel.cpp - Analytic cost of nn ops ----------------------------===//
//
// Each op family counts its ops' work beside their verifiers
// (estimate<Family>Work in dialects/nn/IR/NN<Family>.cpp); this file asks
// them and prices the counts. Flop counts follow the usual conventions: a
// multiply-add is 2 flops, comparisons and elementwise ops 1 per element.
// Byte counts assume each operand is read once and each result written once,
// which is what the runtime's kernels do for the sizes dpc handles.
//
//===----------------------------------------------------------------------===//

#include "passes/CostModel.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"

#include "mlir/IR/TypeUtilities.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::dpc;

double TargetRates::milliseconds(double flops, double bytes) const {
  return 1e3 * std::max(flops / flopsPerSecond, bytes / bytesPerSecond);
}

// Bytes read and written by the op itself.
static double ioBytes(Operation *op) {
  double bytes = 0;
  for (Value v : op->getOperands())
    bytes += nn::getSizeInBytes(v);
  for (Value v : op->getResults())
    bytes += nn::getSizeInBytes(v);
  return bytes;
}

FailureOr<std::optional<OpWork>> mlir::dpc::estimateWork(Operation *op) {
  if (!isa_and_nonnull<nn::NNDialect>(op->getDialect()))
    return std::optional<OpWork>();

  OpWork work;
  work.bytes = ioBytes(op);
  work.callMs = nn::kLoopCallMs;
  for (Value v : op->getResults())
    work.activationBytes += nn::getSizeInBytes(v);
  for (Value v : op->getOperands())
    if (v.getDefiningOp<nn::ParamOp>())
      work.parameterBytes += nn::getSizeInBytes(v);

  nn::CostRule rule = nn::CostRule::NotInFamily;
  for (nn::FamilyCostRule family : nn::kFamilyCostRules)
    if ((rule = family(op, work)) != nn::CostRule::NotInFamily)
      break;
  if (rule == nn::CostRule::NotInFamily)
    return op->emitOpError("has no cost rule: add its case to its family's "
                           "estimate<Family>Work in dialects/nn/IR "
                           "(OpWork.h)");
  if (rule == nn::CostRule::NoWork)
    return std::optional<OpWork>();
  // A forward op's gradient makes at most a kernel call per float operand
  // that is not a model input (those get no gradient).
  if (work.gradFlops > 0 || work.gradBytes > 0)
    for (Value v : op->getOperands())
      if (!isa<BlockArgument>(v) &&
          isa<FloatType>(getElementTypeOrSelf(v.getType())))
        work.gradCallMs += work.callMs;
  return std::optional<OpWork>(work);
}

double mlir::dpc::estimateMs(const OpWork &work, const TargetRates &rates,
                             bool gradient) {
  double bound =
      gradient ? rates.milliseconds(work.gradFlops * work.gradComputeScale,
                                    work.gradBytes)
               : rates.milliseconds(work.flops * work.computeScale, work.bytes);
  double loop = gradient ? work.gradLoopMs : work.loopMs;
  return std::max(bound, loop) + (gradient ? work.gradCallMs : work.callMs);
}

bool mlir::dpc::computesInBf16(Operation *op) {
  if (auto conv = dyn_cast<nn::Conv2dOp>(op))
    return conv.getAlgorithm() != "winograd";
  if (auto grad = dyn_cast<nn::Conv2dGradInputOp>(op))
    return grad.getAlgorithm() != "winograd";
  if (auto grad = dyn_cast<nn::Conv2dGradFilterOp>(op))
    return grad.getAlgorithm() != "winograd";
  return isa<nn::MatmulOp, nn::MatmulGradLhsOp, nn::MatmulGradRhsOp>(op);
}
