//===- RNN.cpp - ONNX recurrent ops to nn ---------------------------------===//
//
// The handlers of ONNX's LSTM and GRU. Each direction of a node is one
// nn.lstm or nn.gru (the second of a bidirectional node runs in reverse),
// its weights slices of the node's, and the outputs are slices of the
// state sequences, concatenated over the directions. A batch-major node
// (layout = 1) reads its input and writes its outputs through transposes.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::onnx_frontend;
using namespace mlir::dpc::onnx_frontend::detail;
using mlir::dpc::nn::shapeOf;

namespace {

// The operands of one direction of a node: B is null when the node has
// none, initial_c the LSTM's only.
struct DirectionOperands {
  Value w, r, bias, initialH, initialC;
};

// What the LSTM and GRU handlers share: the node's attributes and sizes,
// and the per-direction reading of its operands and writing of its outputs.
struct RecurrentNode {
  Importer &im;
  const onnx::NodeProto &node;
  // Gates per direction: 4 for an LSTM, 3 for a GRU.
  int64_t gates = 0;
  int64_t steps = 0, batch = 0, inputSize = 0, hidden = 0, directions = 1;
  bool batchMajor = false, reverseOnly = false;
  Value input; // T x B x I

  // Whether direction `d` runs from the last step.
  bool reversed(int64_t d) const { return d == 1 || reverseOnly; }

  Type f32() { return im.builder.getF32Type(); }
  Location loc() { return im.locOf(node); }
  Value reshape(Value value, ArrayRef<int64_t> shape) {
    return im.builder.create<nn::ReshapeOp>(loc(), im.tensorType(shape, f32()),
                                            value);
  }
  Value slice(Value value, ArrayRef<int64_t> offsets, ArrayRef<int64_t> shape) {
    SmallVector<int64_t> ones(shape.size(), 1);
    return im.builder.create<nn::SliceOp>(loc(), im.tensorType(shape, f32()),
                                          value, offsets, ones);
  }
  Value transpose(Value value, ArrayRef<int64_t> perm) {
    ArrayRef<int64_t> in = shapeOf(value);
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(in[p]);
    return im.builder.create<nn::TransposeOp>(
        loc(), im.tensorType(shape, f32()), value, perm);
  }
  Value concat(ArrayRef<Value> parts, int64_t axis) {
    if (parts.size() == 1)
      return parts[0];
    SmallVector<int64_t> shape(shapeOf(parts[0]));
    shape[axis] = 0;
    for (Value part : parts)
      shape[axis] += shapeOf(part)[axis];
    return im.builder.create<nn::ConcatOp>(loc(), im.tensorType(shape, f32()),
                                           ValueRange(parts),
                                           im.builder.getI64IntegerAttr(axis));
  }

  LogicalResult readAttributes(ArrayRef<StringRef> activations);
  LogicalResult readInput();
  FailureOr<Value> directionPart(int index, StringRef what,
                                 ArrayRef<int64_t> onnxShape, int64_t axis,
                                 int64_t direction, ArrayRef<int64_t> shape);
  FailureOr<Value> weight(int index, StringRef what, int64_t rows, int64_t cols,
                          int64_t direction);
  FailureOr<Value> initialState(int index, StringRef what, int64_t direction);
  FailureOr<DirectionOperands> readDirection(int64_t direction);
  void defineOutputs(ArrayRef<Value> states, ArrayRef<int64_t> offsets);
  LogicalResult
  importLayers(function_ref<FailureOr<Value>(const DirectionOperands &, bool)>
                   buildLayer,
               ArrayRef<int64_t> offsets);
};

} // namespace

