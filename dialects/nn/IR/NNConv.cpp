//===- NNConv.cpp - nn convolutions and matmul ----------------------------===//
//
// Verifiers and gradient rules of the ops of NNConv.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dpc::nn;

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// Checks `algorithm` against what the convolution is: Winograd needs
/// winogradFits' attributes and f32, what the CPU backend's Winograd kernels
/// compute right.
template <typename ConvOp>
static LogicalResult verifyConvAlgorithm(ConvOp op, ArrayRef<int64_t> filter,
                                         Type elementType) {
  StringRef algorithm = op.getAlgorithm();
  if (algorithm == "direct")
    return success();
  if (algorithm != "winograd")
    return op.emitOpError("expects algorithm 'direct' or 'winograd', got '")
           << algorithm << "'";
  ArrayRef<int64_t> pads = op.getPads();
  if (!winogradFits(filter, op.getStrides(), pads, op.getDilations(),
                    op.getGroups()))
    return op.emitOpError("winograd needs a 3x3 filter, strides and "
                          "dilations of 1, one group and pads all 0 or all "
                          "1, got filter ")
           << formatShape(filter) << ", strides "
           << formatShape(op.getStrides()) << ", dilations "
           << formatShape(op.getDilations()) << ", groups " << op.getGroups()
           << ", pads " << formatShape(pads);
  if (!elementType.isF32())
    return op.emitOpError("winograd needs f32, got ") << elementType;
  return success();
}

/// The result shape of a convolution of `spatial` dimensions of `input` by
/// `filter` with `op`'s attributes, and its algorithm checked (conv2d's ops
/// have one, conv3d's do not).
template <size_t spatial, typename ConvOp>
static FailureOr<Shape> inferConvFrom(ConvOp op, ArrayRef<int64_t> input,
                                      ArrayRef<int64_t> filter) {
  FailureOr<Shape> shape = inferConvShape(
      spatial, input, filter, op.getStrides(), op.getPads(), op.getDilations(),
      op.getGroups(), [&] { return op.emitOpError(); });
  if (failed(shape))
    return failure();
  if constexpr (spatial == 2)
    if (failed(
            verifyConvAlgorithm(op, filter, elementTypeOf(op->getResult(0)))))
      return failure();
  return shape;
}

template <size_t spatial, typename ConvOp>
static FailureOr<RankedTensorType> inferConvResultType(ConvOp op) {
  return inferredType(inferConvFrom<spatial>(op, shapeOf(op.getInput()),
                                             shapeOf(op.getFilter())),
                      elementTypeOf(op.getInput()));
}

/// The result gradient of a convolution has the shape of the convolution of
/// the input gradient's shape by the filter.
template <size_t spatial, typename GradOp>
static LogicalResult verifyConvGradInput(GradOp op) {
  return expectForwardResultGrad(
      op,
      inferConvFrom<spatial>(op, shapeOf(op.getInputGrad()),
                             shapeOf(op.getFilter())),
      op.getResultGrad(), elementTypeOf(op.getInputGrad()));
}

/// The same with the input by the filter gradient's shape.
template <size_t spatial, typename GradOp>
static LogicalResult verifyConvGradFilter(GradOp op) {
  return expectForwardResultGrad(
      op,
      inferConvFrom<spatial>(op, shapeOf(op.getInput()),
                             shapeOf(op.getFilterGrad())),
      op.getResultGrad(), elementTypeOf(op.getFilterGrad()));
}

/// The filter and the bias (one per result channel) of a forward
/// convolution or transposed convolution have the input's element type.
template <typename ConvOp> static LogicalResult verifyFilterAndBias(ConvOp op) {
  Type elementType = elementTypeOf(op.getInput());
  if (failed(expectType(op, "filter", op.getFilter(), shapeOf(op.getFilter()),
                        elementType)))
    return failure();
  if (!op.getBias())
    return success();
  return expectType(op, "bias", op.getBias(), {shapeOf(op.getResult())[1]},
                    elementType);
}

FailureOr<RankedTensorType> Conv2dOp::inferResultType() {
  return inferConvResultType<2>(*this);
}

