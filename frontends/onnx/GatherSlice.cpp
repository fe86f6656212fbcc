//===- GatherSlice.cpp - ONNX gathers and slices to nn --------------------===//
//
// The handlers of the ONNX tensor ops that select parts of a tensor: Gather
// (folded on the host for an integer vector known at import time, a slice
// or rows of a table otherwise), Slice and Split; and their rows of the
// handler table. The other tensor ops are in Tensor.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::onnx_frontend::detail;
using mlir::dpc::nn::shapeOf;

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
static LogicalResult gatherRows(Importer &im, const onnx::NodeProto &node,
                                Value data, int64_t axis) {
  FailureOr<Value> indices = im.getValue(node, 1);
  if (failed(indices))
    return failure();
  if (!cast<RankedTensorType>(indices->getType())
           .getElementType()
           .isInteger(64))
    return im.nodeError(node)
           << "expects int64 indices, got " << indices->getType();
  if (axis != 0)
    return im.nodeError(node) << "gathers by computed indices along axis 0 "
                              << "only (an embedding), not axis " << axis;
  ArrayRef<int64_t> shape = shapeOf(data);
  nn::Shape result(shapeOf(*indices));
  result.append(shape.begin() + 1, shape.end());
  Type element = cast<RankedTensorType>(data.getType()).getElementType();
  return im.define(node, im.builder.create<nn::GatherOp>(
                             im.locOf(node), im.tensorType(result, element),
                             data, *indices));
}

static LogicalResult importTensorGather(Importer &im,
                                        const onnx::NodeProto &node) {
  FailureOr<Value> data = im.getValue(node, 0);
  if (failed(data))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*data);
  int64_t rank = int64_t(shape.size());
  int64_t axis = im.getInt(node, "axis", 0);
  if (axis < -rank || axis >= rank)
    return im.nodeError(node)
           << "axis " << axis << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  // Integer ids are gathered by constant indices that make a slice (one
  // position of a window, every other token); a table is float.
  Type element = cast<RankedTensorType>(data->getType()).getElementType();
  auto refuseIds = [&] {
    return im.nodeError(node)
           << "gathers from an integer tensor (" << data->getType()
           << ") by constant indices in an increasing arithmetic sequence "
           << "only";
  };
  if (!isa<FloatType>(element) && !element.isInteger(64) &&
      !element.isInteger(32))
    return im.nodeError(node)
           << "gathers from float or integer tensors only, got "
           << data->getType();
  if (!im.isHost(node.input(1)))
    return isa<FloatType>(element) ? gatherRows(im, node, *data, axis)
                                   : refuseIds();
  FailureOr<HostTensor> indices = im.getHost(node, 1);
  if (failed(indices))
    return failure();
  if (indices->isFloat || indices->ints.empty())
    return im.nodeError(node) << "expects integer indices";
  int64_t dim = shape[axis];
  for (int64_t index : indices->ints)
    if (index < -dim || index >= dim)
      return im.nodeError(node) << "index " << index << " is out of range for "
                                << "dimension " << axis << " of size " << dim;
  std::vector<int64_t> rows = rowsOf(*indices, dim);
  if (!isArithmeticSequence(rows)) {
    if (!isa<FloatType>(element))
      return refuseIds();
    if (axis == 0)
      return gatherRows(im, node, *data, axis);
    return im.nodeError(node)
           << "gathers along axis " << axis
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
  Value slice = im.builder.create<nn::SliceOp>(
      im.locOf(node), im.tensorType(box, element), *data, offsets, steps);
  // The indices' shape replaces the gathered dimension (none for a scalar).
  nn::Shape result(shape.begin(), shape.begin() + axis);
  result.append(indices->shape.begin(), indices->shape.end());
  result.append(shape.begin() + axis + 1, shape.end());
  if (result == box)
    return im.define(node, slice);
  return im.define(node,
                   im.builder.create<nn::ReshapeOp>(
                       im.locOf(node), im.tensorType(result, element), slice));
}

static LogicalResult importGather(Importer &im, const onnx::NodeProto &node) {
  if (!im.hasInput(node, 0) || !im.hasInput(node, 1))
    return im.nodeError(node) << "expects data and indices";
  if (!im.isHost(node.input(0)) || !im.isHost(node.input(1)))
    return importTensorGather(im, node);
  FailureOr<HostTensor> data = im.getHost(node, 0);
  FailureOr<HostTensor> indices =
      failed(data) ? FailureOr<HostTensor>(failure()) : im.getHost(node, 1);
  if (failed(indices))
    return failure();
  if (data->isFloat || data->shape.size() != 1 ||
      im.getInt(node, "axis", 0) != 0)
    return im.nodeError(node) << "folds only gathers from an integer vector";
  HostTensor result;
  result.shape = indices->shape;
  int64_t size = data->ints.size();
  for (int64_t index : indices->ints) {
    if (index < -size || index >= size)
      return im.nodeError(node) << "index " << index << " is out of range";
    result.ints.push_back(data->ints[index < 0 ? index + size : index]);
  }
  return im.defineHost(node, std::move(result));
}

