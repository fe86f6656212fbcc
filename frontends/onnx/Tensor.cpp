//===- Tensor.cpp - ONNX tensor ops to nn ---------------------------------===//
//
// The handlers of ONNX's tensor ops, as onnx-mlir's Tensor/ folder groups
// them: Expand, Transpose, Flatten, Reshape (with the re-batching of targets
// that exporters computed at the exported batch size), Identity, Constant,
// Shape, Gather, Unsqueeze, Squeeze, Concat, Slice, Split, Pad,
// ConstantOfShape and Cast. Most fold on the host when their input is known
// at import time (shape subgraphs) and build nn ops on activations
// otherwise. Their rows of the handler table end the file.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace mlir::dpc::onnx_frontend::detail;
using mlir::dpc::nn::shapeOf;

// Expand by numpy broadcasting: folded on the host for a tensor known at
// import time (torch's zero initial states of nn.LSTM), nn.broadcast_to of
// an activation.
LogicalResult Importer::importExpand(const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> target = getHostInts(node, 1);
  if (failed(target))
    return failure();
  if (!isHost(node.input(0))) {
    FailureOr<Value> input = getValue(node, 0);
    if (failed(input))
      return failure();
    FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
        shapeOf(*input), *target, [&] { return nodeError(node); });
    if (failed(shape))
      return failure();
    if (ArrayRef<int64_t>(*shape) == shapeOf(*input))
      return define(node, *input);
    return define(
        node,
        builder.create<nn::BroadcastToOp>(
            locOf(node),
            tensorType(*shape,
                       cast<ShapedType>(input->getType()).getElementType()),
            *input, builder.getF32FloatAttr(1.0f)));
  }
  FailureOr<HostTensor> data = getHost(node, 0);
  if (failed(data))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      data->shape, *target, [&] { return nodeError(node); });
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
  return defineHost(node, std::move(result));
}

