//===- NN.cpp - ONNX neural-network ops to nn -----------------------------===//
//
// The handlers of ONNX's neural-network ops, as onnx-mlir's NN/ folder
// groups them: Conv, MaxPool, AveragePool and GlobalAveragePool (with the
// windows and auto_pad they share), BatchNormalization, LayerNormalization,
// InstanceNormalization (and with it torch's GroupNorm), LRN, Softmax and
// LogSoftmax, and Dropout; and their rows of the handler table.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::onnx_frontend::detail;
using mlir::dpc::nn::shapeOf;

namespace {
// The window of MaxPool and AveragePool and the result shape it gives.
struct PoolWindow {
  std::vector<int64_t> kernel, strides, pads;
  bool ceilMode = false;
  nn::Shape resultShape;
};
} // namespace

// Resolves auto_pad into explicit pads, ONNX's [begin..., end...] over the
// spatial dimensions of `input` (N C D1..Dk, k = kernel.size()).
static FailureOr<std::vector<int64_t>>
windowPads(Importer &im, const onnx::NodeProto &node, ArrayRef<int64_t> input,
           ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
           ArrayRef<int64_t> dilations) {
  size_t k = kernel.size();
  std::string autoPad = im.getString(node, "auto_pad", "NOTSET");
  if (autoPad == "NOTSET")
    return im.getInts(node, "pads", std::vector<int64_t>(2 * k, 0));
  if (autoPad == "VALID")
    return std::vector<int64_t>(2 * k, 0);
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return im.nodeError(node) << "unknown auto_pad '" << autoPad << "'";
  if (strides.size() != k || dilations.size() != k || input.size() != k + 2)
    return im.nodeError(node)
           << "expects " << k << " strides and dilations on a rank-" << k + 2
           << " input";
  std::vector<int64_t> pads(2 * k);
  for (size_t i = 0; i < k; ++i) {
    int64_t in = input[2 + i];
    int64_t out = (in + strides[i] - 1) / strides[i];
    int64_t total = std::max<int64_t>(
        (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in, 0);
    int64_t small = total / 2, large = total - small;
    pads[i] = autoPad == "SAME_UPPER" ? small : large;
    pads[k + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

namespace {
// The operands and attributes of a Conv or ConvTranspose node, with the
// spatial attributes of a 1-D one lifted to 2-D (a height of 1, stride and
// dilation 1, no pads there): dpc computes 1-D convolutions as 2-D ones,
// which gives the same sums in the same order.
struct ConvNode {
  Value input, filter, bias;
  size_t spatial = 0; // the node's own spatial rank, 1 to 3
  std::vector<int64_t> kernel, strides, dilations, pads;
  int64_t groups = 1;
};
} // namespace

static Type elementOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

// A rank-3 tensor as rank 4 with a height of 1 (the identity on rank 4).
static Value liftTo2d(Importer &im, const onnx::NodeProto &node, Value value) {
  ArrayRef<int64_t> shape = shapeOf(value);
  if (shape.size() != 3)
    return value;
  nn::Shape lifted = {shape[0], shape[1], 1, shape[2]};
  return im.builder.create<nn::ReshapeOp>(
      im.locOf(node), im.tensorType(lifted, elementOf(value)), value);
}

// Reads the operands, kernel_shape, strides, dilations and group of a Conv
// or ConvTranspose (`what`: the filter's dimensions, for the messages).
static FailureOr<ConvNode>
readConvNode(Importer &im, const onnx::NodeProto &node, StringRef what) {
  ConvNode c;
  FailureOr<Value> input = im.getValue(node, 0);
  FailureOr<Value> filter =
      failed(input) ? FailureOr<Value>(failure()) : im.getValue(node, 1);
  if (failed(filter))
    return failure();
  c.input = *input;
  c.filter = *filter;
  ArrayRef<int64_t> inShape = shapeOf(c.input), wShape = shapeOf(c.filter);
  if (inShape.size() < 3 || inShape.size() > 5)
    return im.nodeError(node) << "only 1-D, 2-D and 3-D convolutions (rank-3 "
                                 "to rank-5 input) are supported, got input "
                                 "of shape "
                              << nn::formatShape(inShape);
  if (wShape.size() != inShape.size())
    return im.nodeError(node)
           << "expects a rank-" << inShape.size() << " filter (" << what
           << "), got '" << node.input(1) << "' of shape "
           << nn::formatShape(wShape);
  c.spatial = inShape.size() - 2;
  std::vector<int64_t> ones(c.spatial, 1);
  c.kernel =
      im.getInts(node, "kernel_shape", {wShape.begin() + 2, wShape.end()});
  if (ArrayRef<int64_t>(c.kernel) != wShape.drop_front(2))
    return im.nodeError(node) << "kernel_shape does not match the filter shape "
                              << nn::formatShape(wShape);
  c.strides = im.getInts(node, "strides", ones);
  c.dilations = im.getInts(node, "dilations", ones);
  if (c.strides.size() != c.spatial || c.dilations.size() != c.spatial)
    return im.nodeError(node) << "expects " << c.spatial
                              << " strides and dilations, one per spatial "
                                 "dimension";
  c.groups = im.getInt(node, "group", 1);
  if (im.hasInput(node, 2)) {
    FailureOr<Value> b = im.getValue(node, 2);
    if (failed(b))
      return failure();
    c.bias = *b;
  }
  return c;
}

// Lifts a 1-D node's operands and attributes (pads already resolved) to
// 2-D; `lifted` values get a leading 1 (strides, dilations) or 0 (output
// padding).
static void liftConvNode(Importer &im, const onnx::NodeProto &node, ConvNode &c,
                         std::vector<int64_t> *zeroPadded = nullptr) {
  if (c.spatial != 1)
    return;
  c.input = liftTo2d(im, node, c.input);
  c.filter = liftTo2d(im, node, c.filter);
  c.strides.insert(c.strides.begin(), 1);
  c.dilations.insert(c.dilations.begin(), 1);
  c.pads = {0, c.pads[0], 0, c.pads[1]};
  if (zeroPadded)
    zeroPadded->insert(zeroPadded->begin(), 0);
}

// The result of a lifted 2-D op back at the node's rank.
static Value lowerFrom2d(Importer &im, const onnx::NodeProto &node,
                         const ConvNode &c, Value result) {
  if (c.spatial != 1)
    return result;
  ArrayRef<int64_t> shape = shapeOf(result);
  return im.builder.create<nn::ReshapeOp>(
      im.locOf(node),
      im.tensorType({shape[0], shape[1], shape[3]}, elementOf(result)), result);
}

static LogicalResult importConv(Importer &im, const onnx::NodeProto &node) {
  FailureOr<ConvNode> c = readConvNode(
      im, node, "output channels, input channels / groups, spatial sizes");
  if (failed(c))
    return failure();
  FailureOr<std::vector<int64_t>> pads = windowPads(
      im, node, shapeOf(c->input), c->kernel, c->strides, c->dilations);
  if (failed(pads))
    return failure();
  if (pads->size() != 2 * c->spatial)
    return im.nodeError(node) << "expects " << 2 * c->spatial << " pads";
  c->pads = std::move(*pads);
  liftConvNode(im, node, *c);
  size_t spatial = shapeOf(c->input).size() - 2;
  FailureOr<nn::Shape> shape = nn::inferConvShape(
      spatial, shapeOf(c->input), shapeOf(c->filter), c->strides, c->pads,
      c->dilations, c->groups, [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = im.tensorType(*shape, elementOf(c->input));
  if (spatial == 3)
    return im.define(node,
                     im.builder.create<nn::Conv3dOp>(
                         im.locOf(node), type, c->input, c->filter, c->bias,
                         im.builder.getDenseI64ArrayAttr(c->strides),
                         im.builder.getDenseI64ArrayAttr(c->pads),
                         im.builder.getDenseI64ArrayAttr(c->dilations),
                         im.builder.getI64IntegerAttr(c->groups)));
  Value result = im.builder.create<nn::Conv2dOp>(
      im.locOf(node), type, c->input, c->filter, c->bias,
      im.builder.getDenseI64ArrayAttr(c->strides),
      im.builder.getDenseI64ArrayAttr(c->pads),
      im.builder.getDenseI64ArrayAttr(c->dilations),
      im.builder.getI64IntegerAttr(c->groups),
      im.builder.getStringAttr("direct"));
  return im.define(node, lowerFrom2d(im, node, *c, result));
}

static int64_t floorDiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// ConvTranspose's pads and output padding, as ONNX defines them: the pads
// attribute, or, with output_shape or a SAME auto_pad (output = input x
// stride), the total padding that gives that output split begin/end (the
// larger half at the end for SAME_UPPER, at the begin otherwise). A
// negative end pad (an output_shape past the natural size) is more output
// padding; a negative begin pad is refused.
static LogicalResult convTransposePads(Importer &im,
                                       const onnx::NodeProto &node, ConvNode &c,
                                       std::vector<int64_t> &outputPadding) {
  size_t k = c.spatial;
  ArrayRef<int64_t> in = shapeOf(c.input);
  std::string autoPad = im.getString(node, "auto_pad", "NOTSET");
  std::vector<int64_t> outputShape = im.getInts(node, "output_shape", {});
  if (outputShape.size() == k + 2)
    outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  if (!outputShape.empty() && outputShape.size() != k)
    return im.nodeError(node)
           << "expects an output_shape of " << k << " spatial sizes";
  if (outputShape.empty() &&
      (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER"))
    for (size_t i = 0; i < k; ++i)
      outputShape.push_back(in[2 + i] * c.strides[i]);
  if (outputShape.empty()) {
    if (autoPad != "NOTSET" && autoPad != "VALID")
      return im.nodeError(node) << "unknown auto_pad '" << autoPad << "'";
    c.pads = autoPad == "VALID"
                 ? std::vector<int64_t>(2 * k, 0)
                 : im.getInts(node, "pads", std::vector<int64_t>(2 * k, 0));
    if (c.pads.size() != 2 * k)
      return im.nodeError(node) << "expects " << 2 * k << " pads";
    return success();
  }
  c.pads.assign(2 * k, 0);
  for (size_t i = 0; i < k; ++i) {
    int64_t total = c.strides[i] * (in[2 + i] - 1) + outputPadding[i] +
                    (c.kernel[i] - 1) * c.dilations[i] + 1 - outputShape[i];
    int64_t half = floorDiv2(total);
    int64_t begin = autoPad == "SAME_UPPER" ? half : total - half;
    int64_t end = total - begin;
    if (begin < 0)
      return im.nodeError(node)
             << "output_shape " << nn::formatShape(outputShape)
             << " would need a negative begin pad, which is not supported";
    if (end < 0) {
      outputPadding[i] -= end;
      end = 0;
    }
    c.pads[i] = begin;
    c.pads[k + i] = end;
  }
  return success();
}

static LogicalResult importConvTranspose(Importer &im,
                                         const onnx::NodeProto &node) {
  FailureOr<ConvNode> c = readConvNode(
      im, node, "input channels, output channels / groups, spatial sizes");
  if (failed(c))
    return failure();
  std::vector<int64_t> outputPadding =
      im.getInts(node, "output_padding", std::vector<int64_t>(c->spatial, 0));
  if (outputPadding.size() != c->spatial)
    return im.nodeError(node)
           << "expects " << c->spatial << " output_padding values";
  if (failed(convTransposePads(im, node, *c, outputPadding)))
    return failure();
  liftConvNode(im, node, *c, &outputPadding);
  size_t spatial = shapeOf(c->input).size() - 2;
  FailureOr<nn::Shape> shape = nn::inferConvTransposeShape(
      spatial, shapeOf(c->input), shapeOf(c->filter), c->strides, c->pads,
      c->dilations, outputPadding, c->groups,
      [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  if (spatial == 3)
    return im.define(node, im.builder.create<nn::ConvTranspose3dOp>(
                               im.locOf(node),
                               im.tensorType(*shape, elementOf(c->input)),
                               c->input, c->filter, c->bias,
                               im.builder.getDenseI64ArrayAttr(c->strides),
                               im.builder.getDenseI64ArrayAttr(c->pads),
                               im.builder.getDenseI64ArrayAttr(c->dilations),
                               im.builder.getI64IntegerAttr(c->groups),
                               im.builder.getDenseI64ArrayAttr(outputPadding)));
  Value result = im.builder.create<nn::ConvTranspose2dOp>(
      im.locOf(node), im.tensorType(*shape, elementOf(c->input)), c->input,
      c->filter, c->bias, im.builder.getDenseI64ArrayAttr(c->strides),
      im.builder.getDenseI64ArrayAttr(c->pads),
      im.builder.getDenseI64ArrayAttr(c->dilations),
      im.builder.getDenseI64ArrayAttr(outputPadding),
      im.builder.getI64IntegerAttr(c->groups));
  return im.define(node, lowerFrom2d(im, node, *c, result));
}

static FailureOr<PoolWindow>
poolWindow(Importer &im, const onnx::NodeProto &node, ArrayRef<int64_t> input) {
  PoolWindow window;
  window.kernel = im.getInts(node, "kernel_shape", {});
  window.strides = im.getInts(node, "strides", {1, 1});
  std::vector<int64_t> dilations = im.getInts(node, "dilations", {1, 1});
  if (dilations != std::vector<int64_t>{1, 1})
    return im.nodeError(node) << "dilated pooling is not supported";
  FailureOr<std::vector<int64_t>> pads =
      windowPads(im, node, input, window.kernel, window.strides, dilations);
  if (failed(pads))
    return failure();
  window.pads = std::move(*pads);
  window.ceilMode = im.getInt(node, "ceil_mode", 0) != 0;
  FailureOr<nn::Shape> shape =
      nn::inferPool2dShape(input, window.kernel, window.strides, window.pads,
                           window.ceilMode, [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  window.resultShape = std::move(*shape);
  return window;
}

// Defines the node's result as `PoolOp` of `input` over the node's window:
// kernel, strides, pads and ceil mode, then the `extra` attributes.
template <typename PoolOp, typename... Extra>
static LogicalResult definePool(Importer &im, const onnx::NodeProto &node,
                                Value input, Extra... extra) {
  FailureOr<PoolWindow> w = poolWindow(im, node, shapeOf(input));
  if (failed(w))
    return failure();
  auto type = im.tensorType(
      w->resultShape, cast<RankedTensorType>(input.getType()).getElementType());
  Value result = im.builder.create<PoolOp>(
      im.locOf(node), type, input, im.builder.getDenseI64ArrayAttr(w->kernel),
      im.builder.getDenseI64ArrayAttr(w->strides),
      im.builder.getDenseI64ArrayAttr(w->pads),
      im.builder.getBoolAttr(w->ceilMode), extra...);
  return im.define(node, result);
}

static LogicalResult importMaxPool(Importer &im, const onnx::NodeProto &node) {
  if (failed(im.checkNoOutputsBeyond(node, 1)))
    return failure();
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  if (im.getInt(node, "storage_order", 0) != 0)
    return im.nodeError(node) << "storage_order 1 is not supported";
  return definePool<nn::MaxPool2dOp>(im, node, *input);
}

static LogicalResult importAveragePool(Importer &im,
                                       const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  return definePool<nn::AvgPool2dOp>(
      im, node, *input,
      im.builder.getBoolAttr(im.getInt(node, "count_include_pad", 0) != 0));
}

static LogicalResult importGlobalAveragePool(Importer &im,
                                             const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferGlobalAvgPoolShape(
      shapeOf(*input), [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = im.tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  return im.define(node, im.builder.create<nn::GlobalAvgPoolOp>(im.locOf(node),
                                                                type, *input));
}

static LogicalResult importLrn(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  // The ONNX checker has refused a node without its size.
  int64_t size = im.getInt(node, "size", 0);
  FailureOr<nn::Shape> shape = nn::LrnOp::inferShape(
      shapeOf(*input), size, [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = im.tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  return im.define(
      node,
      im.builder.create<nn::LrnOp>(
          im.locOf(node), type, *input, im.builder.getI64IntegerAttr(size),
          im.builder.getF32FloatAttr(im.getFloat(node, "alpha", 1e-4f)),
          im.builder.getF32FloatAttr(im.getFloat(node, "beta", 0.75f)),
          im.builder.getF32FloatAttr(im.getFloat(node, "bias", 1.0f))));
}

static LogicalResult importBatchNormalization(Importer &im,
                                              const onnx::NodeProto &node) {
  // Outputs 1-4 (the updated running statistics and the saved batch
  // statistics of training-mode exports) have no nn counterpart: dpc
  // updates the running statistics in place. Exporters name them anyway, so
  // they are accepted as long as nothing reads them.
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      im.unreadable[node.output(i)] =
          "output " + std::to_string(i) + " of BatchNormalization '" +
          im.nodeName(node) +
          "' (running or saved statistics), which dpc keeps as state";
  for (int i = 3; i < 5; ++i)
    if (im.hasInput(node, i) && !im.initializers.count(node.input(i)))
      return im.nodeError(node)
             << "expects the running " << (i == 3 ? "mean" : "variance") << " '"
             << node.input(i)
             << "' to be an initializer: dpc trains batch normalization "
                "and keeps the running statistics as state";
  SmallVector<Value, 5> operands;
  for (int i = 0; i < 5; ++i) {
    FailureOr<Value> value = im.getValue(node, i);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  Value input = operands[0];
  FailureOr<nn::Shape> statsShape = nn::inferBatchNormStatsShape(
      shapeOf(input), [&] { return im.nodeError(node); });
  if (failed(statsShape))
    return failure();
  for (int i = 1; i < 5; ++i)
    if (shapeOf(operands[i]) != ArrayRef<int64_t>{(*statsShape)[1]})
      return im.nodeError(node)
             << "expects input " << i << " of shape " << (*statsShape)[1]
             << " (one per channel), got "
             << nn::formatShape(shapeOf(operands[i]));
  Location loc = im.locOf(node);
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
  Value stats = im.builder.create<nn::BatchNormStatsOp>(
      loc, im.tensorType(*statsShape, elementType), input, operands[3],
      operands[4],
      im.builder.getF32FloatAttr(im.getFloat(node, "momentum", 0.9f)));
  Value result = im.builder.create<nn::BatchNormOp>(
      loc, input.getType(), input, stats, operands[1], operands[2],
      im.builder.getF32FloatAttr(im.getFloat(node, "epsilon", 1e-5f)));
  return im.define(node, result);
}

static LogicalResult importLayerNormalization(Importer &im,
                                              const onnx::NodeProto &node) {
  // Mean and InvStdDev (outputs 1 and 2) are what a training framework
  // saves for the backward pass; dpc's gradient recomputes them, so they
  // are accepted as long as nothing reads them.
  static const char *const kSaved[] = {"", "Mean", "InvStdDev"};
  for (int i = 1; i < node.output_size() && i < 3; ++i)
    if (!node.output(i).empty())
      im.unreadable[node.output(i)] =
          "output " + std::to_string(i) + " (" + kSaved[i] +
          ") of LayerNormalization '" + im.nodeName(node) +
          "', which dpc does not compute: its gradient recomputes the "
          "statistics";
  if (failed(im.checkNoOutputsBeyond(node, 3)))
    return failure();
  // stash_type (the precision of the statistics) is not read: dpc computes
  // them in float32 or better for every element type it takes.
  if (!im.hasInput(node, 1))
    return im.nodeError(node) << "expects a scale (input 1)";
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  int64_t axis = im.getInt(node, "axis", -1);
  FailureOr<nn::Shape> weightShape = nn::inferLayerNormWeightShape(
      shapeOf(*input), axis, [&] { return im.nodeError(node); });
  if (failed(weightShape))
    return failure();
  SmallVector<Value, 2> weights;
  for (int i = 1; i < 3; ++i) {
    if (!im.hasInput(node, i)) {
      weights.push_back(Value());
      continue;
    }
    FailureOr<Value> weight = im.getValue(node, i);
    if (failed(weight))
      return failure();
    // ONNX lets the scale and bias broadcast to the normalized shape;
    // exporters write them at that shape, the one dpc takes.
    if (shapeOf(*weight) != ArrayRef<int64_t>(*weightShape))
      return im.nodeError(node)
             << "expects the " << (i == 1 ? "scale" : "bias") << " '"
             << node.input(i) << "' of the normalized shape "
             << nn::formatShape(*weightShape) << " (input dimensions "
             << (axis < 0 ? axis + int64_t(shapeOf(*input).size()) : axis)
             << " onwards), got " << nn::formatShape(shapeOf(*weight));
    weights.push_back(*weight);
  }
  float epsilon = im.getFloat(node, "epsilon", 1e-5f);
  if (!(epsilon >= 0.0f))
    return im.nodeError(node)
           << "expects a non-negative epsilon, got " << epsilon;
  return im.define(node,
                   im.builder.create<nn::LayerNormOp>(
                       im.locOf(node), input->getType(), *input, weights[0],
                       weights[1], im.builder.getI64IntegerAttr(axis),
                       im.builder.getF32FloatAttr(epsilon)));
}

// Whether input `index` is a constant all of whose elements are `value`
// (the ones and zeros torch.onnx gives the InstanceNormalization inside
// its GroupNorm).
static bool isConstantOf(Importer &im, const onnx::NodeProto &node, int index,
                         float value) {
  if (!im.isHost(node.input(index)))
    return false;
  FailureOr<HostTensor> t = im.getHost(node, index);
  return succeeded(t) && t->isFloat &&
         llvm::all_of(t->floats, [&](float v) { return v == value; });
}

// InstanceNormalization: each (sample, channel) of an [N, C, ...] input
// normalized over its spatial elements, then scaled and shifted per
// channel. Written as nn.layer_norm over dimensions 2 onwards (the same
// mean, biased variance and epsilon) and a multiply and add by the scale
// and bias as [C, 1, ...], each left out when it is a constant of ones or
// zeros. torch.onnx (opset 17) exports nn.GroupNorm as this op on the
// input reshaped to [N, groups, -1] with such constants, then the affine
// transform per channel: group normalization arrives as layer_norm too.
static LogicalResult importInstanceNormalization(Importer &im,
                                                 const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  if (shape.size() < 3)
    return im.nodeError(node)
           << "expects an input of rank >= 3 (batch, channels, spatial "
              "dimensions), got "
           << nn::formatShape(shape);
  float epsilon = im.getFloat(node, "epsilon", 1e-5f);
  if (!(epsilon >= 0.0f))
    return im.nodeError(node)
           << "expects a non-negative epsilon, got " << epsilon;
  Location loc = im.locOf(node);
  Value result = im.builder.create<nn::LayerNormOp>(
      loc, input->getType(), *input, Value(), Value(),
      im.builder.getI64IntegerAttr(2), im.builder.getF32FloatAttr(epsilon));
  nn::Shape perChannel(shape.size() - 1, 1);
  perChannel[0] = shape[1];
  for (int i : {1, 2}) {
    if (isConstantOf(im, node, i, i == 1 ? 1.0f : 0.0f))
      continue;
    FailureOr<Value> weight = im.getValue(node, i);
    if (failed(weight))
      return failure();
    if (shapeOf(*weight) != ArrayRef<int64_t>{shape[1]})
      return im.nodeError(node) << "expects the " << (i == 1 ? "scale" : "bias")
                                << " '" << node.input(i) << "' of shape ["
                                << shape[1] << "] (one per channel), got "
                                << nn::formatShape(shapeOf(*weight));
    Value column = im.builder.create<nn::ReshapeOp>(
        loc, im.tensorType(perChannel, im.builder.getF32Type()), *weight);
    if (i == 1)
      result =
          im.builder.create<nn::MulOp>(loc, result.getType(), result, column);
    else
      result =
          im.builder.create<nn::AddOp>(loc, result.getType(), result, column);
  }
  return im.define(node, result);
}

template <typename OpTy>
static LogicalResult importSoftmax(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  int64_t axis = im.getInt(node, "axis", -1);
  if (failed(nn::normalizeAxis(axis, shapeOf(*input).size(),
                               [&] { return im.nodeError(node); })))
    return failure();
  return im.define(
      node, im.builder.create<OpTy>(im.locOf(node), input->getType(), *input,
                                    im.builder.getI64IntegerAttr(axis)));
}

// Dropout: in training mode (training_mode true, as a model exported for
// training has it) an nn.dropout with the next mask number; otherwise the
// identity, as ONNX defines it. Nothing may read the mask output.
static LogicalResult importDropout(Importer &im, const onnx::NodeProto &node) {
  // PyTorch names the mask output even when nothing reads it.
  if (node.output_size() > 1 && !node.output(1).empty())
    im.unreadable[node.output(1)] =
        "Dropout's mask, which dpc does not materialize";
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  float ratio = 0.5f;
  if (im.hasInput(node, 1)) {
    FailureOr<HostTensor> given = im.getHost(node, 1);
    if (failed(given))
      return failure();
    if (!given->isFloat || given->floats.size() != 1)
      return im.nodeError(node) << "expects a float scalar ratio";
    ratio = given->floats[0];
  }
  bool training = false;
  if (im.hasInput(node, 2)) {
    FailureOr<HostTensor> given = im.getHost(node, 2);
    if (failed(given))
      return failure();
    if (given->isFloat || given->ints.size() != 1)
      return im.nodeError(node) << "expects a bool scalar training_mode";
    training = given->ints[0] != 0;
  }
  if (!training || ratio == 0.0f)
    return im.define(node, *input);
  if (!(ratio > 0.0f && ratio < 1.0f))
    return im.nodeError(node) << "expects a ratio in [0, 1), got " << ratio;
  return im.define(node, im.builder.create<nn::DropoutOp>(
                             im.locOf(node), input->getType(), *input,
                             im.builder.getF32FloatAttr(ratio),
                             im.builder.getI64IntegerAttr(im.numDropouts++)));
}

ArrayRef<HandlerEntry> mlir::dpc::onnx_frontend::detail::nnHandlers() {
  static const HandlerEntry rows[] = {
      {"Conv", 11, &importConv},
      {"ConvTranspose", 11, &importConvTranspose},
      {"MaxPool", 12, &importMaxPool},
      {"AveragePool", 11, &importAveragePool},
      {"GlobalAveragePool", 1, &importGlobalAveragePool},
      {"BatchNormalization", 9, &importBatchNormalization},
      {"BatchNormalization", 14, &importBatchNormalization},
      {"BatchNormalization", 15, &importBatchNormalization},
      {"LayerNormalization", 17, &importLayerNormalization},
      {"InstanceNormalization", 6, &importInstanceNormalization},
      {"LRN", 13, &importLrn},
      {"Softmax", 13, &importSoftmax<nn::SoftmaxOp>},
      {"LogSoftmax", 13, &importSoftmax<nn::LogSoftmaxOp>},
      {"Dropout", 13, &importDropout},
  };
  return rows;
}