LogicalResult Conv2dOp::verify() { return verifyFilterAndBias(*this); }

LogicalResult Conv2dGradInputOp::verify() {
  return verifyConvGradInput<2>(*this);
}

LogicalResult Conv2dGradFilterOp::verify() {
  return verifyConvGradFilter<2>(*this);
}

LogicalResult Conv2dGradBiasOp::verify() {
  ArrayRef<int64_t> grad = shapeOf(getResultGrad());
  if (grad.size() != 4 && grad.size() != 5)
    return emitOpError("expects a rank-4 NCHW or rank-5 NCDHW result_grad, "
                       "got ")
           << formatShape(grad);
  return expectType(*this, "bias_grad", getBiasGrad(), {grad[1]},
                    elementTypeOf(getResultGrad()));
}

template <typename ConvOp>
static FailureOr<Shape> inferTransposedFrom(ConvOp op, size_t spatial) {
  return inferConvTransposeShape(
      spatial, shapeOf(op.getInput()), shapeOf(op.getFilter()), op.getStrides(),
      op.getPads(), op.getDilations(), op.getOutputPadding(), op.getGroups(),
      [&] { return op.emitOpError(); });
}

FailureOr<RankedTensorType> ConvTranspose2dOp::inferResultType() {
  return inferredType(inferTransposedFrom(*this, 2), elementTypeOf(getInput()));
}

LogicalResult ConvTranspose2dOp::verify() { return verifyFilterAndBias(*this); }

FailureOr<RankedTensorType> Conv3dOp::inferResultType() {
  return inferConvResultType<3>(*this);
}

LogicalResult Conv3dOp::verify() { return verifyFilterAndBias(*this); }

LogicalResult Conv3dGradInputOp::verify() {
  return verifyConvGradInput<3>(*this);
}

LogicalResult Conv3dGradFilterOp::verify() {
  return verifyConvGradFilter<3>(*this);
}

FailureOr<RankedTensorType> ConvTranspose3dOp::inferResultType() {
  return inferredType(inferTransposedFrom(*this, 3), elementTypeOf(getInput()));
}

LogicalResult ConvTranspose3dOp::verify() { return verifyFilterAndBias(*this); }

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

template <typename MatmulOp>
static FailureOr<Shape> inferMatmulFrom(MatmulOp op, ArrayRef<int64_t> lhs,
                                        ArrayRef<int64_t> rhs) {
  return inferMatmulShape(lhs, rhs, op.getTransposeLhs(), op.getTransposeRhs(),
                          [&] { return op.emitOpError(); });
}

FailureOr<RankedTensorType> MatmulOp::inferResultType() {
  return inferredType(
      inferMatmulFrom(*this, shapeOf(getLhs()), shapeOf(getRhs())),
      elementTypeOf(getLhs()));
}

LogicalResult MatmulOp::verify() { return expectRhsLikeLhs(*this); }

// A transpose of the last two dimensions that keeps the others in place:
// what a matmul's transpose flag does to its operand.
static bool swapsLastTwo(TransposeOp transpose) {
  ArrayRef<int64_t> perm = transpose.getPerm();
  size_t rank = perm.size();
  if (rank < 2)
    return false;
  for (size_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != static_cast<int64_t>(d))
      return false;
  return perm[rank - 2] == static_cast<int64_t>(rank - 1) &&
         perm[rank - 1] == static_cast<int64_t>(rank - 2);
}

LogicalResult MatmulOp::canonicalize(MatmulOp op, PatternRewriter &rewriter) {
  auto lhs = op.getLhs().getDefiningOp<TransposeOp>();
  auto rhs = op.getRhs().getDefiningOp<TransposeOp>();
  bool foldLhs = lhs && swapsLastTwo(lhs);
  bool foldRhs = rhs && swapsLastTwo(rhs);
  if (!foldLhs && !foldRhs)
    return failure();
  rewriter.modifyOpInPlace(op, [&] {
    if (foldLhs) {
      op.getLhsMutable().assign(lhs.getInput());
      op.setTransposeLhs(!op.getTransposeLhs());
    }
    if (foldRhs) {
      op.getRhsMutable().assign(rhs.getInput());
      op.setTransposeRhs(!op.getTransposeRhs());
    }
  });
  return success();
}