LogicalResult RecurrentNode::readAttributes(ArrayRef<StringRef> activations) {
  std::string direction = im.getString(node, "direction", "forward");
  if (direction == "bidirectional")
    directions = 2;
  reverseOnly = direction == "reverse";
  if (direction != "bidirectional" && direction != "forward" &&
      direction != "reverse")
    return im.nodeError(node) << "direction '" << direction
                              << "' is not one of forward, reverse and "
                                 "bidirectional";
  if (const onnx::AttributeProto *clip = im.findAttr(node, "clip"))
    return im.nodeError(node)
           << "cell clipping (clip = " << clip->f() << ") is not supported";
  int64_t layout = im.getInt(node, "layout", 0);
  if (layout != 0 && layout != 1)
    return im.nodeError(node) << "layout " << layout << " is not 0 or 1";
  batchMajor = layout == 1;
  if (const onnx::AttributeProto *acts = im.findAttr(node, "activations")) {
    bool standard =
        acts->strings_size() == int64_t(activations.size()) * directions;
    for (int i = 0; standard && i < acts->strings_size(); ++i)
      standard = acts->strings(i) == activations[i % activations.size()];
    if (!standard || im.findAttr(node, "activation_alpha") ||
        im.findAttr(node, "activation_beta"))
      return im.nodeError(node)
             << "activations other than the default ("
             << llvm::join(activations, ", ") << " per direction) are not "
             << "supported";
  }
  if (im.hasInput(node, 4))
    return im.nodeError(node)
           << "sequence_lens (input 4) is not supported: "
              "every sequence of a batch has the full length";
  return success();
}

// X as T x B x I, and H from R (directions x gates*H x H).
LogicalResult RecurrentNode::readInput() {
  FailureOr<Value> x = im.getValue(node, 0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*x);
  if (shape.size() != 3)
    return im.nodeError(node)
           << "expects X of shape " << (batchMajor ? "B x T x I" : "T x B x I")
           << ", got " << nn::formatShape(shape);
  input = batchMajor ? transpose(*x, {1, 0, 2}) : *x;
  steps = shapeOf(input)[0];
  batch = shapeOf(input)[1];
  inputSize = shapeOf(input)[2];
  FailureOr<Value> r = im.getValue(node, 2);
  if (failed(r))
    return failure();
  ArrayRef<int64_t> rShape = shapeOf(*r);
  if (rShape.size() != 3 || rShape[0] != directions || rShape[2] < 1 ||
      rShape[1] != gates * rShape[2])
    return im.nodeError(node)
           << "expects R of shape " << directions << " x " << gates
           << "H x H, got " << nn::formatShape(rShape);
  hidden = rShape[2];
  if (int64_t declared = im.getInt(node, "hidden_size", hidden);
      declared != hidden)
    return im.nodeError(node)
           << "hidden_size " << declared << " does not match R's shape "
           << nn::formatShape(rShape);
  return success();
}

// Input `index`, `what` of `onnxShape`, read for one direction as `shape`:
// with two directions, the part at `direction` along `axis`.
FailureOr<Value> RecurrentNode::directionPart(int index, StringRef what,
                                              ArrayRef<int64_t> onnxShape,
                                              int64_t axis, int64_t direction,
                                              ArrayRef<int64_t> shape) {
  FailureOr<Value> value = im.getValue(node, index);
  if (failed(value))
    return failure();
  if (shapeOf(*value) != onnxShape)
    return im.nodeError(node) << "expects " << what << " '" << node.input(index)
                              << "' of shape " << nn::formatShape(onnxShape)
                              << ", got " << nn::formatShape(shapeOf(*value));
  Value part = *value;
  if (directions > 1) {
    SmallVector<int64_t> offsets(onnxShape.size(), 0), box(onnxShape);
    offsets[axis] = direction;
    box[axis] = 1;
    part = slice(part, offsets, box);
  }
  return reshape(part, shape);
}

// Input `index` (directions x rows, or x rows x cols when cols > 0) read
// for one direction as rows (x cols). The exporter's slices and concats of
// torch's parameters stay differentiable views of them.
FailureOr<Value> RecurrentNode::weight(int index, StringRef what, int64_t rows,
                                       int64_t cols, int64_t direction) {
  SmallVector<int64_t> onnxShape = {directions, rows};
  SmallVector<int64_t> shape = {rows};
  if (cols > 0) {
    onnxShape.push_back(cols);
    shape.push_back(cols);
  }
  return directionPart(index, what, onnxShape, 0, direction, shape);
}