LogicalResult Importer::importTranspose(const onnx::NodeProto &node) {
  if (isHost(node.input(0))) {
    // A transpose of a tensor known at import time (F.pad's pads).
    FailureOr<HostTensor> data = getHost(node, 0);
    if (failed(data))
      return failure();
    int64_t rank = int64_t(data->shape.size());
    std::vector<int64_t> reversed(rank);
    for (int64_t d = 0; d < rank; ++d)
      reversed[d] = rank - 1 - d;
    std::vector<int64_t> perm = getInts(node, "perm", reversed);
    FailureOr<nn::Shape> shape = nn::inferTransposeShape(
        data->shape, perm, [&] { return nodeError(node); });
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
    return defineHost(node, std::move(result));
  }
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  // The default reverses the dimensions.
  std::vector<int64_t> reversed(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    reversed[d] = int64_t(shape.size() - 1 - d);
  std::vector<int64_t> perm = getInts(node, "perm", reversed);
  FailureOr<nn::Shape> result =
      nn::inferTransposeShape(shape, perm, [&] { return nodeError(node); });
  if (failed(result))
    return failure();
  auto type = tensorType(
      *result, cast<RankedTensorType>(input->getType()).getElementType());
  return define(
      node, builder.create<nn::TransposeOp>(locOf(node), type, *input, perm));
}

LogicalResult Importer::importFlatten(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  int64_t rank = shape.size();
  int64_t axis = getInt(node, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return nodeError(node) << "axis " << getInt(node, "axis", 1)
                           << " is out of range for rank " << rank;
  int64_t outer = nn::getNumElements(shape.take_front(axis));
  int64_t inner = nn::getNumElements(shape.drop_front(axis));
  auto type =
      tensorType({outer, inner},
                 cast<RankedTensorType>(input->getType()).getElementType());
  return define(node, builder.create<nn::ReshapeOp>(locOf(node), type, *input));
}

// Reshape, Squeeze and Unsqueeze of a tensor known at import time (shape
// arithmetic, F.pad's pads) change its host shape; of an activation they
// are an nn.reshape.
FailureOr<Importer::Reshaped>
Importer::getReshaped(const onnx::NodeProto &node) {
  Reshaped input;
  if (hasInput(node, 0) && isHost(node.input(0))) {
    FailureOr<HostTensor> host = getHost(node, 0);
    if (failed(host))
      return failure();
    input.host = std::move(*host);
    return input;
  }
  FailureOr<Value> value = getValue(node, 0);
  if (failed(value))
    return failure();
  input.value = *value;
  return input;
}

LogicalResult Importer::defineReshaped(const onnx::NodeProto &node,
                                       Reshaped input,
                                       ArrayRef<int64_t> shape) {
  if (input.host) {
    input.host->shape.assign(shape.begin(), shape.end());
    return defineHost(node, std::move(*input.host));
  }
  auto type = tensorType(
      shape, cast<ShapedType>(input.value.getType()).getElementType());
  return define(node,
                builder.create<nn::ReshapeOp>(locOf(node), type, input.value));
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
LogicalResult Importer::rebatchTarget(const onnx::NodeProto &node,
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
  if (fits(shape) || exportedBatch <= 0 || importedBatch <= 0)
    return success();
  size_t i = 0;
  while (i < shape.size() && i < inShape.size() &&
         (shape[i] == inShape[i] || int64_t(i) == inferred))
    ++i;
  std::vector<int64_t> scaled = shape;
  if (i < shape.size() && i < inShape.size() && int64_t(i) != inferred &&
      inShape[i] == importedBatch && shape[i] % exportedBatch == 0) {
    scaled[i] = shape[i] / exportedBatch * importedBatch;
    if (fits(scaled)) {
      shape = std::move(scaled);
      return success();
    }
  }
  return nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                         << " to " << nn::formatShape(shape)
                         << ": the exporter computed this target for batch "
                         << "size " << exportedBatch << " and dpc cannot tell "
                         << "which entry holds it; export the model at batch "
                         << "size " << importedBatch
                         << " instead of using --microbatch-size";
}

LogicalResult Importer::importReshape(const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> target = getHostInts(node, 1);
  if (failed(target))
    return failure();
  FailureOr<Reshaped> input = getReshaped(node);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> inShape = input->shape();
  bool allowZero = getInt(node, "allowzero", 0) != 0;
  std::vector<int64_t> shape = *target;
  int64_t inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (i >= inShape.size())
        return nodeError(node)
               << "shape entry " << i << " copies a dimension the input lacks";
      shape[i] = inShape[i];
    } else if (shape[i] == -1) {
      if (inferred >= 0)
        return nodeError(node) << "shape has more than one -1";
      inferred = i;
    } else if (shape[i] < 0) {
      return nodeError(node) << "shape entry " << shape[i] << " is invalid";
    }
  }
  // A target folded from a shape subgraph can hold any numbers: their
  // product must be counted without overflow before it is compared with
  // the input's element count.
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (int64_t(i) != inferred &&
        __builtin_mul_overflow(known, shape[i], &known))
      return nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                             << " to " << nn::formatShape(*target)
                             << ": more elements than a 64-bit count holds";
  int64_t count = nn::getNumElements(inShape);
  if (failed(rebatchTarget(node, inShape, shape, inferred)))
    return failure();
  if (inferred >= 0) {
    shape[inferred] = 1;
    int64_t known = nn::getNumElements(shape);
    if (known == 0 || count % known != 0)
      return nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                             << " to " << nn::formatShape(*target);
    shape[inferred] = count / known;
  }
  if (nn::getNumElements(shape) != count)
    return nodeError(node) << "cannot reshape " << nn::formatShape(inShape)
                           << " to " << nn::formatShape(shape);
  return defineReshaped(node, std::move(*input), shape);
}

LogicalResult Importer::importIdentity(const onnx::NodeProto &node) {
  if (isHost(node.input(0))) {
    FailureOr<HostTensor> t = getHost(node, 0);
    return failed(t) ? failure() : defineHost(node, std::move(*t));
  }
  FailureOr<Value> input = getValue(node, 0);
  return failed(input) ? failure() : define(node, *input);
}

//===----------------------------------------------------------------------===//
// Handlers: host evaluation of shape subgraphs
//===----------------------------------------------------------------------===//

LogicalResult Importer::importConstant(const onnx::NodeProto &node) {
  if (const onnx::AttributeProto *value = findAttr(node, "value")) {
    FailureOr<HostTensor> t = readTensor(value->t(), locOf(node));
    return failed(t) ? failure() : defineHost(node, std::move(*t));
  }
  if (const onnx::AttributeProto *ints = findAttr(node, "value_ints"))
    return defineHost(
        node, HostTensor::vector({ints->ints().begin(), ints->ints().end()}));
  if (const onnx::AttributeProto *i = findAttr(node, "value_int")) {
    HostTensor t;
    t.ints = {i->i()};
    return defineHost(node, std::move(t));
  }
  if (const onnx::AttributeProto *f = findAttr(node, "value_float")) {
    HostTensor t;
    t.isFloat = true;
    t.floats = {f->f()};
    return defineHost(node, std::move(t));
  }
  return nodeError(node) << "only value, value_int, value_ints and "
                            "value_float constants are supported";
}

LogicalResult Importer::importShape(const onnx::NodeProto &node) {
  std::vector<int64_t> shape;
  if (isHost(node.input(0))) {
    FailureOr<HostTensor> t = getHost(node, 0);
    if (failed(t))
      return failure();
    shape = t->shape;
  } else {
    FailureOr<Value> input = getValue(node, 0);
    if (failed(input))
      return failure();
    shape.assign(shapeOf(*input).begin(), shapeOf(*input).end());
  }
  int64_t rank = shape.size();
  int64_t start = getInt(node, "start", 0), end = getInt(node, "end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  return defineHost(
      node, HostTensor::vector(std::vector<int64_t>(
                shape.begin() + start, shape.begin() + std::max(start, end))));
}

LogicalResult Importer::importGather(const onnx::NodeProto &node) {
  if (!hasInput(node, 0) || !hasInput(node, 1))
    return nodeError(node) << "expects data and indices";
  if (!isHost(node.input(0)) || !isHost(node.input(1)))
    return importTensorGather(node);
  FailureOr<HostTensor> data = getHost(node, 0);
  FailureOr<HostTensor> indices =
      failed(data) ? FailureOr<HostTensor>(failure()) : getHost(node, 1);
  if (failed(indices))
    return failure();
  if (data->isFloat || data->shape.size() != 1 || getInt(node, "axis", 0) != 0)
    return nodeError(node) << "folds only gathers from an integer vector";
  HostTensor result;
  result.shape = indices->shape;
  int64_t size = data->ints.size();
  for (int64_t index : indices->ints) {
    if (index < -size || index >= size)
      return nodeError(node) << "index " << index << " is out of range";
    result.ints.push_back(data->ints[index < 0 ? index + size : index]);
  }
  return defineHost(node, std::move(result));
}

// The rows constant gather indices name, negative ones counted from the end
// of a dimension of `size`.
static std::vector<int64_t> rowsOf(const HostTensor &indices, int64_t size) {
  std::vector<int64_t> rows;
  for (int64_t index : indices.ints)
    rows.push_back(index < 0 ? index + size : index);
  return rows;
}

// Whether `rows` step evenly upwards (one row counts), which a slice reads.
static bool isArithmeticSequence(const std::vector<int64_t> &rows) {
  int64_t step = rows.size() > 1 ? rows[1] - rows[0] : 1;
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i] - rows[i - 1] != step || step < 1)
      return false;
  return true;
}