namespace {
// Slice's inputs after sliceInputs.
struct SliceInputs {
  std::vector<int64_t> starts, ends, axes, steps;
};
} // namespace

// Slice's starts, ends, axes and steps, known at import time; axes default
// to the first dimensions and steps to 1.
static FailureOr<SliceInputs> sliceInputs(Importer &im,
                                          const onnx::NodeProto &node) {
  SliceInputs in;
  std::vector<int64_t> *lists[] = {&in.starts, &in.ends, &in.axes, &in.steps};
  for (int index = 1; index <= 4; ++index) {
    if (index > 2 && !im.hasInput(node, index))
      continue;
    FailureOr<std::vector<int64_t>> given = im.getHostInts(node, index);
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
    return im.nodeError(node) << "expects as many starts, ends, axes and steps";
  return in;
}

// ONNX Slice of an activation: starts, ends, axes and steps known at import
// time, normalized to one offset and one positive step per dimension.
static LogicalResult importActivationSlice(Importer &im,
                                           const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  int64_t rank = int64_t(shape.size());
  FailureOr<SliceInputs> inputs = sliceInputs(im, node);
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
      return im.nodeError(node) << "axis " << axes[i] << " is out of range or "
                                << "repeated for rank " << rank;
    seen[axis] = true;
    if (steps[i] < 1)
      return im.nodeError(node) << "step " << steps[i] << " along axis " << axis
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
      return im.nodeError(node) << "the slice along axis " << axis
                                << " is empty, which dpc does not support";
    offsets[axis] = begin;
    strides[axis] = steps[i];
    result[axis] = size;
  }
  auto type = im.tensorType(
      result, cast<RankedTensorType>(input->getType()).getElementType());
  return im.define(node, im.builder.create<nn::SliceOp>(
                             im.locOf(node), type, *input, offsets, strides));
}

// Split into consecutive parts along an axis: one nn.slice per output.
static LogicalResult importSplit(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  int64_t rank = int64_t(shape.size());
  int64_t axis = im.getInt(node, "axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return im.nodeError(node) << "axis " << im.getInt(node, "axis", 0)
                              << " is out of range for rank " << rank;
  int64_t parts = node.output_size();
  std::vector<int64_t> sizes;
  if (im.hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> given = im.getHostInts(node, 1);
    if (failed(given))
      return failure();
    sizes = *given;
  } else {
    if (parts < 1 || shape[axis] % parts != 0)
      return im.nodeError(node) << "cannot split dimension " << shape[axis]
                                << " into " << parts << " equal parts";
    sizes.assign(parts, shape[axis] / parts);
  }
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size > 0 ? size : -1;
  if (int64_t(sizes.size()) != parts || total != shape[axis])
    return im.nodeError(node) << "expects " << parts << " positive sizes that "
                              << "sum to " << shape[axis];
  Type element = cast<RankedTensorType>(input->getType()).getElementType();
  std::vector<int64_t> offsets(rank, 0), steps(rank, 1);
  for (int64_t k = 0; k < parts; ++k) {
    nn::Shape part(shape.begin(), shape.end());
    part[axis] = sizes[k];
    Value slice = im.builder.create<nn::SliceOp>(
        im.locOf(node), im.tensorType(part, element), *input, offsets, steps);
    if (!node.output(k).empty())
      im.values[node.output(k)] = slice;
    offsets[axis] += sizes[k];
  }
  return success();
}

static LogicalResult importSlice(Importer &im, const onnx::NodeProto &node) {
  // A shape bucket's slice of a float constant (a causal mask cut to the
  // sequence length) stays a slice of the whole constant, which every
  // bucket then shares, instead of a constant of the bucket's own shape.
  auto host = im.hostValues.find(node.input(0));
  if (!im.isHost(node.input(0)) ||
      (im.sliceFloatConstants && host != im.hostValues.end() &&
       host->second.isFloat))
    return importActivationSlice(im, node);
  // A slice of a tensor known at import time (shape arithmetic, such as the
  // pads PyTorch computes for F.pad), with ONNX's rules: negative indices
  // count from the end, negative steps walk backwards.
  FailureOr<HostTensor> data = im.getHost(node, 0);
  if (failed(data))
    return failure();
  int64_t rank = int64_t(data->shape.size());
  FailureOr<SliceInputs> inputs = sliceInputs(im, node);
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
      return im.nodeError(node) << "bad axis " << axes[i] << " or zero step";
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
  return im.defineHost(node, std::move(result));
}

ArrayRef<HandlerEntry> mlir::dpc::onnx_frontend::detail::gatherSliceHandlers() {
  static const HandlerEntry rows[] = {
      {"Gather", 13, &importGather},
      {"Slice", 13, &importSlice},
      {"Split", 13, &importSplit},
  };
  return rows;
}
