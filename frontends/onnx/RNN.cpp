//===- RNN.cpp - ONNX recurrent ops to nn ---------------------------------===//
//
// The handler of ONNX's LSTM (one forward layer as nn.lstm, its outputs
// slices of the state sequence) and its rows of the handler table.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::onnx_frontend;
using namespace mlir::dpc::onnx_frontend::detail;
using mlir::dpc::nn::shapeOf;

// One forward LSTM layer (torch's nn.LSTM exports a node per layer). The
// weights arrive as ONNX lays them out for one direction (1 x 4H x I,
// 1 x 4H x H, 1 x 8H) and are read through reshapes, so a weight that the
// exporter sliced and concatenated from torch's parameter (its gate order
// i, f, g, o reordered to ONNX's i, o, f, c) stays that one trainable
// parameter, the slices and the concat differentiated like any others.
// Y, Y_h and Y_c are slices of nn.lstm's state sequence.
static LogicalResult importLstm(Importer &im, const onnx::NodeProto &node) {
  if (failed(im.checkNoOutputsBeyond(node, 3)))
    return failure();
  std::string direction = im.getString(node, "direction", "forward");
  if (direction != "forward")
    return im.nodeError(node) << "direction '" << direction
                              << "' is not supported; dpc imports forward "
                                 "LSTMs (one per layer, as torch exports "
                                 "unidirectional nn.LSTM)";
  if (const onnx::AttributeProto *clip = im.findAttr(node, "clip"))
    return im.nodeError(node)
           << "cell clipping (clip = " << clip->f() << ") is not supported";
  if (im.getInt(node, "input_forget", 0) != 0)
    return im.nodeError(node) << "input_forget = 1 (coupled input and forget "
                                 "gates) is not supported";
  if (im.getInt(node, "layout", 0) != 0)
    return im.nodeError(node) << "layout = 1 (batch-major) is not supported; "
                                 "dpc imports the sequence-major layout torch "
                                 "exports";
  if (const onnx::AttributeProto *acts = im.findAttr(node, "activations")) {
    static const char *const kDefault[] = {"Sigmoid", "Tanh", "Tanh"};
    bool standard = acts->strings_size() == 3;
    for (int i = 0; standard && i < 3; ++i)
      standard = acts->strings(i) == kDefault[i];
    if (!standard || im.findAttr(node, "activation_alpha") ||
        im.findAttr(node, "activation_beta"))
      return im.nodeError(node) << "activations other than the default "
                                   "(Sigmoid, Tanh, Tanh) are not supported";
  }
  if (im.hasInput(node, 4))
    return im.nodeError(node)
           << "sequence_lens (input 4) is not supported: "
              "every sequence of a batch has the full length";
  if (im.hasInput(node, 7))
    return im.nodeError(node) << "peephole weights (input 7) are not supported";

  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> x = shapeOf(*input);
  if (x.size() != 3)
    return im.nodeError(node)
           << "expects X of shape T x B x I, got " << nn::formatShape(x);
  int64_t steps = x[0], batch = x[1];
  Type f32 = im.builder.getF32Type();
  Location loc = im.locOf(node);
  // An operand of ONNX's one-direction shape `onnxShape`, read as `shape`.
  auto operand = [&](int index, StringRef what, ArrayRef<int64_t> onnxShape,
                     ArrayRef<int64_t> shape) -> FailureOr<Value> {
    FailureOr<Value> value = im.getValue(node, index);
    if (failed(value))
      return failure();
    if (shapeOf(*value) != onnxShape)
      return im.nodeError(node)
             << "expects " << what << " '" << node.input(index) << "' of shape "
             << nn::formatShape(onnxShape) << ", got "
             << nn::formatShape(shapeOf(*value));
    return Value(im.builder.create<nn::ReshapeOp>(
        loc, im.tensorType(shape, f32), *value));
  };
  FailureOr<Value> rawR = im.getValue(node, 2);
  if (failed(rawR))
    return failure();
  ArrayRef<int64_t> rShape = shapeOf(*rawR);
  if (rShape.size() != 3 || rShape[0] != 1)
    return im.nodeError(node)
           << "expects R of shape 1 x 4H x H, got " << nn::formatShape(rShape);
  int64_t h = rShape[2];
  if (int64_t declared = im.getInt(node, "hidden_size", h); declared != h)
    return im.nodeError(node)
           << "hidden_size " << declared << " does not match R's shape "
           << nn::formatShape(rShape);
  FailureOr<Value> w = operand(1, "W", {1, 4 * h, x[2]}, {4 * h, x[2]});
  FailureOr<Value> r = operand(2, "R", {1, 4 * h, h}, {4 * h, h});
  if (failed(w) || failed(r))
    return failure();
  Value bias;
  if (im.hasInput(node, 3)) {
    FailureOr<Value> b = operand(3, "B", {1, 8 * h}, {8 * h});
    if (failed(b))
      return failure();
    bias = *b;
  }
  // Absent initial states are zeros, read like a constant of the model.
  SmallVector<Value, 2> initial;
  for (auto [index, what] : {std::pair{5, "initial_h"}, {6, "initial_c"}}) {
    if (im.hasInput(node, index)) {
      FailureOr<Value> state = operand(index, what, {1, batch, h}, {batch, h});
      if (failed(state))
        return failure();
      initial.push_back(*state);
      continue;
    }
    std::string name = im.nodeName(node) + "." + what;
    initial.push_back(im.builder.create<nn::ParamOp>(
        NameLoc::get(im.builder.getStringAttr(name)),
        im.tensorType({batch, h}, f32), StringRef(name), /*frozen=*/true));
    im.model->params.push_back(ImportedParam::fromFloats(
        name, {batch, h}, std::vector<float>(batch * h, 0.0f)));
  }
  std::optional<ArrayRef<int64_t>> biasShape;
  if (bias)
    biasShape = shapeOf(bias);
  FailureOr<nn::Shape> statesShape = nn::inferLstmShape(
      x, shapeOf(*w), shapeOf(*r), biasShape ? &*biasShape : nullptr,
      shapeOf(initial[0]), shapeOf(initial[1]),
      [&] { return im.nodeError(node); });
  if (failed(statesShape))
    return failure();
  Value states = im.builder.create<nn::LstmOp>(
      loc, im.tensorType(*statesShape, f32), *input, *w, *r, bias, initial[0],
      initial[1]);

  // Y (T x 1 x B x H), Y_h and Y_c (1 x B x H): h of every step, h and c of
  // the last.
  auto slice = [&](int64_t first, int64_t count, int64_t offset,
                   ArrayRef<int64_t> shape) -> Value {
    Value box = im.builder.create<nn::SliceOp>(
        loc, im.tensorType({count, batch, h}, f32), states,
        ArrayRef<int64_t>{first, 0, offset}, ArrayRef<int64_t>{1, 1, 1});
    return im.builder.create<nn::ReshapeOp>(loc, im.tensorType(shape, f32),
                                            box);
  };
  if (node.output_size() > 0 && !node.output(0).empty())
    im.values[node.output(0)] = slice(0, steps, 0, {steps, 1, batch, h});
  if (node.output_size() > 1 && !node.output(1).empty())
    im.values[node.output(1)] = slice(steps - 1, 1, 0, {1, batch, h});
  if (node.output_size() > 2 && !node.output(2).empty())
    im.values[node.output(2)] = slice(steps - 1, 1, h, {1, batch, h});
  return success();
}

ArrayRef<HandlerEntry> mlir::dpc::onnx_frontend::detail::rnnHandlers() {
  static const HandlerEntry rows[] = {
      {"LSTM", 7, &importLstm},
      {"LSTM", 14, &importLstm},
  };
  return rows;
}
