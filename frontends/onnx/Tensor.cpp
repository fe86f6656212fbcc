//===- Tensor.cpp - ONNX tensor ops to nn ---------------------------------===//
//
// The handlers of ONNX's tensor ops, as onnx-mlir's Tensor/ folder groups
// them: Expand, Transpose, Flatten, Reshape (with the re-batching of targets
// that exporters computed at the exported batch size), Identity, Constant,
// Shape, Unsqueeze, Squeeze, Concat, Pad, Resize, ConstantOfShape and Cast;
// Gather, Slice and Split are in GatherSlice.cpp. Most fold on the host when
// their input is known at import time (shape subgraphs) and build nn ops on
// activations otherwise. Their rows of the handler table end the file.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>
#include <optional>

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::onnx_frontend::detail;
using mlir::dpc::nn::shapeOf;

namespace {
// The input of a Reshape, Squeeze or Unsqueeze: known at import time, or
// an activation.
struct Reshaped {
  std::optional<HostTensor> host;
  Value value;
  ArrayRef<int64_t> shape() const {
    return host ? ArrayRef<int64_t>(host->shape) : nn::shapeOf(value);
  }
};
} // namespace

// Expand by numpy broadcasting: folded on the host for a tensor known at
// import time (torch's zero initial states of nn.LSTM), nn.broadcast_to of
// an activation.
static LogicalResult importExpand(Importer &im, const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> target = im.getHostInts(node, 1);
  if (failed(target))
    return failure();
  if (!im.isHost(node.input(0))) {
    FailureOr<Value> input = im.getValue(node, 0);
    if (failed(input))
      return failure();
    FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
        shapeOf(*input), *target, [&] { return im.nodeError(node); });
    if (failed(shape))
      return failure();
    if (ArrayRef<int64_t>(*shape) == shapeOf(*input))
      return im.define(node, *input);
    return im.define(
        node,
        im.builder.create<nn::BroadcastToOp>(
            im.locOf(node),
            im.tensorType(*shape,
                          cast<ShapedType>(input->getType()).getElementType()),
            *input, im.builder.getF32FloatAttr(1.0f)));
  }
  FailureOr<HostTensor> data = im.getHost(node, 0);
  if (failed(data))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      data->shape, *target, [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  std::vector<int64_t> strides = data->strides();
  size_t lead = shape->size() - data->shape.size();
  HostTensor result = data->gather(*shape, [&](ArrayRef<int64_t> index) {
    int64_t from = 0;
    for (size_t d = 0; d < data->shape.size(); ++d)
      if (data->shape[d] != 1)
        from += index[lead + d] * strides[d];
    return from;
  });
  return im.defineHost(node, std::move(result));
}