// An initial state (directions x B x H, or B x directions x H batch-major)
// for one direction as B x H; zeros, read like a constant of the model,
// when the node has none.
FailureOr<Value> RecurrentNode::initialState(int index, StringRef what,
                                             int64_t direction) {
  if (!im.hasInput(node, index)) {
    std::string name =
        im.nodeName(node) + "." + what.str() + (direction ? ".reverse" : "");
    Value zero = im.builder.create<nn::ParamOp>(
        NameLoc::get(im.builder.getStringAttr(name)),
        im.tensorType({batch, hidden}, f32()), StringRef(name),
        /*frozen=*/true);
    im.model->params.push_back(ImportedParam::fromFloats(
        name, {batch, hidden}, std::vector<float>(batch * hidden, 0.0f)));
    return zero;
  }
  SmallVector<int64_t> onnxShape =
      batchMajor ? SmallVector<int64_t>{batch, directions, hidden}
                 : SmallVector<int64_t>{directions, batch, hidden};
  return directionPart(index, what, onnxShape, batchMajor ? 1 : 0, direction,
                       {batch, hidden});
}

// W, R, initial_h and (an LSTM's) initial_c, then B (directions x
// 2*gates*H: the input's and the recurrence's biases) when the node has it,
// for one direction.
FailureOr<DirectionOperands> RecurrentNode::readDirection(int64_t direction) {
  int64_t h = hidden;
  FailureOr<Value> w = weight(1, "W", gates * h, inputSize, direction);
  FailureOr<Value> r = weight(2, "R", gates * h, h, direction);
  FailureOr<Value> initialH = initialState(5, "initial_h", direction);
  FailureOr<Value> initialC = gates == 4
                                  ? initialState(6, "initial_c", direction)
                                  : FailureOr<Value>(Value());
  if (failed(w) || failed(r) || failed(initialH) || failed(initialC))
    return failure();
  DirectionOperands operands{*w, *r, Value(), *initialH, *initialC};
  if (im.hasInput(node, 3)) {
    FailureOr<Value> b = weight(3, "B", 2 * gates * h, 0, direction);
    if (failed(b))
      return failure();
    operands.bias = *b;
  }
  return operands;
}

// Y (T x D x B x H; B x T x D x H batch-major) from the h part of each
// direction's states, and output k > 0 (D x B x H; B x D x H) from the
// part at offsets[k] of the last step each direction ran.
void RecurrentNode::defineOutputs(ArrayRef<Value> states,
                                  ArrayRef<int64_t> offsets) {
  for (int k = 0; k < node.output_size() && k < int(offsets.size()); ++k) {
    if (node.output(k).empty())
      continue;
    SmallVector<Value, 2> parts;
    for (int64_t d = 0; d < directions; ++d) {
      if (k == 0) {
        Value h = slice(states[d], {0, 0, 0}, {steps, batch, hidden});
        parts.push_back(batchMajor ? reshape(transpose(h, {1, 0, 2}),
                                             {batch, steps, 1, hidden})
                                   : reshape(h, {steps, 1, batch, hidden}));
        continue;
      }
      int64_t last = reversed(d) ? 0 : steps - 1;
      Value h = slice(states[d], {last, 0, offsets[k]}, {1, batch, hidden});
      parts.push_back(batchMajor ? reshape(h, {batch, 1, hidden}) : h);
    }
    im.values[node.output(k)] =
        concat(parts, k == 0 ? (batchMajor ? 2 : 1) : (batchMajor ? 1 : 0));
  }
}

// Builds the layer of each direction with `buildLayer`, from the
// direction's operands and whether it runs from the last step, then defines
// the node's outputs from the layers' states (`offsets` as defineOutputs').
LogicalResult RecurrentNode::importLayers(
    function_ref<FailureOr<Value>(const DirectionOperands &, bool)> buildLayer,
    ArrayRef<int64_t> offsets) {
  SmallVector<Value, 2> states;
  for (int64_t d = 0; d < directions; ++d) {
    FailureOr<DirectionOperands> operands = readDirection(d);
    if (failed(operands))
      return failure();
    FailureOr<Value> layer = buildLayer(*operands, reversed(d));
    if (failed(layer))
      return failure();
    states.push_back(*layer);
  }
  defineOutputs(states, offsets);
  return success();
}

