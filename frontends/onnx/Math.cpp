//===- Math.cpp - ONNX math ops to nn -------------------------------------===//
//
// The handlers of ONNX's math ops, as onnx-mlir's Math/ folder groups them:
// Relu and the elementwise functions of UnaryFunctions.def, Gemm and MatMul,
// Add, Sub, Mul and Div (folded on the host when both operands are known at
// import time), Pow, ReduceMean and ReduceSum, Clip, and the masks (the
// comparisons and logic ops, Not, Where, Trilu) with the host folds they
// use; CumSum (nn.cumsum); Max, Min and Einsum, written as those ops
// (compare and where, transposes around one batched GEMM), which need no
// kernels of their own; and their rows of the handler table.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include "llvm/ADT/StringSwitch.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <type_traits>

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::onnx_frontend;
using namespace mlir::dpc::onnx_frontend::detail;
using mlir::dpc::nn::shapeOf;

template <typename OpTy>
static LogicalResult importUnary(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  return im.define(node, im.builder.create<OpTy>(im.locOf(node), *input));
}

template <typename OpTy>
static LogicalResult importUnaryFunction(Importer &im,
                                         const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  // The attributes the function's row names, at their ONNX defaults when
  // the node leaves them out.
  const ::dpc::runtime::UnaryFunctionInfo *info =
      ::dpc::runtime::lookupUnaryFunction(OpTy::kUnaryFunction);
  SmallVector<NamedAttribute> params;
  for (int i = 0; i < 2; ++i)
    if (*info->params[i])
      params.push_back(im.builder.getNamedAttr(
          info->params[i], im.builder.getF32FloatAttr(im.getFloat(
                               node, info->params[i], info->defaults[i]))));
  return im.define(node, im.builder.create<OpTy>(im.locOf(node),
                                                 TypeRange{input->getType()},
                                                 ValueRange{*input}, params));
}