static LogicalResult importTranspose(Importer &im,
                                     const onnx::NodeProto &node) {
  if (im.isHost(node.input(0))) {
    // A transpose of a tensor known at import time (F.pad's pads).
    FailureOr<HostTensor> data = im.getHost(node, 0);
    if (failed(data))
      return failure();
    int64_t rank = int64_t(data->shape.size());
    std::vector<int64_t> reversed(rank);
    for (int64_t d = 0; d < rank; ++d)
      reversed[d] = rank - 1 - d;
    std::vector<int64_t> perm = im.getInts(node, "perm", reversed);
    FailureOr<nn::Shape> shape = nn::inferTransposeShape(
        data->shape, perm, [&] { return im.nodeError(node); });
    if (failed(shape))
      return failure();
    // Result dimension d walks the input's dimension perm[d].
    std::vector<int64_t> strides = data->strides();
    HostTensor result = data->gather(*shape, [&](ArrayRef<int64_t> index) {
      int64_t from = 0;
      for (size_t d = 0; d < index.size(); ++d)
        from += index[d] * strides[perm[d]];
      return from;
    });
    return im.defineHost(node, std::move(result));
  }
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  // The default reverses the dimensions.
  std::vector<int64_t> reversed(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    reversed[d] = int64_t(shape.size() - 1 - d);
  std::vector<int64_t> perm = im.getInts(node, "perm", reversed);
  FailureOr<nn::Shape> result =
      nn::inferTransposeShape(shape, perm, [&] { return im.nodeError(node); });
  if (failed(result))
    return failure();
  auto type = im.tensorType(
      *result, cast<RankedTensorType>(input->getType()).getElementType());
  return im.define(node, im.builder.create<nn::TransposeOp>(
                             im.locOf(node), type, *input, perm));
}

static LogicalResult importFlatten(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  int64_t rank = shape.size();
  int64_t axis = im.getInt(node, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return im.nodeError(node) << "axis " << im.getInt(node, "axis", 1)
                              << " is out of range for rank " << rank;
  int64_t outer = nn::getNumElements(shape.take_front(axis));
  int64_t inner = nn::getNumElements(shape.drop_front(axis));
  auto type =
      im.tensorType({outer, inner},
                    cast<RankedTensorType>(input->getType()).getElementType());
  return im.define(
      node, im.builder.create<nn::ReshapeOp>(im.locOf(node), type, *input));
}

// Reshape, Squeeze and Unsqueeze of a tensor known at import time (shape
// arithmetic, F.pad's pads) change its host shape; of an activation they
// are an nn.reshape.
static FailureOr<Reshaped> getReshaped(Importer &im,
                                       const onnx::NodeProto &node) {
  Reshaped input;
  if (im.hasInput(node, 0) && im.isHost(node.input(0))) {
    FailureOr<HostTensor> host = im.getHost(node, 0);
    if (failed(host))
      return failure();
    input.host = std::move(*host);
    return input;
  }
  FailureOr<Value> value = im.getValue(node, 0);
  if (failed(value))
    return failure();
  input.value = *value;
  return input;
}

static LogicalResult defineReshaped(Importer &im, const onnx::NodeProto &node,
                                    Reshaped input, ArrayRef<int64_t> shape) {
  if (input.host) {
    input.host->shape.assign(shape.begin(), shape.end());
    return im.defineHost(node, std::move(*input.host));
  }
  auto type = im.tensorType(
      shape, cast<ShapedType>(input.value.getType()).getElementType());
  return im.define(node, im.builder.create<nn::ReshapeOp>(im.locOf(node), type,
                                                          input.value));
}

// Exporters bake the batch size into Reshape targets they compute from
// shapes (torch's multi-head attention views [T, B*heads, d]; x.view(B, T,
// heads, d) with B read from x.shape), so after --microbatch-size a target
// may no longer fit its input. The one case rewritten is the unambiguous
// one: the target repeats the input's leading dimensions up to the input's
// batch dimension (of the new batch size), and its entry there is a
// multiple of the exported batch size that, scaled to the new one, makes
// the element counts agree. A target that fits is never touched; where the
// batch is merged into another dimension ([T*B, D] viewed as [T, B, D])
// nothing says which factor it is, and the import stops naming the node.
static LogicalResult rebatchTarget(Importer &im, const onnx::NodeProto &node,
                                   ArrayRef<int64_t> inShape,
                                   std::vector<int64_t> &shape,
                                   int64_t inferred) {
  int64_t count = nn::getNumElements(inShape);
  auto fits = [&](const std::vector<int64_t> &candidate) {
    if (inferred < 0)
      return nn::getNumElements(candidate) == count;
    std::vector<int64_t> known = candidate;
    known[inferred] = 1;
    int64_t rest = nn::getNumElements(known);
    return rest != 0 && count % rest == 0;
  };
  if (fits(shape) || im.exportedBatch <= 0 || im.importedBatch <= 0)
    return success();
  size_t i = 0;
  while (i < shape.size() && i < inShape.size() &&
         (shape[i] == inShape[i] || int64_t(i) == inferred))
    ++i;
  std::vector<int64_t> scaled = shape;
  if (i < shape.size() && i < inShape.size() && int64_t(i) != inferred &&
      inShape[i] == im.importedBatch && shape[i] % im.exportedBatch == 0) {
    scaled[i] = shape[i] / im.exportedBatch * im.importedBatch;
    if (fits(scaled)) {
      shape = std::move(scaled);
      return success();
    }
  }
  return im.nodeError(node)
         << "cannot reshape " << nn::formatShape(inShape) << " to "
         << nn::formatShape(shape)
         << ": the exporter computed this target for batch "
         << "size " << im.exportedBatch << " and dpc cannot tell "
         << "which entry holds it; export the model at batch "
         << "size " << im.importedBatch
         << " instead of using --microbatch-size";
}

static LogicalResult importReshape(Importer &im, const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> target = im.getHostInts(node, 1);
  if (failed(target))
    return failure();
  FailureOr<Reshaped> input = getReshaped(im, node);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> inShape = input->shape();
  bool allowZero = im.getInt(node, "allowzero", 0) != 0;
  std::vector<int64_t> shape = *target;
  int64_t inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (i >= inShape.size())
        return im.nodeError(node)
               << "shape entry " << i << " copies a dimension the input lacks";
      shape[i] = inShape[i];
    } else if (shape[i] == -1) {
      if (inferred >= 0)
        return im.nodeError(node) << "shape has more than one -1";
      inferred = i;
    } else if (shape[i] < 0) {
      return im.nodeError(node) << "shape entry " << shape[i] << " is invalid";
    }
  }
  // A target folded from a shape subgraph can hold any numbers: their
  // product must be counted without overflow before it is compared with
  // the input's element count.
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (int64_t(i) != inferred &&
        __builtin_mul_overflow(known, shape[i], &known))
      return im.nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                                << " to " << nn::formatShape(*target)
                                << ": more elements than a 64-bit count holds";
  int64_t count = nn::getNumElements(inShape);
  if (failed(rebatchTarget(im, node, inShape, shape, inferred)))
    return failure();
  if (inferred >= 0) {
    shape[inferred] = 1;
    int64_t known = nn::getNumElements(shape);
    if (known == 0 || count % known != 0)
      return im.nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                                << " to " << nn::formatShape(*target);
    shape[inferred] = count / known;
  }
  if (nn::getNumElements(shape) != count)
    return im.nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                              << " to " << nn::formatShape(shape);
  return defineReshaped(im, node, std::move(*input), shape);
}