// One LSTM node (torch's nn.LSTM exports a node per layer). The weights
// arrive in ONNX's layout (D x 4H x I, D x 4H x H, D x 8H, gates i, o, f,
// c, which the exporter slices and concatenates from torch's i, f, g, o).
static LogicalResult importLstm(Importer &im, const onnx::NodeProto &node) {
  if (failed(im.checkNoOutputsBeyond(node, 3)))
    return failure();
  RecurrentNode rnn{im, node, 4};
  if (failed(rnn.readAttributes({"Sigmoid", "Tanh", "Tanh"})))
    return failure();
  if (im.getInt(node, "input_forget", 0) != 0)
    return im.nodeError(node) << "input_forget = 1 (coupled input and forget "
                                 "gates) is not supported";
  if (im.hasInput(node, 7))
    return im.nodeError(node) << "peephole weights (input 7) are not supported";
  if (failed(rnn.readInput()))
    return failure();
  auto lstm = [&](const DirectionOperands &o,
                  bool reverse) -> FailureOr<Value> {
    FailureOr<nn::Shape> shape = nn::inferLstmShape(
        shapeOf(rnn.input), shapeOf(o.w), shapeOf(o.r),
        nn::shapeOfOptional(o.bias), shapeOf(o.initialH), shapeOf(o.initialC),
        [&] { return im.nodeError(node); });
    if (failed(shape))
      return failure();
    return Value(im.builder.create<nn::LstmOp>(
        rnn.loc(), im.tensorType(*shape, rnn.f32()), rnn.input, o.w, o.r,
        o.bias, o.initialH, o.initialC, reverse));
  };
  // Y, Y_h and Y_c: h of every step, h and c of the last.
  return rnn.importLayers(lstm, {0, 0, rnn.hidden});
}

// One GRU node (torch's nn.GRU exports a node per layer with
// linear_before_reset = 1; its gates r, z, n reordered to ONNX's z, r, h).
static LogicalResult importGru(Importer &im, const onnx::NodeProto &node) {
  if (failed(im.checkNoOutputsBeyond(node, 2)))
    return failure();
  RecurrentNode rnn{im, node, 3};
  if (failed(rnn.readAttributes({"Sigmoid", "Tanh"})))
    return failure();
  int64_t linearBeforeReset = im.getInt(node, "linear_before_reset", 0);
  if (linearBeforeReset != 0 && linearBeforeReset != 1)
    return im.nodeError(node)
           << "linear_before_reset " << linearBeforeReset << " is not 0 or 1";
  if (failed(rnn.readInput()))
    return failure();
  auto gru = [&](const DirectionOperands &o, bool reverse) -> FailureOr<Value> {
    FailureOr<nn::Shape> shape =
        nn::inferGruShape(shapeOf(rnn.input), shapeOf(o.w), shapeOf(o.r),
                          nn::shapeOfOptional(o.bias), shapeOf(o.initialH),
                          [&] { return im.nodeError(node); });
    if (failed(shape))
      return failure();
    return Value(im.builder.create<nn::GruOp>(
        rnn.loc(), im.tensorType(*shape, rnn.f32()), rnn.input, o.w, o.r,
        o.bias, o.initialH, linearBeforeReset == 1, reverse));
  };
  // Y and Y_h: h of every step and of the last.
  return rnn.importLayers(gru, {0, 0});
}

ArrayRef<HandlerEntry> mlir::dpc::onnx_frontend::detail::rnnHandlers() {
  static const HandlerEntry rows[] = {
      {"LSTM", 7, &importLstm},
      {"LSTM", 14, &importLstm},
      {"GRU", 7, &importGru},
      {"GRU", 14, &importGru},
  };
  return rows;
}