// Gather of tensors: rows of a float table (an embedding) picked by token
// ids the model computes or reads; with indices known at import time that
// step evenly (positions 0..T-1, one class token), a slice; with other
// indices known at import time (a relative-position bias table read through
// a constant index map, token types that are all 0), rows along axis 0 by a
// constant index tensor, as for computed ids.
// Rows of `data` along axis 0 picked by input 1 as a value: ids the model
// computes or reads, or a constant index tensor materialized as one.
LogicalResult Importer::gatherRows(const onnx::NodeProto &node, Value data,
                                   int64_t axis) {
  FailureOr<Value> indices = getValue(node, 1);
  if (failed(indices))
    return failure();
  if (!cast<RankedTensorType>(indices->getType())
           .getElementType()
           .isInteger(64))
    return nodeError(node) << "expects int64 indices, got "
                           << indices->getType();
  if (axis != 0)
    return nodeError(node) << "gathers by computed indices along axis 0 "
                           << "only (an embedding), not axis " << axis;
  ArrayRef<int64_t> shape = shapeOf(data);
  nn::Shape result(shapeOf(*indices));
  result.append(shape.begin() + 1, shape.end());
  Type element = cast<RankedTensorType>(data.getType()).getElementType();
  return define(node, builder.create<nn::GatherOp>(locOf(node),
                                                   tensorType(result, element),
                                                   data, *indices));
}

