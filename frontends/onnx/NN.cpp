//===- NN.cpp - ONNX neural-network ops to nn -----------------------------===//
//
// The handlers of ONNX's neural-network ops, as onnx-mlir's NN/ folder
// groups them: Conv, MaxPool, AveragePool and GlobalAveragePool (with the
// windows and auto_pad they share), BatchNormalization, LayerNormalization,
// InstanceNormalization (and with it torch's GroupNorm), Softmax and
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

// Resolves auto_pad into explicit [top, left, bottom, right] pads.
static FailureOr<std::vector<int64_t>>
windowPads(Importer &im, const onnx::NodeProto &node, ArrayRef<int64_t> input,
           ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
           ArrayRef<int64_t> dilations) {
  std::string autoPad = im.getString(node, "auto_pad", "NOTSET");
  if (autoPad == "NOTSET")
    return im.getInts(node, "pads", {0, 0, 0, 0});
  if (autoPad == "VALID")
    return std::vector<int64_t>{0, 0, 0, 0};
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return im.nodeError(node) << "unknown auto_pad '" << autoPad << "'";
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 ||
      input.size() != 4)
    return im.nodeError(node) << "expects 2-D windows on an NCHW input";
  std::vector<int64_t> pads(4);
  for (int i = 0; i < 2; ++i) {
    int64_t in = input[2 + i];
    int64_t out = (in + strides[i] - 1) / strides[i];
    int64_t total = std::max<int64_t>(
        (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in, 0);
    int64_t small = total / 2, large = total - small;
    pads[i] = autoPad == "SAME_UPPER" ? small : large;
    pads[2 + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

static LogicalResult importConv(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  FailureOr<Value> filter =
      failed(input) ? FailureOr<Value>(failure()) : im.getValue(node, 1);
  if (failed(filter))
    return failure();
  ArrayRef<int64_t> inShape = shapeOf(*input), wShape = shapeOf(*filter);
  if (inShape.size() != 4)
    return im.nodeError(node) << "only 2-D convolution (rank-4 input) is "
                                 "supported, got input of shape "
                              << nn::formatShape(inShape);
  if (wShape.size() != 4)
    return im.nodeError(node)
           << "expects a rank-4 filter (output channels, "
              "input channels, height, width), got '"
           << node.input(1) << "' of shape " << nn::formatShape(wShape);
  std::vector<int64_t> kernel =
      im.getInts(node, "kernel_shape", {wShape.begin() + 2, wShape.end()});
  if (ArrayRef<int64_t>(kernel) != wShape.drop_front(2))
    return im.nodeError(node) << "kernel_shape does not match the filter shape "
                              << nn::formatShape(wShape);
  std::vector<int64_t> strides = im.getInts(node, "strides", {1, 1});
  std::vector<int64_t> dilations = im.getInts(node, "dilations", {1, 1});
  FailureOr<std::vector<int64_t>> pads =
      windowPads(im, node, inShape, kernel, strides, dilations);
  if (failed(pads))
    return failure();
  int64_t groups = im.getInt(node, "group", 1);
  FailureOr<nn::Shape> shape =
      nn::inferConv2dShape(inShape, wShape, strides, *pads, dilations, groups,
                           [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  Value bias;
  if (im.hasInput(node, 2)) {
    FailureOr<Value> b = im.getValue(node, 2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  auto type = im.tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  Value result = im.builder.create<nn::Conv2dOp>(
      im.locOf(node), type, *input, *filter, bias,
      im.builder.getDenseI64ArrayAttr(strides),
      im.builder.getDenseI64ArrayAttr(*pads),
      im.builder.getDenseI64ArrayAttr(dilations),
      im.builder.getI64IntegerAttr(groups), im.builder.getStringAttr("direct"));
  return im.define(node, result);
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

static LogicalResult importMaxPool(Importer &im, const onnx::NodeProto &node) {
  if (failed(im.checkNoOutputsBeyond(node, 1)))
    return failure();
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  if (im.getInt(node, "storage_order", 0) != 0)
    return im.nodeError(node) << "storage_order 1 is not supported";
  FailureOr<PoolWindow> w = poolWindow(im, node, shapeOf(*input));
  if (failed(w))
    return failure();
  auto type =
      im.tensorType(w->resultShape,
                    cast<RankedTensorType>(input->getType()).getElementType());
  Value result = im.builder.create<nn::MaxPool2dOp>(
      im.locOf(node), type, *input, im.builder.getDenseI64ArrayAttr(w->kernel),
      im.builder.getDenseI64ArrayAttr(w->strides),
      im.builder.getDenseI64ArrayAttr(w->pads),
      im.builder.getBoolAttr(w->ceilMode));
  return im.define(node, result);
}

static LogicalResult importAveragePool(Importer &im,
                                       const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  FailureOr<PoolWindow> w = poolWindow(im, node, shapeOf(*input));
  if (failed(w))
    return failure();
  auto type =
      im.tensorType(w->resultShape,
                    cast<RankedTensorType>(input->getType()).getElementType());
  Value result = im.builder.create<nn::AvgPool2dOp>(
      im.locOf(node), type, *input, im.builder.getDenseI64ArrayAttr(w->kernel),
      im.builder.getDenseI64ArrayAttr(w->strides),
      im.builder.getDenseI64ArrayAttr(w->pads),
      im.builder.getBoolAttr(w->ceilMode),
      im.builder.getBoolAttr(im.getInt(node, "count_include_pad", 0) != 0));
  return im.define(node, result);
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
      {"MaxPool", 12, &importMaxPool},
      {"AveragePool", 11, &importAveragePool},
      {"GlobalAveragePool", 1, &importGlobalAveragePool},
      {"BatchNormalization", 9, &importBatchNormalization},
      {"BatchNormalization", 14, &importBatchNormalization},
      {"BatchNormalization", 15, &importBatchNormalization},
      {"LayerNormalization", 17, &importLayerNormalization},
      {"InstanceNormalization", 6, &importInstanceNormalization},
      {"Softmax", 13, &importSoftmax<nn::SoftmaxOp>},
      {"LogSoftmax", 13, &importSoftmax<nn::LogSoftmaxOp>},
      {"Dropout", 13, &importDropout},
  };
  return rows;
}