LogicalResult MatmulGradLhsOp::verify() {
  return expectForwardResultGrad(
      *this, inferMatmulFrom(*this, shapeOf(getLhsGrad()), shapeOf(getRhs())),
      getResultGrad(), elementTypeOf(getLhsGrad()));
}

LogicalResult MatmulGradRhsOp::verify() {
  return expectForwardResultGrad(
      *this, inferMatmulFrom(*this, shapeOf(getLhs()), shapeOf(getRhsGrad())),
      getResultGrad(), elementTypeOf(getRhsGrad()));
}

/// The gradients of a convolution: `InputGradOp` and `FilterGradOp` of the
/// result gradient, with the convolution's window attributes and then
/// `algorithm` where the ops have one (conv3d's do not), and the bias
/// gradient.
template <typename InputGradOp, typename FilterGradOp, typename ConvOp,
          typename... Algorithm>
static void
buildConvGradients(ConvOp conv, OpBuilder &b, Value dy, ArrayRef<bool> needed,
                   SmallVectorImpl<Value> &grads, Algorithm... algorithm) {
  resetGrads(conv, grads);
  Location loc = conv.getLoc();
  if (needed[0])
    grads[0] = b.create<InputGradOp>(
        loc, conv.getInput().getType(), dy, conv.getFilter(),
        conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
        conv.getGroupsAttr(), algorithm...);
  if (needed[1])
    grads[1] = b.create<FilterGradOp>(
        loc, conv.getFilter().getType(), dy, conv.getInput(),
        conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
        conv.getGroupsAttr(), algorithm...);
  if (conv.getBias() && needed[2])
    grads[2] = b.create<Conv2dGradBiasOp>(loc, conv.getBias().getType(), dy);
}

void Conv2dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  buildConvGradients<Conv2dGradInputOp, Conv2dGradFilterOp>(
      *this, b, resultGrads[0], needed, grads, getAlgorithmAttr());
}

void Conv3dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  buildConvGradients<Conv3dGradInputOp, Conv3dGradFilterOp>(
      *this, b, resultGrads[0], needed, grads);
}

// A transposed convolution is the input gradient of the `ForwardOp` it
// transposes (by the same filter and attributes, for a forward convolution
// whose input has its result's shape), so its gradients are that
// convolution's forward and filter gradient, by the direct algorithm where
// the ops have one.
template <typename ForwardOp, typename FilterGradOp, typename ConvOp,
          typename... Algorithm>
static void buildTransposedGradients(ConvOp conv, OpBuilder &b, Value dy,
                                     ArrayRef<bool> needed,
                                     SmallVectorImpl<Value> &grads,
                                     Algorithm... algorithm) {
  resetGrads(conv, grads);
  Location loc = conv.getLoc();
  if (needed[0])
    grads[0] = b.create<ForwardOp>(
        loc, conv.getInput().getType(), dy, conv.getFilter(), Value(),
        conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
        conv.getGroupsAttr(), algorithm...);
  if (needed[1])
    grads[1] = b.create<FilterGradOp>(
        loc, conv.getFilter().getType(), conv.getInput(), dy,
        conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
        conv.getGroupsAttr(), algorithm...);
  if (conv.getBias() && needed[2])
    grads[2] = b.create<Conv2dGradBiasOp>(loc, conv.getBias().getType(), dy);
}

void ConvTranspose2dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       ArrayRef<bool> needed,
                                       SmallVectorImpl<Value> &grads) {
  buildTransposedGradients<Conv2dOp, Conv2dGradFilterOp>(
      *this, b, resultGrads[0], needed, grads, b.getStringAttr("direct"));
}

void ConvTranspose3dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       ArrayRef<bool> needed,
                                       SmallVectorImpl<Value> &grads) {
  buildTransposedGradients<Conv3dOp, Conv3dGradFilterOp>(
      *this, b, resultGrads[0], needed, grads);
}

void MatmulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = resultGrads[0];
  if (needed[0])
    grads[0] =
        b.create<MatmulGradLhsOp>(getLoc(), getLhs().getType(), dy, getRhs(),
                                  getTransposeLhsAttr(), getTransposeRhsAttr());
  if (needed[1])
    grads[1] =
        b.create<MatmulGradRhsOp>(getLoc(), getRhs().getType(), dy, getLhs(),
                                  getTransposeLhsAttr(), getTransposeRhsAttr());
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

// How many times its flops' time a convolution writing `channels` channels
// takes: oneDNN computes them in whole blocks.
static double channelBlockShare(int64_t channels) {
  int64_t blocked = (channels + kConvChannelBlock - 1) / kConvChannelBlock *
                    kConvChannelBlock;
  return channels > 0 ? double(blocked) / double(channels) : 1.0;
}

// The direct kernel's multiply-adds a convolution's algorithm costs, as a
// share: Winograd's F(4x4, 3x3) took a median 0.49x the direct time over
// the layers select-conv-algorithm gives it on one thread (0.3-1.0x), 0.61x
// on two (docs/ARCHITECTURE.md).
static double convAlgorithmShare(StringRef algorithm) {
  return algorithm == "winograd" ? 0.5 : 1.0;
}

static void estimateConv2d(Conv2dOp conv, OpWork &work) {
  auto filter = cast<RankedTensorType>(conv.getFilter().getType());
  ArrayRef<int64_t> f = filter.getShape();
  // Each output element is a dot product over C/groups x KH x KW.
  double macs = elementsOf(conv.getResult()) * f[1] * f[2] * f[3] *
                convAlgorithmShare(conv.getAlgorithm());
  work.flops = 2 * macs + (conv.getBias() ? elementsOf(conv.getResult()) : 0);
  work.callMs = kOneDnnCallMs;
  // Input and filter gradients are each as large as the forward.
  work.gradFlops =
      4 * macs + (conv.getBias() ? elementsOf(conv.getResult()) : 0);
  work.gradBytes = 2 * work.bytes;
  // The input gradient writes the input's channels, the filter gradient the
  // output's; each is half the gradients' flops. A model input gets no
  // gradient: both halves are priced as the filter's.
  work.computeScale = channelBlockShare(f[0]);
  work.gradComputeScale =
      isa<BlockArgument>(conv.getInput())
          ? work.computeScale
          : (channelBlockShare(shapeOf(conv.getInput())[1]) +
             work.computeScale) /
                2;
}

// The input gradient of the conv2d it is the transpose of: each input
// element meets Cout/groups x KH x KW filter taps.
static void estimateConvTranspose2d(ConvTranspose2dOp conv, OpWork &work) {
  ArrayRef<int64_t> f = shapeOf(conv.getFilter());
  double macs = elementsOf(conv.getInput()) * f[1] * f[2] * f[3];
  double bias = conv.getBias() ? elementsOf(conv.getResult()) : 0;
  work.flops = 2 * macs + bias;
  work.callMs = kOneDnnCallMs;
  // A conv2d for the input's gradient and a filter gradient, each as large
  // as the forward.
  work.gradFlops = 4 * macs + bias;
  work.gradBytes = 2 * work.bytes;
  work.computeScale = channelBlockShare(shapeOf(conv.getResult())[1]);
  work.gradComputeScale = (channelBlockShare(f[0]) +
                           channelBlockShare(shapeOf(conv.getResult())[1])) /
                          2;
}

// A 3-D convolution (or its transpose, whose multiply-adds are counted per
// input element): each of `elements` meets the filter's taps but one
// dimension (C/groups x KD x KH x KW, or Cout/groups x ...). oneDNN has no
// Winograd for it and keeps its channel blocks.
static void estimateConv3d(double elements, Value filter, Value result,
                           bool bias, OpWork &work) {
  ArrayRef<int64_t> f = shapeOf(filter);
  double macs = elements * double(getNumElements(f.drop_front()));
  double biasFlops = bias ? elementsOf(result) : 0;
  work.flops = 2 * macs + biasFlops;
  work.callMs = kOneDnnCallMs;
  work.gradFlops = 4 * macs + biasFlops;
  work.gradBytes = 2 * work.bytes;
  work.computeScale = channelBlockShare(shapeOf(result)[1]);
  work.gradComputeScale = work.computeScale;
}