static LogicalResult importIdentity(Importer &im, const onnx::NodeProto &node) {
  if (im.isHost(node.input(0))) {
    FailureOr<HostTensor> t = im.getHost(node, 0);
    return failed(t) ? failure() : im.defineHost(node, std::move(*t));
  }
  FailureOr<Value> input = im.getValue(node, 0);
  return failed(input) ? failure() : im.define(node, *input);
}

//===----------------------------------------------------------------------===//
// Handlers: host evaluation of shape subgraphs
//===----------------------------------------------------------------------===//

static LogicalResult importConstant(Importer &im, const onnx::NodeProto &node) {
  if (const onnx::AttributeProto *value = im.findAttr(node, "value")) {
    FailureOr<HostTensor> t = im.readTensor(value->t(), im.locOf(node));
    return failed(t) ? failure() : im.defineHost(node, std::move(*t));
  }
  if (const onnx::AttributeProto *ints = im.findAttr(node, "value_ints"))
    return im.defineHost(
        node, HostTensor::vector({ints->ints().begin(), ints->ints().end()}));
  if (const onnx::AttributeProto *i = im.findAttr(node, "value_int")) {
    HostTensor t;
    t.ints = {i->i()};
    return im.defineHost(node, std::move(t));
  }
  if (const onnx::AttributeProto *f = im.findAttr(node, "value_float")) {
    HostTensor t;
    t.isFloat = true;
    t.floats = {f->f()};
    return im.defineHost(node, std::move(t));
  }
  return im.nodeError(node) << "only value, value_int, value_ints and "
                               "value_float constants are supported";
}

static LogicalResult importShape(Importer &im, const onnx::NodeProto &node) {
  std::vector<int64_t> shape;
  if (im.isHost(node.input(0))) {
    FailureOr<HostTensor> t = im.getHost(node, 0);
    if (failed(t))
      return failure();
    shape = t->shape;
  } else {
    FailureOr<Value> input = im.getValue(node, 0);
    if (failed(input))
      return failure();
    shape.assign(shapeOf(*input).begin(), shapeOf(*input).end());
  }
  int64_t rank = shape.size();
  int64_t start = im.getInt(node, "start", 0),
          end = im.getInt(node, "end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  return im.defineHost(
      node, HostTensor::vector(std::vector<int64_t>(
                shape.begin() + start, shape.begin() + std::max(start, end))));
}

// Unsqueeze and Squeeze fold on the host for tensors known at import time;
// of an activation they are a reshape.
static LogicalResult importUnsqueeze(Importer &im,
                                     const onnx::NodeProto &node) {
  FailureOr<Reshaped> input = getReshaped(im, node);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> inputShape = input->shape();
  FailureOr<std::vector<int64_t>> axes = im.getHostInts(node, 1);
  if (failed(axes))
    return failure();
  int64_t rank = inputShape.size() + axes->size();
  std::vector<int64_t> shape;
  std::vector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || inserted[a])
      return im.nodeError(node) << "axis " << axis << " is invalid";
    inserted[a] = true;
  }
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : inputShape[next++]);
  return defineReshaped(im, node, std::move(*input), shape);
}