LogicalResult Importer::importTensorGather(const onnx::NodeProto &node) {
  FailureOr<Value> data = getValue(node, 0);
  if (failed(data))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*data);
  int64_t rank = int64_t(shape.size());
  int64_t axis = getInt(node, "axis", 0);
  if (axis < -rank || axis >= rank)
    return nodeError(node) << "axis " << axis << " is out of range for rank "
                           << rank;
  if (axis < 0)
    axis += rank;
  Type element = cast<RankedTensorType>(data->getType()).getElementType();
  if (!isa<FloatType>(element))
    return nodeError(node) << "gathers from float tensors only, got "
                           << data->getType();
  if (!isHost(node.input(1)))
    return gatherRows(node, *data, axis);
  FailureOr<HostTensor> indices = getHost(node, 1);
  if (failed(indices))
    return failure();
  if (indices->isFloat || indices->ints.empty())
    return nodeError(node) << "expects integer indices";
  int64_t dim = shape[axis];
  for (int64_t index : indices->ints)
    if (index < -dim || index >= dim)
      return nodeError(node) << "index " << index << " is out of range for "
                             << "dimension " << axis << " of size " << dim;
  std::vector<int64_t> rows = rowsOf(*indices, dim);
  if (!isArithmeticSequence(rows)) {
    if (axis == 0)
      return gatherRows(node, *data, axis);
    return nodeError(node) << "gathers along axis " << axis
                           << " constant indices that are not an increasing "
                           << "arithmetic sequence; dpc gathers such indices "
                           << "along axis 0 only";
  }
  int64_t step = rows.size() > 1 ? rows[1] - rows[0] : 1;
  std::vector<int64_t> offsets(rank, 0), steps(rank, 1);
  nn::Shape box(shape.begin(), shape.end());
  offsets[axis] = rows.front();
  steps[axis] = step;
  box[axis] = int64_t(rows.size());
  Value slice = builder.create<nn::SliceOp>(
      locOf(node), tensorType(box, element), *data, offsets, steps);
  // The indices' shape replaces the gathered dimension (none for a scalar).
  nn::Shape result(shape.begin(), shape.begin() + axis);
  result.append(indices->shape.begin(), indices->shape.end());
  result.append(shape.begin() + axis + 1, shape.end());
  if (result == box)
    return define(node, slice);
  return define(node, builder.create<nn::ReshapeOp>(
                          locOf(node), tensorType(result, element), slice));
}

// Unsqueeze and Squeeze fold on the host for tensors known at import time;
// of an activation they are a reshape.
LogicalResult Importer::importUnsqueeze(const onnx::NodeProto &node) {
  FailureOr<Reshaped> input = getReshaped(node);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> inputShape = input->shape();
  FailureOr<std::vector<int64_t>> axes = getHostInts(node, 1);
  if (failed(axes))
    return failure();
  int64_t rank = inputShape.size() + axes->size();
  std::vector<int64_t> shape;
  std::vector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || inserted[a])
      return nodeError(node) << "axis " << axis << " is invalid";
    inserted[a] = true;
  }
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : inputShape[next++]);
  return defineReshaped(node, std::move(*input), shape);
}

LogicalResult Importer::importSqueeze(const onnx::NodeProto &node) {
  FailureOr<Reshaped> input = getReshaped(node);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> inputShape = input->shape();
  std::vector<int64_t> axes;
  if (hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> given = getHostInts(node, 1);
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
      return nodeError(node) << "cannot squeeze dimension " << i << " of size "
                             << inputShape[i];
    if (!drop)
      shape.push_back(inputShape[i]);
  }
  return defineReshaped(node, std::move(*input), shape);
}

