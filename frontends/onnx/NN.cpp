//===- NN.cpp - ONNX neural-network ops to nn -----------------------------===//
//
// The handlers of ONNX's neural-network ops, as onnx-mlir's NN/ folder
// groups them: Conv, MaxPool, AveragePool and GlobalAveragePool (with the
// windows and auto_pad they share), BatchNormalization, LayerNormalization,
// Softmax and LogSoftmax, and Dropout; and their rows of the handler table.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::dpc::onnx_frontend::detail;
using mlir::dpc::nn::shapeOf;

// Resolves auto_pad into explicit [top, left, bottom, right] pads.
FailureOr<std::vector<int64_t>>
Importer::windowPads(const onnx::NodeProto &node, ArrayRef<int64_t> input,
                     ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                     ArrayRef<int64_t> dilations) {
  std::string autoPad = getString(node, "auto_pad", "NOTSET");
  if (autoPad == "NOTSET")
    return getInts(node, "pads", {0, 0, 0, 0});
  if (autoPad == "VALID")
    return std::vector<int64_t>{0, 0, 0, 0};
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return nodeError(node) << "unknown auto_pad '" << autoPad << "'";
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 ||
      input.size() != 4)
    return nodeError(node) << "expects 2-D windows on an NCHW input";
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

LogicalResult Importer::importConv(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  FailureOr<Value> filter =
      failed(input) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(filter))
    return failure();
  ArrayRef<int64_t> inShape = shapeOf(*input), wShape = shapeOf(*filter);
  if (inShape.size() != 4)
    return nodeError(node) << "only 2-D convolution (rank-4 input) is "
                              "supported, got input of shape "
                           << nn::formatShape(inShape);
  if (wShape.size() != 4)
    return nodeError(node) << "expects a rank-4 filter (output channels, "
                              "input channels, height, width), got '"
                           << node.input(1) << "' of shape "
                           << nn::formatShape(wShape);
  std::vector<int64_t> kernel =
      getInts(node, "kernel_shape", {wShape.begin() + 2, wShape.end()});
  if (ArrayRef<int64_t>(kernel) != wShape.drop_front(2))
    return nodeError(node) << "kernel_shape does not match the filter shape "
                           << nn::formatShape(wShape);
  std::vector<int64_t> strides = getInts(node, "strides", {1, 1});
  std::vector<int64_t> dilations = getInts(node, "dilations", {1, 1});
  FailureOr<std::vector<int64_t>> pads =
      windowPads(node, inShape, kernel, strides, dilations);
  if (failed(pads))
    return failure();
  int64_t groups = getInt(node, "group", 1);
  FailureOr<nn::Shape> shape =
      nn::inferConv2dShape(inShape, wShape, strides, *pads, dilations, groups,
                           [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  Value bias;
  if (hasInput(node, 2)) {
    FailureOr<Value> b = getValue(node, 2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  auto type = tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  Value result = builder.create<nn::Conv2dOp>(
      locOf(node), type, *input, *filter, bias,
      builder.getDenseI64ArrayAttr(strides),
      builder.getDenseI64ArrayAttr(*pads),
      builder.getDenseI64ArrayAttr(dilations),
      builder.getI64IntegerAttr(groups), builder.getStringAttr("direct"));
  return define(node, result);
}

FailureOr<Importer::PoolWindow>
Importer::poolWindow(const onnx::NodeProto &node, ArrayRef<int64_t> input) {
  PoolWindow window;
  window.kernel = getInts(node, "kernel_shape", {});
  window.strides = getInts(node, "strides", {1, 1});
  std::vector<int64_t> dilations = getInts(node, "dilations", {1, 1});
  if (dilations != std::vector<int64_t>{1, 1})
    return nodeError(node) << "dilated pooling is not supported";
  FailureOr<std::vector<int64_t>> pads =
      windowPads(node, input, window.kernel, window.strides, dilations);
  if (failed(pads))
    return failure();
  window.pads = std::move(*pads);
  window.ceilMode = getInt(node, "ceil_mode", 0) != 0;
  FailureOr<nn::Shape> shape =
      nn::inferPool2dShape(input, window.kernel, window.strides, window.pads,
                           window.ceilMode, [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  window.resultShape = std::move(*shape);
  return window;
}

LogicalResult Importer::importMaxPool(const onnx::NodeProto &node) {
  if (failed(checkNoOutputsBeyond(node, 1)))
    return failure();
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  if (getInt(node, "storage_order", 0) != 0)
    return nodeError(node) << "storage_order 1 is not supported";
  FailureOr<PoolWindow> w = poolWindow(node, shapeOf(*input));
  if (failed(w))
    return failure();
  auto type =
      tensorType(w->resultShape,
                 cast<RankedTensorType>(input->getType()).getElementType());
  Value result = builder.create<nn::MaxPool2dOp>(
      locOf(node), type, *input, builder.getDenseI64ArrayAttr(w->kernel),
      builder.getDenseI64ArrayAttr(w->strides),
      builder.getDenseI64ArrayAttr(w->pads), builder.getBoolAttr(w->ceilMode));
  return define(node, result);
}

LogicalResult Importer::importAveragePool(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  FailureOr<PoolWindow> w = poolWindow(node, shapeOf(*input));
  if (failed(w))
    return failure();
  auto type =
      tensorType(w->resultShape,
                 cast<RankedTensorType>(input->getType()).getElementType());
  Value result = builder.create<nn::AvgPool2dOp>(
      locOf(node), type, *input, builder.getDenseI64ArrayAttr(w->kernel),
      builder.getDenseI64ArrayAttr(w->strides),
      builder.getDenseI64ArrayAttr(w->pads), builder.getBoolAttr(w->ceilMode),
      builder.getBoolAttr(getInt(node, "count_include_pad", 0) != 0));
  return define(node, result);
}

LogicalResult Importer::importGlobalAveragePool(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferGlobalAvgPoolShape(
      shapeOf(*input), [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  return define(node,
                builder.create<nn::GlobalAvgPoolOp>(locOf(node), type, *input));
}

LogicalResult Importer::importBatchNormalization(const onnx::NodeProto &node) {
  // Outputs 1-4 (the updated running statistics and the saved batch
  // statistics of training-mode exports) have no nn counterpart: dpc
  // updates the running statistics in place. Exporters name them anyway, so
  // they are accepted as long as nothing reads them.
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      unreadable[node.output(i)] =
          "output " + std::to_string(i) + " of BatchNormalization '" +
          nodeName(node) +
          "' (running or saved statistics), which dpc keeps as state";
  for (int i = 3; i < 5; ++i)
    if (hasInput(node, i) && !initializers.count(node.input(i)))
      return nodeError(node)
             << "expects the running " << (i == 3 ? "mean" : "variance") << " '"
             << node.input(i)
             << "' to be an initializer: dpc trains batch normalization "
                "and keeps the running statistics as state";
  SmallVector<Value, 5> operands;
  for (int i = 0; i < 5; ++i) {
    FailureOr<Value> value = getValue(node, i);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  Value input = operands[0];
  FailureOr<nn::Shape> statsShape = nn::inferBatchNormStatsShape(
      shapeOf(input), [&] { return nodeError(node); });
  if (failed(statsShape))
    return failure();
  for (int i = 1; i < 5; ++i)
    if (shapeOf(operands[i]) != ArrayRef<int64_t>{(*statsShape)[1]})
      return nodeError(node) << "expects input " << i << " of shape "
                             << (*statsShape)[1] << " (one per channel), got "
                             << nn::formatShape(shapeOf(operands[i]));
  Location loc = locOf(node);
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
  Value stats = builder.create<nn::BatchNormStatsOp>(
      loc, tensorType(*statsShape, elementType), input, operands[3],
      operands[4], builder.getF32FloatAttr(getFloat(node, "momentum", 0.9f)));
  Value result = builder.create<nn::BatchNormOp>(
      loc, input.getType(), input, stats, operands[1], operands[2],
      builder.getF32FloatAttr(getFloat(node, "epsilon", 1e-5f)));
  return define(node, result);
}

LogicalResult Importer::importLayerNormalization(const onnx::NodeProto &node) {
  // Mean and InvStdDev (outputs 1 and 2) are what a training framework
  // saves for the backward pass; dpc's gradient recomputes them, so they
  // are accepted as long as nothing reads them.
  static const char *const kSaved[] = {"", "Mean", "InvStdDev"};
  for (int i = 1; i < node.output_size() && i < 3; ++i)
    if (!node.output(i).empty())
      unreadable[node.output(i)] =
          "output " + std::to_string(i) + " (" + kSaved[i] +
          ") of LayerNormalization '" + nodeName(node) +
          "', which dpc does not compute: its gradient recomputes the "
          "statistics";
  if (failed(checkNoOutputsBeyond(node, 3)))
    return failure();
  // stash_type (the precision of the statistics) is not read: dpc computes
  // them in float32 or better for every element type it takes.
  if (!hasInput(node, 1))
    return nodeError(node) << "expects a scale (input 1)";
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  int64_t axis = getInt(node, "axis", -1);
  FailureOr<nn::Shape> weightShape = nn::inferLayerNormWeightShape(
      shapeOf(*input), axis, [&] { return nodeError(node); });
  if (failed(weightShape))
    return failure();
  SmallVector<Value, 2> weights;
  for (int i = 1; i < 3; ++i) {
    if (!hasInput(node, i)) {
      weights.push_back(Value());
      continue;
    }
    FailureOr<Value> weight = getValue(node, i);
    if (failed(weight))
      return failure();
    // ONNX lets the scale and bias broadcast to the normalized shape;
    // exporters write them at that shape, the one dpc takes.
    if (shapeOf(*weight) != ArrayRef<int64_t>(*weightShape))
      return nodeError(node)
             << "expects the " << (i == 1 ? "scale" : "bias") << " '"
             << node.input(i) << "' of the normalized shape "
             << nn::formatShape(*weightShape) << " (input dimensions "
             << (axis < 0 ? axis + int64_t(shapeOf(*input).size()) : axis)
             << " onwards), got " << nn::formatShape(shapeOf(*weight));
    weights.push_back(*weight);
  }
  float epsilon = getFloat(node, "epsilon", 1e-5f);
  if (!(epsilon >= 0.0f))
    return nodeError(node) << "expects a non-negative epsilon, got " << epsilon;
  return define(node, builder.create<nn::LayerNormOp>(
                          locOf(node), input->getType(), *input, weights[0],
                          weights[1], builder.getI64IntegerAttr(axis),
                          builder.getF32FloatAttr(epsilon)));
}

template <typename OpTy>
LogicalResult Importer::importSoftmax(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  int64_t axis = getInt(node, "axis", -1);
  if (failed(nn::normalizeAxis(axis, shapeOf(*input).size(),
                               [&] { return nodeError(node); })))
    return failure();
  return define(node,
                builder.create<OpTy>(locOf(node), input->getType(), *input,
                                     builder.getI64IntegerAttr(axis)));
}

// Dropout: in training mode (training_mode true, as a model exported for
// training has it) an nn.dropout with the next mask number; otherwise the
// identity, as ONNX defines it. Nothing may read the mask output.
LogicalResult Importer::importDropout(const onnx::NodeProto &node) {
  // PyTorch names the mask output even when nothing reads it.
  if (node.output_size() > 1 && !node.output(1).empty())
    unreadable[node.output(1)] =
        "Dropout's mask, which dpc does not materialize";
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  float ratio = 0.5f;
  if (hasInput(node, 1)) {
    FailureOr<HostTensor> given = getHost(node, 1);
    if (failed(given))
      return failure();
    if (!given->isFloat || given->floats.size() != 1)
      return nodeError(node) << "expects a float scalar ratio";
    ratio = given->floats[0];
  }
  bool training = false;
  if (hasInput(node, 2)) {
    FailureOr<HostTensor> given = getHost(node, 2);
    if (failed(given))
      return failure();
    if (given->isFloat || given->ints.size() != 1)
      return nodeError(node) << "expects a bool scalar training_mode";
    training = given->ints[0] != 0;
  }
  if (!training || ratio == 0.0f)
    return define(node, *input);
  if (!(ratio > 0.0f && ratio < 1.0f))
    return nodeError(node) << "expects a ratio in [0, 1), got " << ratio;
  return define(node, builder.create<nn::DropoutOp>(
                          locOf(node), input->getType(), *input,
                          builder.getF32FloatAttr(ratio),
                          builder.getI64IntegerAttr(numDropouts++)));
}

ArrayRef<Importer::HandlerEntry> Importer::nnHandlers() {
  static const HandlerEntry rows[] = {
      {"Conv", 11, &Importer::importConv},
      {"MaxPool", 12, &Importer::importMaxPool},
      {"AveragePool", 11, &Importer::importAveragePool},
      {"GlobalAveragePool", 1, &Importer::importGlobalAveragePool},
      {"BatchNormalization", 9, &Importer::importBatchNormalization},
      {"BatchNormalization", 14, &Importer::importBatchNormalization},
      {"BatchNormalization", 15, &Importer::importBatchNormalization},
      {"LayerNormalization", 17, &Importer::importLayerNormalization},
      {"Softmax", 13, &Importer::importSoftmax<nn::SoftmaxOp>},
      {"LogSoftmax", 13, &Importer::importSoftmax<nn::LogSoftmaxOp>},
      {"Dropout", 13, &Importer::importDropout},
  };
  return rows;
}