static LogicalResult importGemm(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> a = im.getValue(node, 0);
  FailureOr<Value> b =
      failed(a) ? FailureOr<Value>(failure()) : im.getValue(node, 1);
  if (failed(b))
    return failure();
  if (im.getFloat(node, "alpha", 1.0f) != 1.0f)
    return im.nodeError(node) << "alpha other than 1 is not supported";
  if (im.hasInput(node, 2) && im.getFloat(node, "beta", 1.0f) != 1.0f)
    return im.nodeError(node) << "beta other than 1 is not supported";
  if (shapeOf(*a).size() != 2 || shapeOf(*b).size() != 2)
    return im.nodeError(node) << "expects rank-2 A and B";
  bool transA = im.getInt(node, "transA", 0),
       transB = im.getInt(node, "transB", 0);
  FailureOr<nn::Shape> shape =
      nn::inferMatmulShape(shapeOf(*a), shapeOf(*b), transA, transB,
                           [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  Type elementType = cast<RankedTensorType>(a->getType()).getElementType();
  Value result = im.builder.create<nn::MatmulOp>(
      im.locOf(node), im.tensorType(*shape, elementType), *a, *b,
      im.builder.getBoolAttr(transA), im.builder.getBoolAttr(transB));
  if (im.hasInput(node, 2)) {
    FailureOr<Value> c = im.getValue(node, 2);
    if (failed(c))
      return failure();
    // C broadcasts to the product's shape, never the other way round.
    FailureOr<nn::Shape> sum = nn::inferBroadcastShape(
        *shape, shapeOf(*c), [&] { return im.nodeError(node); });
    if (failed(sum))
      return failure();
    if (ArrayRef<int64_t>(*sum) != ArrayRef<int64_t>(*shape))
      return im.nodeError(node)
             << "C of shape " << nn::formatShape(shapeOf(*c))
             << " does not broadcast to " << nn::formatShape(*shape);
    result = im.builder.create<nn::AddOp>(im.locOf(node), result.getType(),
                                          result, *c);
  }
  return im.define(node, result);
}

static LogicalResult importMatMul(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> a = im.getValue(node, 0);
  FailureOr<Value> b =
      failed(a) ? FailureOr<Value>(failure()) : im.getValue(node, 1);
  if (failed(b))
    return failure();
  FailureOr<nn::Shape> shape =
      nn::inferMatmulShape(shapeOf(*a), shapeOf(*b), false, false,
                           [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  Type elementType = cast<RankedTensorType>(a->getType()).getElementType();
  return im.define(node, im.builder.create<nn::MatmulOp>(
                             im.locOf(node), im.tensorType(*shape, elementType),
                             *a, *b, im.builder.getBoolAttr(false),
                             im.builder.getBoolAttr(false)));
}

// `l op r` of two host numbers, as ONNX defines it for the element type.
static FailureOr<double> foldNumbers(StringRef opType, double l, double r,
                                     bool isFloat) {
  if (opType == "Add")
    return l + r;
  if (opType == "Sub")
    return l - r;
  if (opType == "Mul")
    return l * r;
  if (r == 0 && !isFloat)
    return failure();
  // Integer division truncates toward zero.
  return isFloat ? l / r : std::trunc(l / r);
}

// Integer arithmetic on tensors computed at run time (RoBERTa's position ids:
// a cumsum of the padding mask, times the mask, plus the padding id; relative
// positions as differences of them) runs on float32 copies, cast back to
// int64: dpc's kernels compute in float32, which holds every integer of
// magnitude up to 2^24 exactly, far above the ids, positions and offsets
// such graphs compute.
static Value castTo(Importer &im, Location loc, Value value, Type element) {
  if (cast<RankedTensorType>(value.getType()).getElementType() == element)
    return value;
  return im.builder.create<nn::CastOp>(
      loc, im.tensorType(shapeOf(value), element), value);
}

template <typename OpTy>
static LogicalResult importIntegerBinary(Importer &im,
                                         const onnx::NodeProto &node, Value l,
                                         Value r, ArrayRef<int64_t> shape) {
  if (!std::is_same_v<OpTy, nn::AddOp> && !std::is_same_v<OpTy, nn::SubOp> &&
      !std::is_same_v<OpTy, nn::MulOp>)
    return im.nodeError(node)
           << "divides integer tensors computed at run time; dpc adds, "
              "subtracts and multiplies them only";
  Location loc = im.locOf(node);
  Type f32 = im.builder.getF32Type();
  Value result =
      im.builder.create<OpTy>(loc, im.tensorType(shape, f32),
                              castTo(im, loc, l, f32), castTo(im, loc, r, f32));
  return im.define(node, castTo(im, loc, result, im.builder.getI64Type()));
}

template <typename OpTy>
static LogicalResult importBinary(Importer &im, const onnx::NodeProto &node) {
  if (im.isHost(node.input(0)) && im.isHost(node.input(1))) {
    FailureOr<HostTensor> l = im.getHost(node, 0), r = im.getHost(node, 1);
    if (failed(l) || failed(r))
      return failure();
    if (l->isFloat != r->isFloat)
      return im.nodeError(node) << "folds only operands of one element type";
    const HostTensor &a = *l, &b = *r;
    bool divideByZero = false;
    FailureOr<HostTensor> out = foldBroadcast(
        {&a, &b},
        [&](HostTensor &y, ArrayRef<int64_t> o) {
          FailureOr<double> w = foldNumbers(node.op_type(), a.number(o[0]),
                                            b.number(o[1]), a.isFloat);
          divideByZero |= failed(w);
          if (a.isFloat)
            y.floats.push_back(float(succeeded(w) ? *w : 0.0));
          else
            y.ints.push_back(int64_t(succeeded(w) ? *w : 0.0));
        },
        [&] { return im.nodeError(node); });
    if (failed(out))
      return failure();
    if (divideByZero)
      return im.nodeError(node) << "divides by zero at import time";
    out->isFloat = a.isFloat;
    return im.defineHost(node, std::move(*out));
  }
  FailureOr<Value> l = im.getValue(node, 0);
  FailureOr<Value> r =
      failed(l) ? FailureOr<Value>(failure()) : im.getValue(node, 1);
  if (failed(r))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      shapeOf(*l), shapeOf(*r), [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  Type elementType = cast<RankedTensorType>(l->getType()).getElementType();
  if (elementType.isInteger(64) &&
      cast<RankedTensorType>(r->getType()).getElementType().isInteger(64))
    return importIntegerBinary<OpTy>(im, node, *l, *r, *shape);
  return im.define(
      node, im.builder.create<OpTy>(
                im.locOf(node), im.tensorType(*shape, elementType), *l, *r));
}

static LogicalResult importPow(Importer &im, const onnx::NodeProto &node) {
  FailureOr<HostTensor> exponent = im.getHost(node, 1);
  if (failed(exponent))
    return failure();
  if (exponent->size() != 1)
    return im.nodeError(node) << "expects a single exponent, got "
                              << exponent->size() << " values";
  double p = exponent->number(0);
  if (im.isHost(node.input(0))) {
    // A shape computation's power (an attention scale from a head size):
    // folded, in the base's element type, as ONNX's Pow.
    FailureOr<HostTensor> host = im.getHost(node, 0);
    if (failed(host))
      return failure();
    HostTensor out = *host;
    for (int64_t i = 0; i < out.size(); ++i) {
      if (out.isFloat)
        out.floats[i] = float(std::pow(double(out.floats[i]), p));
      else
        out.ints[i] = int64_t(std::pow(double(out.ints[i]), p));
    }
    return im.defineHost(node, std::move(out));
  }
  FailureOr<Value> base = im.getValue(node, 0);
  if (failed(base))
    return failure();
  Location loc = im.locOf(node);
  if (p == 1.0)
    return im.define(node, *base);
  if (p == 2.0)
    return im.define(
        node, im.builder.create<nn::MulOp>(loc, base->getType(), *base, *base));
  if (p == 0.5)
    return im.define(node, im.builder.create<nn::SqrtOp>(loc, *base));
  std::ostringstream text;
  text << p;
  return im.nodeError(node) << "exponent " << text.str()
                            << " is not supported (only 0.5, 1 and 2)";
}

static LogicalResult importReduce(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  size_t rank = shape.size();
  bool mean = node.op_type() == "ReduceMean";
  // ReduceMean-13 has its axes as an attribute, ReduceSum-13 as an input.
  std::vector<int64_t> axes;
  if (mean) {
    axes = im.getInts(node, "axes", {});
  } else if (im.hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> given = im.getHostInts(node, 1);
    if (failed(given))
      return failure();
    axes = *given;
  }
  if (axes.empty()) {
    if (!mean && im.getInt(node, "noop_with_empty_axes", 0))
      return im.define(node, *input);
    for (size_t d = 0; d < rank; ++d)
      axes.push_back(int64_t(d));
  }
  // Summed onto the shape with every reduced dimension 1, which is the
  // result when keepdims is set and is reshaped away when not.
  nn::Shape kept(shape.begin(), shape.end());
  std::vector<bool> reduced(rank, false);
  int64_t count = 1;
  for (int64_t axis : axes) {
    FailureOr<int64_t> d =
        nn::normalizeAxis(axis, rank, [&] { return im.nodeError(node); });
    if (failed(d))
      return failure();
    if (reduced[*d])
      return im.nodeError(node) << "reduces axis " << axis << " twice";
    reduced[*d] = true;
    count *= shape[*d];
    kept[*d] = 1;
  }
  if (mean && count == 0)
    return im.nodeError(node) << "averages over no elements";
  Type elementType = cast<RankedTensorType>(input->getType()).getElementType();
  Location loc = im.locOf(node);
  float scale = mean ? 1.0f / float(count) : 1.0f;
  Value sum = im.builder.create<nn::SumToShapeOp>(
      loc, im.tensorType(kept, elementType), *input,
      im.builder.getF32FloatAttr(scale));
  if (im.getInt(node, "keepdims", 1))
    return im.define(node, sum);
  nn::Shape squeezed;
  for (size_t d = 0; d < rank; ++d)
    if (!reduced[d])
      squeezed.push_back(shape[d]);
  return im.define(node, im.builder.create<nn::ReshapeOp>(
                             loc, im.tensorType(squeezed, elementType), sum));
}

// Clip with bounds known at import time (ReLU6: 0 and 6); an absent bound
// is infinite.
static LogicalResult importClip(Importer &im, const onnx::NodeProto &node) {
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  float bounds[2] = {-std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::infinity()};
  for (int index : {1, 2}) {
    if (!im.hasInput(node, index))
      continue;
    FailureOr<HostTensor> bound = im.getHost(node, index);
    if (failed(bound))
      return failure();
    if (!bound->isFloat || bound->floats.size() != 1)
      return im.nodeError(node) << "expects a float scalar for input '"
                                << node.input(index) << "'";
    bounds[index - 1] = bound->floats[0];
  }
  if (!(bounds[0] <= bounds[1]))
    return im.nodeError(node)
           << "min " << bounds[0] << " exceeds max " << bounds[1];
  return im.define(node, im.builder.create<nn::ClipOp>(
                             im.locOf(node), input->getType(), *input,
                             im.builder.getF32FloatAttr(bounds[0]),
                             im.builder.getF32FloatAttr(bounds[1])));
}

//===----------------------------------------------------------------------===//
// Handlers: masks
//===----------------------------------------------------------------------===//

FailureOr<HostTensor> mlir::dpc::onnx_frontend::detail::foldBroadcast(
    ArrayRef<const HostTensor *> operands,
    llvm::function_ref<void(HostTensor &, ArrayRef<int64_t>)> f,
    llvm::function_ref<InFlightDiagnostic()> error) {
  nn::Shape shape;
  for (const HostTensor *t : operands) {
    FailureOr<nn::Shape> next = nn::inferBroadcastShape(shape, t->shape, error);
    if (failed(next))
      return failure();
    shape = *next;
  }
  int64_t rank = shape.size();
  std::vector<std::vector<int64_t>> strides;
  for (const HostTensor *t : operands) {
    std::vector<int64_t> own = t->strides(), full(rank, 0);
    int64_t offset = rank - int64_t(t->shape.size());
    for (int64_t d = 0; d < int64_t(t->shape.size()); ++d)
      full[offset + d] = t->shape[d] == 1 ? 0 : own[d];
    strides.push_back(std::move(full));
  }
  HostTensor result;
  result.shape.assign(shape.begin(), shape.end());
  int64_t count = nn::getNumElements(shape);
  std::vector<int64_t> index(rank, 0), offsets(operands.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    f(result, offsets);
    for (int64_t d = rank - 1; d >= 0; --d) {
      for (size_t n = 0; n < operands.size(); ++n)
        offsets[n] += strides[n][d];
      if (++index[d] < shape[d])
        break;
      for (size_t n = 0; n < operands.size(); ++n)
        offsets[n] -= strides[n][d] * shape[d];
      index[d] = 0;
    }
  }
  return result;
}

static LogicalResult importCompare(Importer &im, const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  StringRef name = llvm::StringSwitch<StringRef>(op)
                       .Case("Equal", "eq")
                       .Case("Less", "lt")
                       .Case("Greater", "gt")
                       .Case("LessOrEqual", "le")
                       .Case("GreaterOrEqual", "ge")
                       .Case("And", "and")
                       .Case("Or", "or")
                       .Default("xor");
  bool logical = op == "And" || op == "Or" || op == "Xor";
  if (im.isHost(node.input(0)) && im.isHost(node.input(1))) {
    FailureOr<HostTensor> l = im.getHost(node, 0), r = im.getHost(node, 1);
    if (failed(l) || failed(r))
      return failure();
    const HostTensor &a = *l, &b = *r;
    FailureOr<HostTensor> out = foldBroadcast(
        {&a, &b},
        [&](HostTensor &y, ArrayRef<int64_t> o) {
          double u = a.number(o[0]), v = b.number(o[1]);
          bool value = llvm::StringSwitch<bool>(name)
                           .Case("eq", u == v)
                           .Case("lt", u < v)
                           .Case("gt", u > v)
                           .Case("le", u <= v)
                           .Case("ge", u >= v)
                           .Case("and", u != 0 && v != 0)
                           .Case("or", u != 0 || v != 0)
                           .Default((u != 0) != (v != 0));
          y.ints.push_back(value);
        },
        [&] { return im.nodeError(node); });
    if (failed(out))
      return failure();
    out->isBool = true;
    return im.defineHost(node, std::move(*out));
  }
  FailureOr<Value> l = im.getValue(node, 0);
  FailureOr<Value> r =
      failed(l) ? FailureOr<Value>(failure()) : im.getValue(node, 1);
  if (failed(r))
    return failure();
  Type lt = cast<ShapedType>(l->getType()).getElementType();
  Type rt = cast<ShapedType>(r->getType()).getElementType();
  if (lt != rt)
    return im.nodeError(node) << "compares tensors of one element type, got "
                              << lt << " and " << rt;
  bool accepted = logical ? lt.isInteger(1)
                          : lt.isF32() || lt.isInteger(64) ||
                                (lt.isInteger(1) && name == "eq");
  if (!accepted)
    return im.nodeError(node) << "does not take tensors of element type " << lt;
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      shapeOf(*l), shapeOf(*r), [&] { return im.nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = im.tensorType(*shape, im.builder.getI1Type());
  if (logical)
    return im.define(node, im.builder.create<nn::LogicalOp>(
                               im.locOf(node), type, *l, *r, name));
  return im.define(node, im.builder.create<nn::CompareOp>(im.locOf(node), type,
                                                          *l, *r, name));
}

static LogicalResult importNot(Importer &im, const onnx::NodeProto &node) {
  if (im.isHost(node.input(0))) {
    FailureOr<HostTensor> t = im.getHost(node, 0);
    if (failed(t))
      return failure();
    for (int64_t &i : t->ints)
      i = i == 0;
    return im.defineHost(node, std::move(*t));
  }
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  return im.define(node, im.builder.create<nn::NotOp>(
                             im.locOf(node), input->getType(), *input));
}

static LogicalResult importWhere(Importer &im, const onnx::NodeProto &node) {
  if (im.isHost(node.input(0)) && im.isHost(node.input(1)) &&
      im.isHost(node.input(2))) {
    FailureOr<HostTensor> c = im.getHost(node, 0), a = im.getHost(node, 1),
                          b = im.getHost(node, 2);
    if (failed(c) || failed(a) || failed(b))
      return failure();
    if (a->isFloat != b->isFloat)
      return im.nodeError(node) << "folds only branches of one element type";
    FailureOr<HostTensor> out = foldBroadcast(
        {&*c, &*a, &*b},
        [&](HostTensor &y, ArrayRef<int64_t> o) {
          const HostTensor &from = c->ints[o[0]] ? *a : *b;
          int64_t i = c->ints[o[0]] ? o[1] : o[2];
          if (from.isFloat)
            y.floats.push_back(from.floats[i]);
          else
            y.ints.push_back(from.ints[i]);
        },
        [&] { return im.nodeError(node); });
    if (failed(out))
      return failure();
    out->isFloat = a->isFloat;
    out->isBool = a->isBool && b->isBool;
    return im.defineHost(node, std::move(*out));
  }
  SmallVector<Value, 3> operands;
  for (int i = 0; i < 3; ++i) {
    FailureOr<Value> v = im.getValue(node, i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  if (!cast<ShapedType>(operands[0].getType()).getElementType().isInteger(1))
    return im.nodeError(node) << "expects a boolean condition";
  Type elementType = cast<ShapedType>(operands[1].getType()).getElementType();
  if (!elementType.isF32() ||
      cast<ShapedType>(operands[2].getType()).getElementType() != elementType)
    return im.nodeError(node) << "selects only between float32 tensors";
  auto error = [&] { return im.nodeError(node); };
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      shapeOf(operands[0]), shapeOf(operands[1]), error);
  if (succeeded(shape))
    shape = nn::inferBroadcastShape(*shape, shapeOf(operands[2]), error);
  if (failed(shape))
    return failure();
  return im.define(node, im.builder.create<nn::WhereOp>(
                             im.locOf(node), im.tensorType(*shape, elementType),
                             operands[0], operands[1], operands[2]));
}

// Trilu of a constant (the causal mask torch.triu/tril builds in forward).
static LogicalResult importTrilu(Importer &im, const onnx::NodeProto &node) {
  if (!im.isHost(node.input(0)))
    return im.nodeError(node)
           << "folds only Trilu of a constant; a causal mask "
              "built from tensors the model computes is not "
              "supported";
  FailureOr<HostTensor> t = im.getHost(node, 0);
  if (failed(t))
    return failure();
  int64_t k = 0;
  if (im.hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> kk = im.getHostInts(node, 1);
    if (failed(kk))
      return failure();
    if (kk->size() != 1)
      return im.nodeError(node) << "expects a single k";
    k = (*kk)[0];
  }
  if (t->shape.size() < 2)
    return im.nodeError(node) << "expects a tensor of rank >= 2";
  bool upper = im.getInt(node, "upper", 1) != 0;
  int64_t rows = t->shape.end()[-2], cols = t->shape.back();
  for (int64_t e = 0; e < t->size(); ++e) {
    int64_t i = (e / cols) % rows, j = e % cols;
    bool keep = upper ? j - i >= k : j - i <= k;
    if (keep)
      continue;
    if (t->isFloat)
      t->floats[e] = 0.0f;
    else
      t->ints[e] = 0;
  }
  return im.defineHost(node, std::move(*t));
}

//===----------------------------------------------------------------------===//
// Handlers: Max, Min, CumSum and Einsum
//===----------------------------------------------------------------------===//

// A float constant that an import writes (the 1/2 of Max's ties): a frozen
// parameter named after the node's output, read from the weights file like an
// ONNX Constant in tensor arithmetic.
static Value frozenConstant(Importer &im, const onnx::NodeProto &node,
                            StringRef suffix, ArrayRef<int64_t> shape,
                            const std::vector<float> &values) {
  std::string name = node.output(0) + "/" + suffix.str();
  if (Value known = im.values.lookup(name))
    return known;
  Value param = im.builder.create<nn::ParamOp>(
      NameLoc::get(im.builder.getStringAttr(name)),
      im.tensorType(shape, im.builder.getF32Type()), StringRef(name),
      /*frozen=*/true);
  im.model->params.push_back(ImportedParam::fromFloats(
      name, std::vector<int64_t>(shape.begin(), shape.end()), values));
  im.values[name] = param;
  return param;
}

static Value transposeBy(Importer &im, Location loc, Value value,
                         ArrayRef<int64_t> perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity &= perm[i] == int64_t(i);
  if (identity)
    return value;
  ArrayRef<int64_t> shape = shapeOf(value);
  nn::Shape result;
  for (int64_t d : perm)
    result.push_back(shape[d]);
  return im.builder.create<nn::TransposeOp>(
      loc,
      im.tensorType(result,
                    cast<RankedTensorType>(value.getType()).getElementType()),
      value, im.builder.getDenseI64ArrayAttr(perm));
}

static Value reshapeTo(Importer &im, Location loc, Value value,
                       ArrayRef<int64_t> shape) {
  if (shapeOf(value) == shape)
    return value;
  return im.builder.create<nn::ReshapeOp>(
      loc,
      im.tensorType(shape,
                    cast<RankedTensorType>(value.getType()).getElementType()),
      value);
}

// Max and Min of float tensors (any count, numpy broadcasting), pairwise
// from the first: max(a, b) = a > b ? a : (a < b ? b : (a + b) / 2). The
// tie's mean is a (or b) exactly, and its gradient gives each operand half,
// which is torch.maximum's and torch.minimum's rule; elsewhere the larger
// (smaller) operand takes the whole gradient. A NaN operand gives NaN.
static LogicalResult importMaxMin(Importer &im, const onnx::NodeProto &node) {
  bool isMax = node.op_type() == "Max";
  FailureOr<Value> result = im.getValue(node, 0);
  if (failed(result))
    return failure();
  Location loc = im.locOf(node);
  auto error = [&] { return im.nodeError(node); };
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<Value> next = i == 0 ? result : im.getValue(node, i);
    if (failed(next))
      return failure();
    if (!cast<ShapedType>(next->getType()).getElementType().isF32())
      return im.nodeError(node)
             << "takes float32 tensors only, got '" << node.input(i)
             << "' of element type "
             << cast<ShapedType>(next->getType()).getElementType();
    if (i == 0)
      continue;
    Value a = *result, b = *next;
    FailureOr<nn::Shape> shape =
        nn::inferBroadcastShape(shapeOf(a), shapeOf(b), error);
    if (failed(shape))
      return failure();
    auto floats = im.tensorType(*shape, im.builder.getF32Type());
    auto bools = im.tensorType(*shape, im.builder.getI1Type());
    Value wins =
        im.builder.create<nn::CompareOp>(loc, bools, a, b, isMax ? "gt" : "lt");
    Value loses =
        im.builder.create<nn::CompareOp>(loc, bools, a, b, isMax ? "lt" : "gt");
    Value half = frozenConstant(im, node, "half", {}, {0.5f});
    Value sum = im.builder.create<nn::AddOp>(loc, floats, a, b);
    Value tie = im.builder.create<nn::MulOp>(loc, floats, sum, half);
    Value other = im.builder.create<nn::WhereOp>(loc, floats, loses, b, tie);
    *result = im.builder.create<nn::WhereOp>(loc, floats, wins, a, other);
  }
  return im.define(node, *result);
}

// CumSum of a tensor known at import time (position ids summed from a
// constant mask), in the element type, each line in order.
static HostTensor foldCumSum(const HostTensor &t, int64_t axis, bool exclusive,
                             bool reverse) {
  HostTensor out = t;
  int64_t length = t.shape[axis], stride = t.strides()[axis];
  for (int64_t e = 0; e < t.size(); ++e) {
    if ((e / stride) % length != 0)
      continue; // Not the first element of a line along the axis.
    int64_t ints = 0;
    float floats = 0.0f;
    for (int64_t k = 0; k < length; ++k) {
      int64_t at = e + (reverse ? length - 1 - k : k) * stride;
      auto take = [&] {
        if (t.isFloat)
          floats += t.floats[at];
        else
          ints += t.ints[at];
      };
      if (!exclusive)
        take();
      if (t.isFloat)
        out.floats[at] = floats;
      else
        out.ints[at] = ints;
      if (exclusive)
        take();
    }
  }
  out.isBool = false;
  return out;
}

// CumSum along a constant axis: nn.cumsum, whose gradient is the sum the
// other way. A constant input is summed at import time.
static LogicalResult importCumSum(Importer &im, const onnx::NodeProto &node) {
  FailureOr<std::vector<int64_t>> axes = im.getHostInts(node, 1);
  if (failed(axes))
    return failure();
  if (axes->size() != 1)
    return im.nodeError(node)
           << "expects a single axis, got " << axes->size() << " values";
  bool exclusive = im.getInt(node, "exclusive", 0) != 0;
  bool reverse = im.getInt(node, "reverse", 0) != 0;
  auto error = [&] { return im.nodeError(node); };
  if (im.isHost(node.input(0))) {
    FailureOr<HostTensor> t = im.getHost(node, 0);
    if (failed(t))
      return failure();
    FailureOr<int64_t> axis =
        nn::normalizeAxis((*axes)[0], t->shape.size(), error);
    if (failed(axis))
      return failure();
    return im.defineHost(node, foldCumSum(*t, *axis, exclusive, reverse));
  }
  FailureOr<Value> input = im.getValue(node, 0);
  if (failed(input))
    return failure();
  // Integers (a mask's running count: position ids) are summed as float32
  // copies, exact as castTo says, and cast back.
  Type element = cast<ShapedType>(input->getType()).getElementType();
  if (!element.isF32() && !element.isInteger(64))
    return im.nodeError(node) << "takes a float32 or integer tensor only";
  FailureOr<int64_t> axis =
      nn::normalizeAxis((*axes)[0], shapeOf(*input).size(), error);
  if (failed(axis))
    return failure();
  Location loc = im.locOf(node);
  Value x = castTo(im, loc, *input, im.builder.getF32Type());
  Value sum = im.builder.create<nn::CumSumOp>(
      loc, x.getType(), x, im.builder.getI64IntegerAttr(*axis),
      exclusive ? im.builder.getUnitAttr() : UnitAttr(),
      reverse ? im.builder.getUnitAttr() : UnitAttr());
  return im.define(node, castTo(im, loc, sum, element));
}

namespace {
// An einsum equation's operands and result as strings of letters, one per
// dimension, and the size of each letter.
struct EinsumTerms {
  SmallVector<std::string, 2> inputs;
  std::string output;
  std::map<char, int64_t> sizes;
};
} // namespace

static FailureOr<EinsumTerms> parseEinsum(Importer &im,
                                          const onnx::NodeProto &node,
                                          StringRef equation,
                                          ArrayRef<Value> operands) {
  auto refuse = [&](StringRef why) -> FailureOr<EinsumTerms> {
    return im.nodeError(node) << "equation '" << equation << "' " << why;
  };
  std::string text;
  for (char c : equation)
    if (c != ' ')
      text += c;
  size_t arrow = text.find("->");
  EinsumTerms terms;
  StringRef lhs = StringRef(text).substr(0, arrow);
  SmallVector<StringRef, 2> parts;
  lhs.split(parts, ',');
  for (StringRef part : parts)
    terms.inputs.push_back(part.str());
  if (terms.inputs.size() != operands.size())
    return refuse("names " + std::to_string(terms.inputs.size()) +
                  " operands, the node has " + std::to_string(operands.size()));
  if (terms.inputs.size() > 2)
    return refuse("is not supported: einsum of more than two operands");
  std::map<char, int> counts;
  for (size_t k = 0; k < terms.inputs.size(); ++k) {
    const std::string &term = terms.inputs[k];
    ArrayRef<int64_t> shape = shapeOf(operands[k]);
    if (term.find('.') != std::string::npos)
      return refuse("is not supported: ellipses ('...')");
    if (term.size() != shape.size())
      return refuse("gives operand " + std::to_string(k) + " " +
                    std::to_string(term.size()) + " dimensions, it has " +
                    std::to_string(shape.size()));
    for (size_t d = 0; d < term.size(); ++d) {
      char c = term[d];
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return refuse(std::string("has the character '") + c +
                      "', not a letter");
      if (term.find(c) != d)
        return refuse(std::string("is not supported: letter '") + c +
                      "' twice in one operand (a diagonal)");
      auto [it, inserted] = terms.sizes.insert({c, shape[d]});
      if (!inserted && it->second != shape[d])
        return refuse(std::string("gives letter '") + c + "' sizes " +
                      std::to_string(it->second) + " and " +
                      std::to_string(shape[d]));
      ++counts[c];
    }
  }
  if (arrow == std::string::npos) {
    // Implicit form: the letters named once, in alphabetical order.
    for (auto [c, count] : counts)
      if (count == 1)
        terms.output += c;
  } else {
    terms.output = text.substr(arrow + 2);
    for (size_t d = 0; d < terms.output.size(); ++d) {
      char c = terms.output[d];
      if (!counts.count(c) || terms.output.find(c) != d)
        return refuse(std::string("has output letter '") + c +
                      "' that no operand names, or twice");
    }
  }
  return terms;
}

// Sums `value` (letters `term`) over the letters not in `keep`, returning
// the remaining letters in order.
static Value sumOutLetters(Importer &im, Location loc, Value value,
                           std::string &term, StringRef keep) {
  nn::Shape shape(shapeOf(value)), kept = shape, squeezed;
  std::string remaining;
  for (size_t d = 0; d < term.size(); ++d) {
    if (keep.contains(term[d])) {
      squeezed.push_back(shape[d]);
      remaining += term[d];
    } else {
      kept[d] = 1;
    }
  }
  if (remaining.size() == term.size())
    return value;
  term = remaining;
  Value sum = im.builder.create<nn::SumToShapeOp>(
      loc, im.tensorType(kept, im.builder.getF32Type()), value,
      im.builder.getF32FloatAttr(1.0f));
  return reshapeTo(im, loc, sum, squeezed);
}

// The permutation that puts `term`'s letters in the order of `target`.
static SmallVector<int64_t> lettersPerm(StringRef term, StringRef target) {
  SmallVector<int64_t> perm;
  for (char c : target)
    perm.push_back(int64_t(term.find(c)));
  return perm;
}

// Einsum of one or two float operands without repeated letters or
// ellipses, as torch.onnx exports torch.einsum for attention
// ("bhqd,bhkd->bhqk"), batched products ("bij,bjk->bik") and reductions
// ("bi,bi->b", "ij->i"): letters only one operand names and the output
// leaves out are summed first (nn.sum_to_shape); the rest is a transpose,
// one batched nn.matmul ([batch, lhs free, contracted] by [batch,
// contracted, rhs free]) and a transpose to the output's order. Autodiff
// differentiates the pieces.
static LogicalResult importEinsum(Importer &im, const onnx::NodeProto &node) {
  SmallVector<Value, 2> operands;
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<Value> v = im.getValue(node, i);
    if (failed(v))
      return failure();
    if (!cast<ShapedType>(v->getType()).getElementType().isF32())
      return im.nodeError(node) << "takes float32 operands only";
    operands.push_back(*v);
  }
  std::string equation = im.getString(node, "equation", "");
  FailureOr<EinsumTerms> terms = parseEinsum(im, node, equation, operands);
  if (failed(terms))
    return failure();
  Location loc = im.locOf(node);
  const std::string &out = terms->output;
  auto sizesOf = [&](StringRef letters) {
    nn::Shape shape;
    for (char c : letters)
      shape.push_back(terms->sizes[c]);
    return shape;
  };
  std::string &a = terms->inputs[0];
  if (operands.size() == 1) {
    Value summed = sumOutLetters(im, loc, operands[0], a, out);
    return im.define(node, transposeBy(im, loc, summed, lettersPerm(a, out)));
  }
  std::string &b = terms->inputs[1];
  Value lhs = sumOutLetters(im, loc, operands[0], a, out + b);
  Value rhs = sumOutLetters(im, loc, operands[1], b, out + a);
  std::string batch, contracted, lhsFree, rhsFree;
  for (char c : a) {
    if (b.find(c) == std::string::npos)
      lhsFree += c;
    else if (out.find(c) == std::string::npos)
      contracted += c;
    else
      batch += c;
  }
  for (char c : b)
    if (a.find(c) == std::string::npos)
      rhsFree += c;
  auto product = [&](StringRef letters) {
    return nn::getNumElements(sizesOf(letters));
  };
  int64_t n = product(batch), m = product(lhsFree), k = product(contracted),
          p = product(rhsFree);
  // Each operand read transposed by the GEMM where its letters already
  // stand that way round, so that no transpose runs.
  bool transposeLhs = a == batch + contracted + lhsFree && !lhsFree.empty();
  bool transposeRhs = b == batch + rhsFree + contracted && !rhsFree.empty();
  lhs =
      transposeBy(im, loc, lhs,
                  lettersPerm(a, transposeLhs ? batch + contracted + lhsFree
                                              : batch + lhsFree + contracted));
  rhs =
      transposeBy(im, loc, rhs,
                  lettersPerm(b, transposeRhs ? batch + rhsFree + contracted
                                              : batch + contracted + rhsFree));
  lhs = reshapeTo(im, loc, lhs,
                  transposeLhs ? nn::Shape{n, k, m} : nn::Shape{n, m, k});
  rhs = reshapeTo(im, loc, rhs,
                  transposeRhs ? nn::Shape{n, p, k} : nn::Shape{n, k, p});
  Value product3 = im.builder.create<nn::MatmulOp>(
      loc, im.tensorType({n, m, p}, im.builder.getF32Type()), lhs, rhs,
      im.builder.getBoolAttr(transposeLhs),
      im.builder.getBoolAttr(transposeRhs));
  std::string order = batch + lhsFree + rhsFree;
  Value result = reshapeTo(im, loc, product3, sizesOf(order));
  return im.define(node, transposeBy(im, loc, result, lettersPerm(order, out)));
}

ArrayRef<HandlerEntry> mlir::dpc::onnx_frontend::detail::mathHandlers() {
  static const HandlerEntry rows[] = {
      {"Relu", 13, &importUnary<nn::ReluOp>},
      {"Relu", 14, &importUnary<nn::ReluOp>},
// The elementwise functions, one per row of the runtime's table.
#define DPC_UNARY_FUNCTION(CODE, NAME, SINCE, ...)                             \
  {#NAME, SINCE, &importUnaryFunction<nn::NAME##Op>},
#include "dpc/runtime/UnaryFunctions.def"
      {"LeakyRelu", 16, &importUnaryFunction<nn::LeakyReluOp>},
      {"Gemm", 13, &importGemm},
      {"MatMul", 13, &importMatMul},
      {"Add", 13, &importBinary<nn::AddOp>},
      {"Add", 14, &importBinary<nn::AddOp>},
      {"Sub", 13, &importBinary<nn::SubOp>},
      {"Sub", 14, &importBinary<nn::SubOp>},
      {"Mul", 13, &importBinary<nn::MulOp>},
      {"Mul", 14, &importBinary<nn::MulOp>},
      {"Div", 13, &importBinary<nn::DivOp>},
      {"Div", 14, &importBinary<nn::DivOp>},
      {"Pow", 13, &importPow},
      {"Pow", 15, &importPow},
      {"ReduceMean", 13, &importReduce},
      {"ReduceSum", 13, &importReduce},
      {"Clip", 13, &importClip},
      {"Equal", 13, &importCompare},
      {"Less", 13, &importCompare},
      {"Greater", 13, &importCompare},
      {"LessOrEqual", 16, &importCompare},
      {"GreaterOrEqual", 16, &importCompare},
      {"And", 7, &importCompare},
      {"Or", 7, &importCompare},
      {"Xor", 7, &importCompare},
      {"Not", 1, &importNot},
      {"Where", 9, &importWhere},
      {"Where", 16, &importWhere},
      {"Trilu", 14, &importTrilu},
      {"Max", 13, &importMaxMin},
      {"Min", 13, &importMaxMin},
      {"CumSum", 14, &importCumSum},
      {"Einsum", 12, &importEinsum},
  };
  return rows;
}