LogicalResult Importer::importConcat(const onnx::NodeProto &node) {
  // Integer tensors known at import time fold on the host (shape
  // arithmetic); anything else is a concatenation of activations.
  bool hostOnly = true;
  for (int i = 0; i < node.input_size(); ++i) {
    auto host = hostValues.find(node.input(i));
    hostOnly = hostOnly && isHost(node.input(i)) &&
               (host == hostValues.end() || !host->second.isFloat);
  }
  if (!hostOnly) {
    // Activations (a float constant among them is a frozen parameter).
    SmallVector<Value> inputs;
    for (int i = 0; i < node.input_size(); ++i) {
      FailureOr<Value> input = getValue(node, i);
      if (failed(input))
        return failure();
      inputs.push_back(*input);
    }
    int64_t rank = int64_t(shapeOf(inputs.front()).size());
    int64_t axis = getInt(node, "axis", 0);
    if (axis < 0)
      axis += rank;
    SmallVector<ArrayRef<int64_t>> shapes;
    for (Value input : inputs)
      shapes.push_back(shapeOf(input));
    FailureOr<nn::Shape> shape =
        nn::inferConcatShape(shapes, axis, [&] { return nodeError(node); });
    if (failed(shape))
      return failure();
    auto type = tensorType(
        *shape,
        cast<RankedTensorType>(inputs.front().getType()).getElementType());
    return define(
        node, builder.create<nn::ConcatOp>(locOf(node), type, inputs, axis));
  }
  HostTensor result;
  result.shape = {0};
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<HostTensor> part = getHost(node, i);
    if (failed(part))
      return failure();
    if (part->isFloat || part->shape.size() != 1)
      return nodeError(node) << "folds only concatenations of integer "
                                "vectors";
    result.ints.insert(result.ints.end(), part->ints.begin(), part->ints.end());
  }
  result.shape[0] = result.ints.size();
  return defineHost(node, std::move(result));
}

// Slice's starts, ends, axes and steps, known at import time; axes default
// to the first dimensions and steps to 1.
FailureOr<Importer::SliceInputs>
Importer::sliceInputs(const onnx::NodeProto &node) {
  SliceInputs in;
  std::vector<int64_t> *lists[] = {&in.starts, &in.ends, &in.axes, &in.steps};
  for (int index = 1; index <= 4; ++index) {
    if (index > 2 && !hasInput(node, index))
      continue;
    FailureOr<std::vector<int64_t>> given = getHostInts(node, index);
    if (failed(given))
      return failure();
    *lists[index - 1] = *given;
    if (index == 2) {
      in.axes.resize(in.starts.size());
      std::iota(in.axes.begin(), in.axes.end(), 0);
      in.steps.assign(in.starts.size(), 1);
    }
  }
  size_t n = in.starts.size();
  if (in.ends.size() != n || in.axes.size() != n || in.steps.size() != n)
    return nodeError(node) << "expects as many starts, ends, axes and steps";
  return in;
}

// ONNX Slice of an activation: starts, ends, axes and steps known at import
// time, normalized to one offset and one positive step per dimension.
LogicalResult Importer::importActivationSlice(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  int64_t rank = int64_t(shape.size());
  FailureOr<SliceInputs> inputs = sliceInputs(node);
  if (failed(inputs))
    return failure();
  const std::vector<int64_t> &starts = inputs->starts, &ends = inputs->ends,
                             &axes = inputs->axes, &steps = inputs->steps;
  std::vector<int64_t> offsets(rank, 0), strides(rank, 1);
  nn::Shape result(shape.begin(), shape.end());
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || seen[axis])
      return nodeError(node) << "axis " << axes[i] << " is out of range or "
                             << "repeated for rank " << rank;
    seen[axis] = true;
    if (steps[i] < 1)
      return nodeError(node) << "step " << steps[i] << " along axis " << axis
                             << " is not supported (only positive steps)";
    // ONNX's clamping: negative indices count from the end, then both ends
    // are clamped to [0, dim].
    int64_t dim = shape[axis];
    auto clampIndex = [&](int64_t index) {
      if (index < 0)
        index = index < -dim ? 0 : index + dim;
      return std::min(index, dim);
    };
    int64_t begin = clampIndex(starts[i]), end = clampIndex(ends[i]);
    int64_t size = end > begin ? (end - begin + steps[i] - 1) / steps[i] : 0;
    if (size == 0)
      return nodeError(node) << "the slice along axis " << axis
                             << " is empty, which dpc does not support";
    offsets[axis] = begin;
    strides[axis] = steps[i];
    result[axis] = size;
  }
  auto type = tensorType(
      result, cast<RankedTensorType>(input->getType()).getElementType());
  return define(node, builder.create<nn::SliceOp>(locOf(node), type, *input,
                                                  offsets, strides));
}