static LogicalResult importSqueeze(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Reshaped> input = getReshaped(im, node);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> inputShape = input->shape();
  std::vector<int64_t> axes;
  if (im.hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> given = im.getHostInts(node, 1);
    if (failed(given))
      return failure();
    axes = *given;
  }
  int64_t rank = inputShape.size();
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    bool named = llvm::any_of(
        axes, [&](int64_t a) { return (a < 0 ? a + rank : a) == i; });
    bool drop = axes.empty() ? inputShape[i] == 1 : named;
    if (drop && inputShape[i] != 1)
      return im.nodeError(node) << "cannot squeeze dimension " << i
                                << " of size " << inputShape[i];
    if (!drop)
      shape.push_back(inputShape[i]);
  }
  return defineReshaped(im, node, std::move(*input), shape);
}

static LogicalResult importConcat(Importer &im, const onnx::NodeProto &node) {
  // Integer tensors known at import time fold on the host (shape
  // arithmetic), and so do float vectors of constants (Resize's scales, which
  // a training-mode export builds by a Concat of two Constants); anything
  // else is a concatenation of activations.
  bool hostOnly = true;
  int floatInputs = 0;
  for (int i = 0; i < node.input_size(); ++i) {
    auto host = im.hostValues.find(node.input(i));
    bool isFloat = host != im.hostValues.end() && host->second.isFloat;
    hostOnly = hostOnly && im.isHost(node.input(i)) &&
               (!isFloat || host->second.shape.size() == 1);
    floatInputs += isFloat;
  }
  bool floats = floatInputs == node.input_size();
  if (floatInputs != 0 && !floats)
    hostOnly = false; // float constants among integers: activations
  if (!hostOnly) {
    // Activations (a float constant among them is a frozen parameter).
    SmallVector<Value> inputs;
    for (int i = 0; i < node.input_size(); ++i) {
      FailureOr<Value> input = im.getValue(node, i);
      if (failed(input))
        return failure();
      inputs.push_back(*input);
    }
    int64_t rank = int64_t(shapeOf(inputs.front()).size());
    int64_t axis = im.getInt(node, "axis", 0);
    if (axis < 0)
      axis += rank;
    SmallVector<ArrayRef<int64_t>> shapes;
    for (Value input : inputs)
      shapes.push_back(shapeOf(input));
    FailureOr<nn::Shape> shape =
        nn::inferConcatShape(shapes, axis, [&] { return im.nodeError(node); });
    if (failed(shape))
      return failure();
    auto type = im.tensorType(
        *shape,
        cast<RankedTensorType>(inputs.front().getType()).getElementType());
    return im.define(node, im.builder.create<nn::ConcatOp>(im.locOf(node), type,
                                                           inputs, axis));
  }
  // Host tensors of one rank, joined along the axis: each part contributes
  // its block of the axis and the dimensions after it, once per index of
  // the dimensions before it.
  std::vector<HostTensor> parts;
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<HostTensor> part = im.getHost(node, i);
    if (failed(part))
      return failure();
    if (part->isFloat != floats)
      return im.nodeError(node) << "folds only tensors of one element type";
    parts.push_back(std::move(*part));
  }
  SmallVector<ArrayRef<int64_t>> shapes;
  for (const HostTensor &part : parts)
    shapes.push_back(part.shape);
  int64_t axis = im.getInt(node, "axis", 0);
  if (axis < 0)
    axis += int64_t(shapes.front().size());
  FailureOr<nn::Shape> shape =
      nn::inferConcatShape(shapes, axis, [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  HostTensor result;
  result.isFloat = floats;
  result.shape.assign(shape->begin(), shape->end());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= result.shape[d];
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor &part : parts) {
      int64_t block = part.size() / outer;
      if (floats)
        result.floats.insert(result.floats.end(),
                             part.floats.begin() + o * block,
                             part.floats.begin() + (o + 1) * block);
      else
        result.ints.insert(result.ints.end(), part.ints.begin() + o * block,
                           part.ints.begin() + (o + 1) * block);
    }
  }
  result.isBool = parts.front().isBool;
  return im.defineHost(node, std::move(result));
}