CostRule mlir::dpc::nn::estimateConvWork(Operation *op, OpWork &work) {
  CostRule rule = CostRule::Counted;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](Conv2dOp conv) { estimateConv2d(conv, work); })
      .Case(
          [&](ConvTranspose2dOp conv) { estimateConvTranspose2d(conv, work); })
      .Case([&](Conv3dOp conv) {
        estimateConv3d(elementsOf(conv.getResult()), conv.getFilter(),
                       conv.getResult(), bool(conv.getBias()), work);
      })
      .Case([&](ConvTranspose3dOp conv) {
        estimateConv3d(elementsOf(conv.getInput()), conv.getFilter(),
                       conv.getResult(), bool(conv.getBias()), work);
      })
      .Case<Conv3dGradInputOp, Conv3dGradFilterOp>([&](Operation *) {
        // The forward's multiply-adds: each result_grad element meets
        // C/groups x KD x KH x KW taps.
        Value filter =
            isa<Conv3dGradInputOp>(op) ? op->getOperand(1) : op->getResult(0);
        work.flops = 2 * elementsOf(op->getOperand(0)) *
                     double(getNumElements(shapeOf(filter).drop_front()));
        work.callMs = kOneDnnCallMs;
      })
      .Case([&](MatmulOp matmul) {
        auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
        int64_t k = matmul.getTransposeLhs() ? lhs.getShape().end()[-2]
                                             : lhs.getShape().back();
        double macs = elementsOf(matmul.getResult()) * k;
        work.flops = 2 * macs;
        work.callMs = kOneDnnCallMs;
        work.gradFlops = 4 * macs;
        work.gradBytes = 2 * work.bytes;
      })
      .Case<Conv2dGradInputOp, Conv2dGradFilterOp>([&](Operation *) {
        // The same multiply-adds as the forward convolution.
        work.callMs = kOneDnnCallMs;
        Value grad = op->getOperand(0);
        auto filterType = cast<RankedTensorType>(
            isa<Conv2dGradInputOp>(op) ? op->getOperand(1).getType()
                                       : op->getResult(0).getType());
        ArrayRef<int64_t> f = filterType.getShape();
        // The channels the kernel writes: the input's, or the filter's
        // output channels.
        work.computeScale = channelBlockShare(
            isa<Conv2dGradInputOp>(op) ? shapeOf(op->getResult(0))[1] : f[0]);
        work.flops = 2 * elementsOf(grad) * f[1] * f[2] * f[3] *
                     convAlgorithmShare(
                         isa<Conv2dGradInputOp>(op)
                             ? cast<Conv2dGradInputOp>(op).getAlgorithm()
                             : cast<Conv2dGradFilterOp>(op).getAlgorithm());
      })
      .Case<MatmulGradLhsOp, MatmulGradRhsOp>([&](Operation *) {
        // result_grad (.. M x N) contracted with an operand over N or M:
        // the forward's multiply-adds, M x N x K.
        Value grad = op->getOperand(0);
        Value operand = op->getOperand(1);
        auto shape = shapeOf(operand);
        auto gradShape = shapeOf(grad);
        // The operand's dimension that is neither M nor N is K.
        int64_t k =
            isa<MatmulGradLhsOp>(op)
                ? getNumElements(shape.take_back(2)) / gradShape.back()
                : getNumElements(shape.take_back(2)) / gradShape.end()[-2];
        work.flops = 2 * elementsOf(grad) * k;
        work.callMs = kOneDnnCallMs;
      })
      .Case(
          [&](Conv2dGradBiasOp) { work.flops = elementsOf(op->getOperand(0)); })
      .Default([&](Operation *) { rule = CostRule::NotInFamily; });
  return rule;
}