// Split into consecutive parts along an axis: one nn.slice per output.
LogicalResult Importer::importSplit(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  int64_t rank = int64_t(shape.size());
  int64_t axis = getInt(node, "axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return nodeError(node) << "axis " << getInt(node, "axis", 0)
                           << " is out of range for rank " << rank;
  int64_t parts = node.output_size();
  std::vector<int64_t> sizes;
  if (hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> given = getHostInts(node, 1);
    if (failed(given))
      return failure();
    sizes = *given;
  } else {
    if (parts < 1 || shape[axis] % parts != 0)
      return nodeError(node) << "cannot split dimension " << shape[axis]
                             << " into " << parts << " equal parts";
    sizes.assign(parts, shape[axis] / parts);
  }
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size > 0 ? size : -1;
  if (int64_t(sizes.size()) != parts || total != shape[axis])
    return nodeError(node) << "expects " << parts << " positive sizes that "
                           << "sum to " << shape[axis];
  Type element = cast<RankedTensorType>(input->getType()).getElementType();
  std::vector<int64_t> offsets(rank, 0), steps(rank, 1);
  for (int64_t k = 0; k < parts; ++k) {
    nn::Shape part(shape.begin(), shape.end());
    part[axis] = sizes[k];
    Value slice = builder.create<nn::SliceOp>(
        locOf(node), tensorType(part, element), *input, offsets, steps);
    if (!node.output(k).empty())
      values[node.output(k)] = slice;
    offsets[axis] += sizes[k];
  }
  return success();
}

// Pad in constant mode with pads (and the value) known at import time.
LogicalResult Importer::importPad(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  std::string mode = getString(node, "mode", "constant");
  if (mode != "constant")
    return nodeError(node) << "mode '" << mode
                           << "' is not supported (only constant)";
  FailureOr<std::vector<int64_t>> pads = getHostInts(node, 1);
  if (failed(pads))
    return failure();
  float value = 0.0f;
  if (hasInput(node, 2)) {
    FailureOr<HostTensor> given = getHost(node, 2);
    if (failed(given))
      return failure();
    if (!given->isFloat || given->floats.size() != 1)
      return nodeError(node) << "expects a float scalar pad value";
    value = given->floats[0];
  }
  FailureOr<nn::Shape> shape = nn::inferPadShape(
      shapeOf(*input), *pads, [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = tensorType(
      *shape, cast<RankedTensorType>(input->getType()).getElementType());
  return define(node,
                builder.create<nn::PadOp>(locOf(node), type, *input,
                                          builder.getDenseI64ArrayAttr(*pads),
                                          builder.getF32FloatAttr(value)));
}

LogicalResult Importer::importSlice(const onnx::NodeProto &node) {
  // A shape bucket's slice of a float constant (a causal mask cut to the
  // sequence length) stays a slice of the whole constant, which every
  // bucket then shares, instead of a constant of the bucket's own shape.
  auto host = hostValues.find(node.input(0));
  if (!isHost(node.input(0)) ||
      (sliceFloatConstants && host != hostValues.end() && host->second.isFloat))
    return importActivationSlice(node);
  // A slice of a tensor known at import time (shape arithmetic, such as the
  // pads PyTorch computes for F.pad), with ONNX's rules: negative indices
  // count from the end, negative steps walk backwards.
  FailureOr<HostTensor> data = getHost(node, 0);
  if (failed(data))
    return failure();
  int64_t rank = int64_t(data->shape.size());
  FailureOr<SliceInputs> inputs = sliceInputs(node);
  if (failed(inputs))
    return failure();
  const std::vector<int64_t> &starts = inputs->starts, &ends = inputs->ends,
                             &axes = inputs->axes, &steps = inputs->steps;
  // Per dimension: the indices taken, in order.
  std::vector<std::vector<int64_t>> taken(rank);
  for (int64_t d = 0; d < rank; ++d) {
    taken[d].resize(data->shape[d]);
    std::iota(taken[d].begin(), taken[d].end(), 0);
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || steps[i] == 0)
      return nodeError(node) << "bad axis " << axes[i] << " or zero step";
    int64_t dim = data->shape[axis], step = steps[i];
    auto clampIndex = [&](int64_t index, int64_t low, int64_t high) {
      if (index < 0)
        index = index < -dim ? low : index + dim;
      return std::clamp(index, low, high);
    };
    int64_t begin = step > 0 ? clampIndex(starts[i], 0, dim)
                             : clampIndex(starts[i], -1, dim - 1);
    int64_t end = step > 0 ? clampIndex(ends[i], 0, dim)
                           : clampIndex(ends[i], -1, dim - 1);
    taken[axis].clear();
    for (int64_t k = begin; step > 0 ? k < end : k > end; k += step)
      taken[axis].push_back(k);
  }
  nn::Shape shape;
  for (const std::vector<int64_t> &indices : taken)
    shape.push_back(int64_t(indices.size()));
  std::vector<int64_t> strides = data->strides();
  HostTensor result = data->gather(shape, [&](ArrayRef<int64_t> index) {
    int64_t from = 0;
    for (size_t d = 0; d < index.size(); ++d)
      from += taken[d][index[d]] * strides[d];
    return from;
  });
  return defineHost(node, std::move(result));
}

// ConstantOfShape: a tensor known at import time (PyTorch builds F.pad's
// pads with it).
LogicalResult Importer::importConstantOfShape(const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> shape = getHostInts(node, 0);
  if (failed(shape))
    return failure();
  for (int64_t dim : *shape)
    if (dim < 0)
      return nodeError(node) << "expects a non-negative shape";
  HostTensor result;
  result.shape = *shape;
  result.isFloat = true;
  float floatValue = 0.0f;
  int64_t intValue = 0;
  if (const onnx::AttributeProto *attr = findAttr(node, "value")) {
    FailureOr<HostTensor> value = readTensor(attr->t(), locOf(node));
    if (failed(value))
      return failure();
    if (value->size() != 1)
      return nodeError(node) << "expects a one-element value";
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
  return defineHost(node, std::move(result));
}

LogicalResult Importer::importCast(const onnx::NodeProto &node) {
  int64_t to = getInt(node, "to", 0);
  if (!isHost(node.input(0))) {
    // Casts of activations: masks to and from bool, ids to float.
    FailureOr<Value> input = getValue(node, 0);
    if (failed(input))
      return failure();
    Type elementType;
    if (to == onnx::TensorProto::FLOAT)
      elementType = builder.getF32Type();
    else if (to == onnx::TensorProto::BOOL)
      elementType = builder.getI1Type();
    else if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32)
      elementType = builder.getI64Type(); // int32 widened, as ids are
    else
      return nodeError(node) << "casts tensors only to float, int64, int32 "
                                "and bool";
    auto type = tensorType(shapeOf(*input), elementType);
    if (type == input->getType())
      return define(node, *input);
    if (!cast<ShapedType>(input->getType()).getElementType().isF32() &&
        !cast<ShapedType>(input->getType()).getElementType().isInteger(64) &&
        !cast<ShapedType>(input->getType()).getElementType().isInteger(1))
      return nodeError(node) << "casts only float32, int64 and bool tensors";
    return define(node, builder.create<nn::CastOp>(locOf(node), type, *input));
  }
  FailureOr<HostTensor> data = getHost(node, 0);
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
    return defineHost(node, std::move(*data));
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
    return defineHost(node, std::move(*data));
  }
  if (to == onnx::TensorProto::FLOAT) {
    if (!data->isFloat) {
      for (int64_t i : data->ints)
        data->floats.push_back(static_cast<float>(i));
      data->ints.clear();
      data->isFloat = true;
      data->isBool = false;
    }
    return defineHost(node, std::move(*data));
  }
  return nodeError(node) << "folds only casts to int64, int32, float and bool";
}

ArrayRef<Importer::HandlerEntry> Importer::tensorHandlers() {
  static const HandlerEntry rows[] = {
      {"Expand", 13, &Importer::importExpand},
      {"Transpose", 13, &Importer::importTranspose},
      {"Flatten", 13, &Importer::importFlatten},
      {"Reshape", 13, &Importer::importReshape},
      {"Reshape", 14, &Importer::importReshape},
      {"Identity", 13, &Importer::importIdentity},
      {"Identity", 14, &Importer::importIdentity},
      {"Identity", 16, &Importer::importIdentity},
      {"Constant", 13, &Importer::importConstant},
      {"Shape", 13, &Importer::importShape},
      {"Shape", 15, &Importer::importShape},
      {"Gather", 13, &Importer::importGather},
      {"Unsqueeze", 13, &Importer::importUnsqueeze},
      {"Squeeze", 13, &Importer::importSqueeze},
      {"Concat", 13, &Importer::importConcat},
      {"Slice", 13, &Importer::importSlice},
      {"Split", 13, &Importer::importSplit},
      {"Pad", 13, &Importer::importPad},
      {"ConstantOfShape", 9, &Importer::importConstantOfShape},
      {"Cast", 13, &Importer::importCast},
  };
  return rows;
}
