//===- ShapeFold.cpp - Ops of shape computations, folded at import -------===//
//
// Handlers of ops that torch.onnx emits inside the shape computations of
// windowed attention (Swin's padding, shifted-window mask and relative
// position index): Range, Mod and ScatterND. Every operand is known at
// import time (the model's shapes are static), so each folds to a host
// tensor; an operand computed at run time is refused in one line naming the
// node, since no nn op computes these.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dpc::onnx_frontend;
using namespace mlir::dpc::onnx_frontend::detail;

// Every input of `node` must be a host value; otherwise an error saying so.
static LogicalResult requireHostInputs(Importer &im,
                                       const onnx::NodeProto &node) {
  for (int i = 0; i < node.input_size(); ++i)
    if (im.hasInput(node, i) && !im.isHost(node.input(i)))
      return im.nodeError(node)
             << "is folded at import, but input '" << node.input(i)
             << "' is computed at run time; only shape computations (of "
                "constants and static shapes) are supported";
  return success();
}

//===----------------------------------------------------------------------===//
// Range
//===----------------------------------------------------------------------===//

static LogicalResult importRange(Importer &im, const onnx::NodeProto &node) {
  if (failed(requireHostInputs(im, node)))
    return failure();
  HostTensor operands[3];
  for (int i = 0; i < 3; ++i) {
    FailureOr<HostTensor> t = im.getHost(node, i);
    if (failed(t))
      return failure();
    if (t->size() != 1)
      return im.nodeError(node) << "expects input " << i << " to be a scalar";
    operands[i] = std::move(*t);
  }
  bool isFloat = operands[0].isFloat;
  if (operands[1].isFloat != isFloat || operands[2].isFloat != isFloat)
    return im.nodeError(node) << "expects start, limit and delta of one type";
  double start = operands[0].number(0), limit = operands[1].number(0),
         delta = operands[2].number(0);
  if (delta == 0)
    return im.nodeError(node) << "has a delta of 0";
  // ONNX: max(ceil((limit - start) / delta), 0) elements, start + i*delta.
  double count = std::max(std::ceil((limit - start) / delta), 0.0);
  constexpr double kMaxElements = double(int64_t(1) << 31);
  if (count > kMaxElements)
    return im.nodeError(node) << "would hold " << count << " elements";
  HostTensor result;
  result.isFloat = isFloat;
  result.shape = {int64_t(count)};
  for (int64_t i = 0; i < int64_t(count); ++i) {
    if (isFloat)
      result.floats.push_back(float(start + double(i) * delta));
    else
      result.ints.push_back(int64_t(start) + i * int64_t(delta));
  }
  return im.defineHost(node, std::move(result));
}

//===----------------------------------------------------------------------===//
// Mod
//===----------------------------------------------------------------------===//

// `a mod b` as ONNX defines it: fmod = 0 (integers only) takes the divisor's
// sign, as Python's %; fmod = 1 the dividend's, as C's fmod.
static int64_t intMod(int64_t a, int64_t b, bool fmod) {
  int64_t r = a % b;
  if (!fmod && r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

static LogicalResult importMod(Importer &im, const onnx::NodeProto &node) {
  if (failed(requireHostInputs(im, node)))
    return failure();
  FailureOr<HostTensor> l = im.getHost(node, 0), r = im.getHost(node, 1);
  if (failed(l) || failed(r))
    return failure();
  bool fmod = im.getInt(node, "fmod", 0) != 0;
  if (l->isFloat != r->isFloat)
    return im.nodeError(node) << "expects operands of one element type";
  if (l->isFloat && !fmod)
    return im.nodeError(node) << "takes floats only with fmod = 1";
  if (!l->isFloat)
    for (int64_t v : r->ints)
      if (v == 0)
        return im.nodeError(node) << "divides by zero at import time";
  const HostTensor &a = *l, &b = *r;
  FailureOr<HostTensor> out = foldBroadcast(
      {&a, &b},
      [&](HostTensor &y, ArrayRef<int64_t> o) {
        if (a.isFloat)
          y.floats.push_back(std::fmod(a.floats[o[0]], b.floats[o[1]]));
        else
          y.ints.push_back(intMod(a.ints[o[0]], b.ints[o[1]], fmod));
      },
      [&] { return im.nodeError(node); });
  if (failed(out))
    return failure();
  out->isFloat = a.isFloat;
  return im.defineHost(node, std::move(*out));
}

//===----------------------------------------------------------------------===//
// ScatterND
//===----------------------------------------------------------------------===//

// data[indices[i]] = updates[i] (or += / *=) for each index tuple i, in order,
// as the ONNX reference computes it: a later duplicate index wins.
static LogicalResult importScatterND(Importer &im,
                                     const onnx::NodeProto &node) {
  if (failed(requireHostInputs(im, node)))
    return failure();
  FailureOr<HostTensor> data = im.getHost(node, 0),
                        indices = im.getHost(node, 1),
                        updates = im.getHost(node, 2);
  if (failed(data) || failed(indices) || failed(updates))
    return failure();
  std::string reduction = im.getString(node, "reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return im.nodeError(node) << "has an unsupported reduction '" << reduction
                              << "' (none, add and mul are supported)";
  if (indices->isFloat || indices->shape.empty())
    return im.nodeError(node) << "expects integer indices of rank >= 1";
  if (updates->isFloat != data->isFloat)
    return im.nodeError(node) << "expects data and updates of one type";
  int64_t depth = indices->shape.back();
  int64_t rank = data->shape.size();
  if (depth < 1 || depth > rank)
    return im.nodeError(node) << "has index tuples of length " << depth
                              << " for data of rank " << rank;
  // updates' shape: indices.shape[:-1] + data.shape[depth:].
  std::vector<int64_t> expected(indices->shape.begin(),
                                indices->shape.end() - 1);
  expected.insert(expected.end(), data->shape.begin() + depth,
                  data->shape.end());
  if (updates->shape != expected)
    return im.nodeError(node)
           << "expects updates of the shape of the indices' tuples "
              "followed by the data's trailing dimensions";
  std::vector<int64_t> strides = data->strides();
  int64_t slice = 1;
  for (int64_t d = depth; d < rank; ++d)
    slice *= data->shape[d];
  int64_t tuples = indices->size() / depth;
  auto combine = [&](auto v, auto u) {
    return reduction == "add" ? v + u : reduction == "mul" ? v * u : u;
  };
  HostTensor result = *data;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t base = 0;
    for (int64_t d = 0; d < depth; ++d) {
      int64_t k = indices->ints[t * depth + d];
      if (k < 0)
        k += data->shape[d];
      if (k < 0 || k >= data->shape[d])
        return im.nodeError(node)
               << "has index " << indices->ints[t * depth + d]
               << " out of range for dimension " << d << " of size "
               << data->shape[d];
      base += k * strides[d];
    }
    for (int64_t e = 0; e < slice; ++e) {
      if (result.isFloat)
        result.floats[base + e] =
            combine(result.floats[base + e], updates->floats[t * slice + e]);
      else
        result.ints[base + e] =
            combine(result.ints[base + e], updates->ints[t * slice + e]);
    }
  }
  return im.defineHost(node, std::move(result));
}

ArrayRef<HandlerEntry> mlir::dpc::onnx_frontend::detail::shapeFoldHandlers() {
  static const HandlerEntry rows[] = {
      {"Range", 11, &importRange},         {"Mod", 13, &importMod},
      {"ScatterND", 13, &importScatterND}, {"ScatterND", 16, &importScatterND},
      {"ScatterND", 18, &importScatterND},
  };
  return rows;
}
