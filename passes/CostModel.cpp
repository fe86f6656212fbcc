//===- CostModel.cpp - Analytic cost of nn ops ----------------------------===//
//
// Flop counts follow the usual conventions: a multiply-add is 2 flops,
// comparisons and elementwise ops 1 per element. Byte counts assume each
// operand is read once and each result written once, which is what the
// runtime's kernels do for the sizes dpc handles.
//
//===----------------------------------------------------------------------===//

#include "passes/CostModel.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::dpc;

double TargetRates::milliseconds(double flops, double bytes) const {
  return 1e3 * std::max(flops / flopsPerSecond, bytes / bytesPerSecond);
}

static double elementsOf(Value value) {
  return nn::getNumElements(nn::shapeOf(value));
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

// How many times its flops' time a convolution writing `channels` channels
// takes: oneDNN computes them in whole blocks.
static double channelBlockShare(int64_t channels) {
  int64_t blocked = (channels + kConvChannelBlock - 1) / kConvChannelBlock *
                    kConvChannelBlock;
  return channels > 0 ? double(blocked) / double(channels) : 1.0;
}

// Whether `op`'s kernel is a oneDNN primitive or its sgemm, whose calls cost
// kOneDnnCallMs; the other kernels are the runtime's own loops.
static bool callsOneDnn(Operation *op) {
  return isa<nn::Conv2dOp, nn::Conv2dGradInputOp, nn::Conv2dGradFilterOp,
             nn::MatmulOp, nn::MatmulGradLhsOp, nn::MatmulGradRhsOp,
             nn::LayerNormOp, nn::LayerNormGradInputOp,
             nn::LayerNormGradScaleOp, nn::LstmOp, nn::LstmGradOp>(op);
}

// The direct kernel's multiply-adds a convolution's algorithm costs, as a
// share: Winograd's F(4x4, 3x3) took a median 0.49x the direct time over
// the layers select-conv-algorithm gives it on one thread (0.3-1.0x), 0.61x
// on two (docs/ARCHITECTURE.md).
static double convAlgorithmShare(StringRef algorithm) {
  return algorithm == "winograd" ? 0.5 : 1.0;
}

std::optional<OpWork> mlir::dpc::estimateWork(Operation *op) {
  // Parameter reads do no work and stay on their stage.
  if (!isa_and_nonnull<nn::NNDialect>(op->getDialect()) || isa<nn::ParamOp>(op))
    return std::nullopt;

  OpWork work;
  work.bytes = ioBytes(op);
  work.callMs = callsOneDnn(op) ? kOneDnnCallMs : kLoopCallMs;
  for (Value v : op->getResults())
    work.activationBytes += nn::getSizeInBytes(v);
  for (Value v : op->getOperands())
    if (v.getDefiningOp<nn::ParamOp>())
      work.parameterBytes += nn::getSizeInBytes(v);

  bool known = true;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](nn::Conv2dOp conv) {
        auto filter = cast<RankedTensorType>(conv.getFilter().getType());
        ArrayRef<int64_t> f = filter.getShape();
        // Each output element is a dot product over C/groups x KH x KW.
        double macs = elementsOf(conv.getResult()) * f[1] * f[2] * f[3] *
                      convAlgorithmShare(conv.getAlgorithm());
        work.flops =
            2 * macs + (conv.getBias() ? elementsOf(conv.getResult()) : 0);
        // Input and filter gradients are each as large as the forward.
        work.gradFlops =
            4 * macs + (conv.getBias() ? elementsOf(conv.getResult()) : 0);
        work.gradBytes = 2 * work.bytes;
        // The input gradient writes the input's channels, the filter
        // gradient the output's; each is half the gradients' flops. A model
        // input gets no gradient: both halves are priced as the filter's.
        work.computeScale = channelBlockShare(f[0]);
        work.gradComputeScale =
            isa<BlockArgument>(conv.getInput())
                ? work.computeScale
                : (channelBlockShare(nn::shapeOf(conv.getInput())[1]) +
                   work.computeScale) /
                      2;
      })
      .Case([&](nn::MatmulOp matmul) {
        auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
        int64_t k = matmul.getTransposeLhs() ? lhs.getShape().end()[-2]
                                             : lhs.getShape().back();
        double macs = elementsOf(matmul.getResult()) * k;
        work.flops = 2 * macs;
        work.gradFlops = 4 * macs;
        work.gradBytes = 2 * work.bytes;
      })
      .Case([&](nn::MaxPool2dOp pool) {
        ArrayRef<int64_t> kernel = pool.getKernelShape();
        double compares = elementsOf(pool.getResult()) * kernel[0] * kernel[1];
        work.flops = compares;
        work.gradFlops = compares;
        work.gradBytes = work.bytes + nn::getSizeInBytes(pool.getInput());
        // The gradient visits the same windows again.
        work.loopMs = compares * kMaxPoolWindowMs;
        work.gradLoopMs = work.loopMs;
      })
      .Case([&](nn::AvgPool2dOp pool) {
        ArrayRef<int64_t> kernel = pool.getKernelShape();
        double adds = elementsOf(pool.getResult()) * kernel[0] * kernel[1];
        work.flops = adds;
        work.gradFlops = adds;
        work.gradBytes = work.bytes;
      })
      .Case([&](nn::GlobalAvgPoolOp pool) {
        work.flops = elementsOf(pool.getInput());
        work.gradFlops = work.flops;
        work.gradBytes = work.bytes;
      })
      .Case([&](nn::BatchNormStatsOp stats) {
        // A sum and a sum of squares per element; no gradient of its own.
        work.flops = 2 * elementsOf(stats.getInput());
      })
      .Case([&](nn::BatchNormOp norm) {
        // Subtract, scale, shift. Backward: two reductions over dy and
        // dy * xhat, the input gradient's elementwise pass, and the scale
        // and bias sums, reading dy and the input more than once.
        double elements = elementsOf(norm.getInput());
        work.flops = 3 * elements;
        work.gradFlops = 9 * elements;
        work.gradBytes = 3 * work.bytes;
      })
      .Case([&](nn::LayerNormOp norm) {
        // Two passes for the row's moments, then normalize, scale and
        // shift. Backward: the input gradient recomputes the moments and
        // takes two sums before its elementwise pass; the scale gradient
        // recomputes them too; the bias gradient is a sum.
        double elements = elementsOf(norm.getInput());
        work.flops = 7 * elements;
        work.gradFlops = 18 * elements;
        work.gradBytes = 3 * work.bytes;
      })
      .Case([&](nn::LstmOp lstm) {
        // The input projection and the recurrence: T x B x 4H x (I + H)
        // multiply-adds, and ~30 flops per hidden unit and step for the
        // gates. Backward: the recurrence again in nn.lstm_grad, then the
        // input's, the weights' and the recurrence's products (three GEMMs
        // of the forward's sizes) and the bias sums.
        ArrayRef<int64_t> x = nn::shapeOf(lstm.getInput());
        double h = double(
            cast<RankedTensorType>(lstm.getInitialH().getType()).getDimSize(1));
        double cells = double(x[0]) * double(x[1]) * h;
        double macs = cells * 4 * (double(x[2]) + h);
        work.flops = 2 * macs + 30 * cells;
        work.gradFlops = 4 * macs + 2 * cells * 4 * h + 40 * cells;
        work.gradBytes = 3 * work.bytes;
      })
      .Case<nn::AddOp, nn::SubOp, nn::ReluOp>([&](Operation *) {
        work.flops = elementsOf(op->getResult(0));
        work.gradFlops = work.flops;
        work.gradBytes = work.bytes;
      })
      .Case<nn::MulOp, nn::DivOp>([&](Operation *) {
        // Backward: a product (and, for div, a quotient) per operand.
        work.flops = elementsOf(op->getResult(0));
        work.gradFlops = 3 * work.flops;
        work.gradBytes = 2 * work.bytes;
      })
      .Case([&](nn::UnaryFunctionOpInterface unary) {
        // Flops per element from the function's row of UnaryFunctions.def.
        // A gradient that reads a saved tensor moves three tensors where
        // the forward moves two.
        const ::dpc::runtime::UnaryFunctionInfo *info =
            ::dpc::runtime::lookupUnaryFunction(unary.getUnaryFunction());
        double elements = elementsOf(op->getResult(0));
        if (unary.isUnaryGradient()) {
          work.flops = info->gradFlops * elements;
          return;
        }
        work.flops = info->flops * elements;
        work.gradFlops = info->gradFlops * elements;
        bool saves = info->saved != ::dpc::runtime::UnarySaved::None;
        work.gradBytes = work.bytes * (saves ? 3 : 2) / 2;
      })
      .Case<nn::ConcatOp, nn::SliceOp, nn::PadOp, nn::ClipOp>([&](Operation *) {
        // A copy (or a compare) per result element; the gradient is the
        // adjoint copy (for a slice, also zeroing the rest of the input).
        work.flops = elementsOf(op->getResult(0));
        work.gradFlops = work.flops;
        work.gradBytes = work.bytes;
      })
      .Case([&](nn::GatherOp gather) {
        // A row copy per index; the gradient clears the table and adds the
        // rows back.
        work.flops = elementsOf(gather.getResult());
        work.gradFlops = work.flops + elementsOf(gather.getTable());
        work.gradBytes = work.bytes + nn::getSizeInBytes(gather.getTable());
      })
      .Case([&](nn::GatherGradOp grad) {
        work.flops =
            elementsOf(grad.getResultGrad()) + elementsOf(grad.getTableGrad());
      })
      .Case([&](nn::DropoutOp) {
        // Philox's ten rounds per four elements, and a multiply.
        work.flops = 8 * elementsOf(op->getResult(0));
        work.gradFlops = work.flops;
        work.gradBytes = work.bytes;
      })
      .Case([&](nn::DropoutGradOp) {
        work.flops = 8 * elementsOf(op->getResult(0));
      })
      .Case<nn::SliceGradOp, nn::ClipGradOp>(
          [&](Operation *) { work.flops = elementsOf(op->getResult(0)); })
      .Case<nn::CompareOp, nn::LogicalOp, nn::NotOp, nn::CastOp,
            nn::WhereGradOp>(
          [&](Operation *) { work.flops = elementsOf(op->getResult(0)); })
      .Case([&](nn::WhereOp where) {
        // A select per element; the gradient masks dy once per branch.
        work.flops = elementsOf(where.getResult());
        work.gradFlops = 2 * work.flops;
        work.gradBytes = 2 * work.bytes;
      })
      .Case<nn::SumToShapeOp, nn::BroadcastToOp, nn::TransposeOp>(
          [&](Operation *) {
            // One pass over the larger tensor; the gradient is the adjoint
            // pass (broadcast for a sum, the inverse permutation).
            work.flops = std::max(elementsOf(op->getOperand(0)),
                                  elementsOf(op->getResult(0)));
            work.gradFlops = work.flops;
            work.gradBytes = work.bytes;
          })
      .Case<nn::SoftmaxOp, nn::LogSoftmaxOp>([&](Operation *) {
        // max, exp, sum and a scale per element; the gradient is a sum of
        // products and an elementwise pass.
        work.flops = 5 * elementsOf(op->getResult(0));
        work.gradFlops = 4 * elementsOf(op->getResult(0));
        work.gradBytes = work.bytes * 3 / 2;
      })
      .Case<nn::SoftmaxGradOp, nn::LogSoftmaxGradOp>(
          [&](Operation *) { work.flops = 4 * elementsOf(op->getOperand(0)); })
      .Case([&](nn::ReshapeOp) {
        // A view: no kernel runs, forward or backward.
        work.bytes = 0;
        work.callMs = 0;
      })
      .Case([&](nn::SoftmaxCrossEntropyOp loss) {
        // max, exp, sum, log per row; the gradient is softmax minus one-hot.
        work.flops = 4 * elementsOf(loss.getLogits());
        work.gradFlops = 3 * elementsOf(loss.getLogits());
        work.gradBytes = 2 * nn::getSizeInBytes(loss.getLogits());
      })
      .Case([&](nn::MseLossOp loss) {
        // A difference, a square and a sum per element, reading both
        // tensors; the gradient is a scaled difference.
        work.flops = 3 * elementsOf(loss.getPrediction());
        work.gradFlops = 2 * elementsOf(loss.getPrediction());
        work.gradBytes = 3 * nn::getSizeInBytes(loss.getPrediction());
      })
      .Case([&](nn::MseLossGradOp grad) {
        work.flops = 2 * elementsOf(grad.getPrediction());
      })
      .Case<nn::Conv2dGradInputOp, nn::Conv2dGradFilterOp>([&](Operation *) {
        // The same multiply-adds as the forward convolution.
        Value grad = op->getOperand(0);
        auto filterType = cast<RankedTensorType>(
            isa<nn::Conv2dGradInputOp>(op) ? op->getOperand(1).getType()
                                           : op->getResult(0).getType());
        ArrayRef<int64_t> f = filterType.getShape();
        // The channels the kernel writes: the input's, or the filter's
        // output channels.
        work.computeScale = channelBlockShare(
            isa<nn::Conv2dGradInputOp>(op) ? nn::shapeOf(op->getResult(0))[1]
                                           : f[0]);
        work.flops = 2 * elementsOf(grad) * f[1] * f[2] * f[3] *
                     convAlgorithmShare(
                         isa<nn::Conv2dGradInputOp>(op)
                             ? cast<nn::Conv2dGradInputOp>(op).getAlgorithm()
                             : cast<nn::Conv2dGradFilterOp>(op).getAlgorithm());
      })
      .Case<nn::MatmulGradLhsOp, nn::MatmulGradRhsOp>([&](Operation *) {
        // result_grad (.. M x N) contracted with an operand over N or M:
        // the forward's multiply-adds, M x N x K.
        Value grad = op->getOperand(0);
        Value operand = op->getOperand(1);
        auto shape = nn::shapeOf(operand);
        auto gradShape = nn::shapeOf(grad);
        // The operand's dimension that is neither M nor N is K.
        int64_t k =
            isa<nn::MatmulGradLhsOp>(op)
                ? nn::getNumElements(shape.take_back(2)) / gradShape.back()
                : nn::getNumElements(shape.take_back(2)) / gradShape.end()[-2];
        work.flops = 2 * elementsOf(grad) * k;
      })
      .Case([&](nn::LstmGradOp grad) {
        // dh[t-1] = z_grad[t] r per step, and the gate derivatives.
        ArrayRef<int64_t> states = nn::shapeOf(grad.getStates());
        double h = double(states[2] / 6);
        double cells = double(states[0]) * double(states[1]) * h;
        work.flops = 2 * cells * 4 * h + 40 * cells;
      })
      .Case([&](nn::LayerNormGradInputOp) {
        work.flops = 11 * elementsOf(op->getOperand(0));
      })
      .Case([&](nn::LayerNormGradScaleOp) {
        work.flops = 6 * elementsOf(op->getOperand(0));
      })
      .Case<nn::BatchNormGradInputOp, nn::BatchNormGradScaleOp>(
          [&](Operation *) { work.flops = 4 * elementsOf(op->getOperand(0)); })
      .Case([&](nn::MaxPool2dGradOp grad) {
        work.flops = elementsOf(grad.getResultGrad());
        ArrayRef<int64_t> kernel = grad.getKernelShape();
        work.loopMs = work.flops * kernel[0] * kernel[1] * kMaxPoolWindowMs;
      })
      .Case<nn::Conv2dGradBiasOp, nn::ReluGradOp, nn::SoftmaxCrossEntropyGradOp,
            nn::AvgPool2dGradOp, nn::GlobalAvgPoolGradOp,
            nn::BatchNormGradBiasOp>(
          [&](Operation *) { work.flops = elementsOf(op->getOperand(0)); })
      .Case([&](nn::SgdUpdateOp update) {
        // Weight decay, momentum and the step: a few flops per element,
        // reading param, grad and the momentum buffer, writing two.
        work.flops = 4 * elementsOf(update.getParam());
        work.bytes = 5 * nn::getSizeInBytes(update.getParam());
      })
      .Case([&](nn::AdamUpdateOp update) {
        // Both moments, the bias corrections, a square root and a division
        // per element; param, grad and two moments read, three written.
        work.flops = 12 * elementsOf(update.getParam());
        work.bytes = 7 * nn::getSizeInBytes(update.getParam());
      })
      .Default([&](Operation *) { known = false; });
  if (!known)
    return std::nullopt;
  // A forward op's gradient makes at most a kernel call per float operand
  // that is not a model input (those get no gradient).
  if (work.gradFlops > 0 || work.gradBytes > 0)
    for (Value v : op->getOperands())
      if (!isa<BlockArgument>(v) &&
          isa<FloatType>(getElementTypeOrSelf(v.getType())))
        work.gradCallMs += work.callMs;
  return work;
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