// Pad in constant mode with pads (and the value) known at import time.
static LogicalResult importPad(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  std::string mode = im.getString(node, "mode", "constant");
  if (mode != "constant")
    return im.nodeError(node)
           << "mode '" << mode << "' is not supported (only constant)";
  FailureOr<std::vector<int64_t>> pads = im.getHostInts(node, 1);
  if (failed(pads))
    return failure();
  float value = 0.0f;
  if (im.hasInput(node, 2)) {
    FailureOr<HostTensor> given = im.getHost(node, 2);
    if (failed(given))
      return failure();
    if (!given->isFloat || given->floats.size() != 1)
      return im.nodeError(node) << "expects a float scalar pad value";
    value = given->floats[0];
  }
  FailureOr<nn::Shape> shape = nn::inferPadShape(
      shapeOf(*input), *pads, [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = im.tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  return im.define(
      node, im.builder.create<nn::PadOp>(im.locOf(node), type, *input,
                                         im.builder.getDenseI64ArrayAttr(*pads),
                                         im.builder.getF32FloatAttr(value)));
}

// Resize (and Upsample, which the version converter turns into Resize) in
// nearest or linear mode, its scales or sizes known at import time: one
// nn.resize over the spatial dimensions.
static LogicalResult importResize(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*input);
  std::string mode = im.getString(node, "mode", "nearest");
  std::string coordinates =
      im.getString(node, "coordinate_transformation_mode", "half_pixel");
  std::string rounding =
      im.getString(node, "nearest_mode", "round_prefer_floor");
  if (mode == "cubic")
    return im.nodeError(node) << "mode 'cubic' is not supported (only "
                                 "'nearest' and 'linear')";
  if (failed(nn::resizeCodes(mode, coordinates, rounding,
                             [&] { return im.nodeError(node); })))
    return failure();
  // Scales (input 2) or sizes (input 3): an empty tensor counts as absent.
  std::optional<HostTensor> scales, sizes;
  for (int index : {2, 3}) {
    if (!im.hasInput(node, index))
      continue;
    FailureOr<HostTensor> given = im.getHost(node, index);
    if (failed(given))
      return failure();
    if (given->size() > 0)
      (index == 2 ? scales : sizes) = std::move(*given);
  }
  if (bool(scales) == bool(sizes))
    return im.nodeError(node) << "expects either scales or sizes";
  size_t rank = in.size();
  if (scales && (!scales->isFloat || size_t(scales->size()) != rank))
    return im.nodeError(node) << "expects " << rank << " float scales";
  if (sizes && (sizes->isFloat || size_t(sizes->size()) != rank))
    return im.nodeError(node) << "expects " << rank << " integer sizes";
  // The batch and channels keep their sizes (a re-batched import's batch
  // differs from the exported one that sizes hold).
  for (size_t d = 0; d < std::min<size_t>(rank, 2); ++d)
    if (scales ? scales->floats[d] != 1.0f
               : (d == 1 && sizes->ints[d] != in[d]))
      return im.nodeError(node)
             << "resizes only the spatial dimensions (2 onwards), not "
             << (d == 0 ? "the batch" : "the channels");
  SmallVector<double> spatialScales(rank > 2 ? rank - 2 : 0, 0.0);
  SmallVector<int64_t> spatialSizes;
  for (size_t d = 2; d < rank; ++d) {
    if (scales)
      spatialScales[d - 2] = scales->floats[d];
    else
      spatialSizes.push_back(sizes->ints[d]);
  }
  FailureOr<nn::Shape> shape = nn::inferResizeShape(
      in, spatialScales, spatialSizes, [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = im.tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  return im.define(node, im.builder.create<nn::ResizeOp>(
                             im.locOf(node), type, *input, spatialScales, mode,
                             coordinates, rounding));
}

// ConstantOfShape: a tensor known at import time (PyTorch builds F.pad's
// pads with it).
static LogicalResult importConstantOfShape(Importer &im,
                                           const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> shape = im.getHostInts(node, 0);
  if (failed(shape))
    return failure();
  for (int64_t dim : *shape)
    if (dim < 0)
      return im.nodeError(node) << "expects a non-negative shape";
  HostTensor result;
  result.shape = *shape;
  result.isFloat = true;
  float floatValue = 0.0f;
  int64_t intValue = 0;
  if (const onnx::AttributeProto *attr = im.findAttr(node, "value")) {
    FailureOr<HostTensor> value = im.readTensor(attr->t(), im.locOf(node));
    if (failed(value))
      return failure();
    if (value->size() != 1)
      return im.nodeError(node) << "expects a one-element value";
    result.isFloat = value->isFloat;
    if (value->isFloat)
      floatValue = value->floats[0];
    else
      intValue = value->ints[0];
  }
  int64_t count = nn::getNumElements(result.shape);
  if (result.isFloat)
    result.floats.assign(count, floatValue);
  else
    result.ints.assign(count, intValue);
  return im.defineHost(node, std::move(result));
}

static LogicalResult importCast(Importer &im, const onnx::NodeProto &node) {
  int64_t to = im.getInt(node, "to", 0);
  // dpc trains in float32 (its --precision bf16 is its own choice): float64
  // values are read as float32, casts to float64 included. A cast to a
  // 16-bit float rounds, which float32 arithmetic would not reproduce.
  if (to == onnx::TensorProto::DOUBLE)
    to = onnx::TensorProto::FLOAT;
  if (to == onnx::TensorProto::FLOAT16 || to == onnx::TensorProto::BFLOAT16)
    return im.nodeError(node)
           << "casts to a 16-bit float type, which dpc does not compute in "
              "(it trains in float32; --precision bf16 picks its own bf16 "
              "ops): export the model in float32, or keep half precision "
              "in the initializers only";
  if (!im.isHost(node.input(0))) {
    // Casts of activations: masks to and from bool, ids to float.
    FailureOr<Value> input = im.getValue(node, 0);
    if (failed(input))
      return failure();
    Type elementType;
    if (to == onnx::TensorProto::FLOAT)
      elementType = im.builder.getF32Type();
    else if (to == onnx::TensorProto::BOOL)
      elementType = im.builder.getI1Type();
    else if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32)
      elementType = im.builder.getI64Type(); // int32 widened, as ids are
    else
      return im.nodeError(node) << "casts tensors only to float, int64, int32 "
                                   "and bool";
    auto type = im.tensorType(shapeOf(*input), elementType);
    if (type == input->getType())
      return im.define(node, *input);
    if (!cast<ShapedType>(input->getType()).getElementType().isF32() &&
        !cast<ShapedType>(input->getType()).getElementType().isInteger(64) &&
        !cast<ShapedType>(input->getType()).getElementType().isInteger(1))
      return im.nodeError(node) << "casts only float32, int64 and bool tensors";
    return im.define(
        node, im.builder.create<nn::CastOp>(im.locOf(node), type, *input));
  }
  FailureOr<HostTensor> data = im.getHost(node, 0);
  if (failed(data))
    return failure();
  if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32) {
    if (data->isFloat) {
      for (float f : data->floats)
        data->ints.push_back(static_cast<int64_t>(f));
      data->floats.clear();
      data->isFloat = false;
    }
    data->isBool = false;
    return im.defineHost(node, std::move(*data));
  }
  if (to == onnx::TensorProto::BOOL) {
    if (data->isFloat)
      for (float f : data->floats)
        data->ints.push_back(f != 0.0f);
    else
      for (int64_t &i : data->ints)
        i = i != 0;
    data->floats.clear();
    data->isFloat = false;
    data->isBool = true;
    return im.defineHost(node, std::move(*data));
  }
  if (to == onnx::TensorProto::FLOAT) {
    if (!data->isFloat) {
      for (int64_t i : data->ints)
        data->floats.push_back(static_cast<float>(i));
      data->ints.clear();
      data->isFloat = true;
      data->isBool = false;
    }
    return im.defineHost(node, std::move(*data));
  }
  return im.nodeError(node)
         << "folds only casts to int64, int32, float and bool";
}

ArrayRef<HandlerEntry> mlir::dpc::onnx_frontend::detail::tensorHandlers() {
  static const HandlerEntry rows[] = {
      {"Expand", 13, &importExpand},
      {"Transpose", 13, &importTranspose},
      {"Flatten", 13, &importFlatten},
      {"Reshape", 13, &importReshape},
      {"Reshape", 14, &importReshape},
      {"Identity", 13, &importIdentity},
      {"Identity", 14, &importIdentity},
      {"Identity", 16, &importIdentity},
      {"Constant", 13, &importConstant},
      {"Shape", 13, &importShape},
      {"Shape", 15, &importShape},
      {"Unsqueeze", 13, &importUnsqueeze},
      {"Squeeze", 13, &importSqueeze},
      {"Concat", 13, &importConcat},
      {"Pad", 13, &importPad},
      {"Resize", 13, &importResize},
      {"ConstantOfShape", 9, &importConstantOfShape},
      {"Cast", 13, &importCast},
  };
  return rows;
}
