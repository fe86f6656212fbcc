//===- Math.cpp - ONNX math ops to nn -------------------------------------===//
//
// The handlers of ONNX's math ops, as onnx-mlir's Math/ folder groups them:
// Relu and the elementwise functions of UnaryFunctions.def, Gemm and MatMul,
// Add, Sub, Mul and Div (folded on the host when both operands are known at
// import time), Pow, ReduceMean and ReduceSum, Clip, and the masks (the
// comparisons and logic ops, Not, Where, Trilu) with the host folds they
// use; and their rows of the handler table.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>
#include <sstream>

using namespace mlir;
using namespace mlir::dpc;
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

template <typename OpTy>
static LogicalResult importBinary(Importer &im, const onnx::NodeProto &node) {
  if (im.isHost(node.input(0)) && im.isHost(node.input(1))) {
    FailureOr<HostTensor> l = im.getHost(node, 0), r = im.getHost(node, 1);
    if (failed(l) || failed(r))
      return failure();
    // Equal shapes, or a single number against a tensor.
    bool scalarL = l->size() == 1, scalarR = r->size() == 1;
    if (l->isFloat != r->isFloat ||
        (l->shape != r->shape && !scalarL && !scalarR))
      return im.nodeError(node) << "folds only operands of one element type "
                                   "with equal shapes or a single element";
    HostTensor out = scalarL && !scalarR ? *r : *l;
    for (int64_t i = 0; i < out.size(); ++i) {
      auto at = [&](const HostTensor &t) {
        int64_t k = t.size() == 1 ? 0 : i;
        return t.isFloat ? double(t.floats[k]) : double(t.ints[k]);
      };
      FailureOr<double> v =
          foldNumbers(node.op_type(), at(*l), at(*r), out.isFloat);
      if (failed(v))
        return im.nodeError(node) << "divides by zero at import time";
      if (out.isFloat)
        out.floats[i] = float(*v);
      else
        out.ints[i] = int64_t(*v);
    }
    return im.defineHost(node, std::move(out));
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
  double p = exponent->isFloat ? double(exponent->floats[0])
                               : double(exponent->ints[0]);
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

// Folds `f` over host tensors broadcast by the numpy rules.
static FailureOr<HostTensor>
foldBroadcast(ArrayRef<const HostTensor *> operands,
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

static double hostNumber(const HostTensor &t, int64_t i) {
  return t.isFloat ? double(t.floats[i]) : double(t.ints[i]);
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
          double u = hostNumber(a, o[0]), v = hostNumber(b, o[1]);
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
  };
  return rows;
}
