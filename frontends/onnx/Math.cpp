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
LogicalResult Importer::importUnary(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  return define(node, builder.create<OpTy>(locOf(node), *input));
}

template <typename OpTy>
LogicalResult Importer::importUnaryFunction(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  // The attributes the function's row names, at their ONNX defaults when
  // the node leaves them out.
  const ::dpc::runtime::UnaryFunctionInfo *info =
      ::dpc::runtime::lookupUnaryFunction(OpTy::kUnaryFunction);
  SmallVector<NamedAttribute> params;
  for (int i = 0; i < 2; ++i)
    if (*info->params[i])
      params.push_back(builder.getNamedAttr(
          info->params[i], builder.getF32FloatAttr(getFloat(
                               node, info->params[i], info->defaults[i]))));
  return define(node,
                builder.create<OpTy>(locOf(node), TypeRange{input->getType()},
                                     ValueRange{*input}, params));
}

LogicalResult Importer::importGemm(const onnx::NodeProto &node) {
  FailureOr<Value> a = getValue(node, 0);
  FailureOr<Value> b =
      failed(a) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(b))
    return failure();
  if (getFloat(node, "alpha", 1.0f) != 1.0f)
    return nodeError(node) << "alpha other than 1 is not supported";
  if (hasInput(node, 2) && getFloat(node, "beta", 1.0f) != 1.0f)
    return nodeError(node) << "beta other than 1 is not supported";
  if (shapeOf(*a).size() != 2 || shapeOf(*b).size() != 2)
    return nodeError(node) << "expects rank-2 A and B";
  bool transA = getInt(node, "transA", 0), transB = getInt(node, "transB", 0);
  FailureOr<nn::Shape> shape =
      nn::inferMatmulShape(shapeOf(*a), shapeOf(*b), transA, transB,
                           [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  Type elementType = cast<RankedTensorType>(a->getType()).getElementType();
  Value result = builder.create<nn::MatmulOp>(
      locOf(node), tensorType(*shape, elementType), *a, *b,
      builder.getBoolAttr(transA), builder.getBoolAttr(transB));
  if (hasInput(node, 2)) {
    FailureOr<Value> c = getValue(node, 2);
    if (failed(c))
      return failure();
    // C broadcasts to the product's shape, never the other way round.
    FailureOr<nn::Shape> sum = nn::inferBroadcastShape(
        *shape, shapeOf(*c), [&] { return nodeError(node); });
    if (failed(sum))
      return failure();
    if (ArrayRef<int64_t>(*sum) != ArrayRef<int64_t>(*shape))
      return nodeError(node)
             << "C of shape " << nn::formatShape(shapeOf(*c))
             << " does not broadcast to " << nn::formatShape(*shape);
    result =
        builder.create<nn::AddOp>(locOf(node), result.getType(), result, *c);
  }
  return define(node, result);
}

LogicalResult Importer::importMatMul(const onnx::NodeProto &node) {
  FailureOr<Value> a = getValue(node, 0);
  FailureOr<Value> b =
      failed(a) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(b))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferMatmulShape(
      shapeOf(*a), shapeOf(*b), false, false, [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  Type elementType = cast<RankedTensorType>(a->getType()).getElementType();
  return define(node,
                builder.create<nn::MatmulOp>(
                    locOf(node), tensorType(*shape, elementType), *a, *b,
                    builder.getBoolAttr(false), builder.getBoolAttr(false)));
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
LogicalResult Importer::importBinary(const onnx::NodeProto &node) {
  if (isHost(node.input(0)) && isHost(node.input(1))) {
    FailureOr<HostTensor> l = getHost(node, 0), r = getHost(node, 1);
    if (failed(l) || failed(r))
      return failure();
    // Equal shapes, or a single number against a tensor.
    bool scalarL = l->size() == 1, scalarR = r->size() == 1;
    if (l->isFloat != r->isFloat ||
        (l->shape != r->shape && !scalarL && !scalarR))
      return nodeError(node) << "folds only operands of one element type "
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
        return nodeError(node) << "divides by zero at import time";
      if (out.isFloat)
        out.floats[i] = float(*v);
      else
        out.ints[i] = int64_t(*v);
    }
    return defineHost(node, std::move(out));
  }
  FailureOr<Value> l = getValue(node, 0);
  FailureOr<Value> r =
      failed(l) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(r))
    return failure();
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      shapeOf(*l), shapeOf(*r), [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  Type elementType = cast<RankedTensorType>(l->getType()).getElementType();
  return define(node,
                builder.create<OpTy>(locOf(node),
                                     tensorType(*shape, elementType), *l, *r));
}

LogicalResult Importer::importPow(const onnx::NodeProto &node) {
  FailureOr<HostTensor> exponent = getHost(node, 1);
  if (failed(exponent))
    return failure();
  if (exponent->size() != 1)
    return nodeError(node) << "expects a single exponent, got "
                           << exponent->size() << " values";
  double p = exponent->isFloat ? double(exponent->floats[0])
                               : double(exponent->ints[0]);
  FailureOr<Value> base = getValue(node, 0);
  if (failed(base))
    return failure();
  Location loc = locOf(node);
  if (p == 1.0)
    return define(node, *base);
  if (p == 2.0)
    return define(
        node, builder.create<nn::MulOp>(loc, base->getType(), *base, *base));
  if (p == 0.5)
    return define(node, builder.create<nn::SqrtOp>(loc, *base));
  std::ostringstream text;
  text << p;
  return nodeError(node) << "exponent " << text.str()
                         << " is not supported (only 0.5, 1 and 2)";
}

LogicalResult Importer::importReduce(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*input);
  size_t rank = shape.size();
  bool mean = node.op_type() == "ReduceMean";
  // ReduceMean-13 has its axes as an attribute, ReduceSum-13 as an input.
  std::vector<int64_t> axes;
  if (mean) {
    axes = getInts(node, "axes", {});
  } else if (hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> given = getHostInts(node, 1);
    if (failed(given))
      return failure();
    axes = *given;
  }
  if (axes.empty()) {
    if (!mean && getInt(node, "noop_with_empty_axes", 0))
      return define(node, *input);
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
        nn::normalizeAxis(axis, rank, [&] { return nodeError(node); });
    if (failed(d))
      return failure();
    if (reduced[*d])
      return nodeError(node) << "reduces axis " << axis << " twice";
    reduced[*d] = true;
    count *= shape[*d];
    kept[*d] = 1;
  }
  if (mean && count == 0)
    return nodeError(node) << "averages over no elements";
  Type elementType = cast<RankedTensorType>(input->getType()).getElementType();
  Location loc = locOf(node);
  float scale = mean ? 1.0f / float(count) : 1.0f;
  Value sum =
      builder.create<nn::SumToShapeOp>(loc, tensorType(kept, elementType),
                                       *input, builder.getF32FloatAttr(scale));
  if (getInt(node, "keepdims", 1))
    return define(node, sum);
  nn::Shape squeezed;
  for (size_t d = 0; d < rank; ++d)
    if (!reduced[d])
      squeezed.push_back(shape[d]);
  return define(node, builder.create<nn::ReshapeOp>(
                          loc, tensorType(squeezed, elementType), sum));
}

// Clip with bounds known at import time (ReLU6: 0 and 6); an absent bound
// is infinite.
LogicalResult Importer::importClip(const onnx::NodeProto &node) {
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  float bounds[2] = {-std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::infinity()};
  for (int index : {1, 2}) {
    if (!hasInput(node, index))
      continue;
    FailureOr<HostTensor> bound = getHost(node, index);
    if (failed(bound))
      return failure();
    if (!bound->isFloat || bound->floats.size() != 1)
      return nodeError(node) << "expects a float scalar for input '"
                             << node.input(index) << "'";
    bounds[index - 1] = bound->floats[0];
  }
  if (!(bounds[0] <= bounds[1]))
    return nodeError(node) << "min " << bounds[0] << " exceeds max "
                           << bounds[1];
  return define(
      node, builder.create<nn::ClipOp>(locOf(node), input->getType(), *input,
                                       builder.getF32FloatAttr(bounds[0]),
                                       builder.getF32FloatAttr(bounds[1])));
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

LogicalResult Importer::importCompare(const onnx::NodeProto &node) {
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
  if (isHost(node.input(0)) && isHost(node.input(1))) {
    FailureOr<HostTensor> l = getHost(node, 0), r = getHost(node, 1);
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
        [&] { return nodeError(node); });
    if (failed(out))
      return failure();
    out->isBool = true;
    return defineHost(node, std::move(*out));
  }
  FailureOr<Value> l = getValue(node, 0);
  FailureOr<Value> r =
      failed(l) ? FailureOr<Value>(failure()) : getValue(node, 1);
  if (failed(r))
    return failure();
  Type lt = cast<ShapedType>(l->getType()).getElementType();
  Type rt = cast<ShapedType>(r->getType()).getElementType();
  if (lt != rt)
    return nodeError(node) << "compares tensors of one element type, got " << lt
                           << " and " << rt;
  bool accepted = logical ? lt.isInteger(1)
                          : lt.isF32() || lt.isInteger(64) ||
                                (lt.isInteger(1) && name == "eq");
  if (!accepted)
    return nodeError(node) << "does not take tensors of element type " << lt;
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      shapeOf(*l), shapeOf(*r), [&] { return nodeError(node); });
  if (failed(shape))
    return failure();
  auto type = tensorType(*shape, builder.getI1Type());
  if (logical)
    return define(
        node, builder.create<nn::LogicalOp>(locOf(node), type, *l, *r, name));
  return define(node,
                builder.create<nn::CompareOp>(locOf(node), type, *l, *r, name));
}

LogicalResult Importer::importNot(const onnx::NodeProto &node) {
  if (isHost(node.input(0))) {
    FailureOr<HostTensor> t = getHost(node, 0);
    if (failed(t))
      return failure();
    for (int64_t &i : t->ints)
      i = i == 0;
    return defineHost(node, std::move(*t));
  }
  FailureOr<Value> input = getValue(node, 0);
  if (failed(input))
    return failure();
  return define(
      node, builder.create<nn::NotOp>(locOf(node), input->getType(), *input));
}

LogicalResult Importer::importWhere(const onnx::NodeProto &node) {
  if (isHost(node.input(0)) && isHost(node.input(1)) && isHost(node.input(2))) {
    FailureOr<HostTensor> c = getHost(node, 0), a = getHost(node, 1),
                          b = getHost(node, 2);
    if (failed(c) || failed(a) || failed(b))
      return failure();
    if (a->isFloat != b->isFloat)
      return nodeError(node) << "folds only branches of one element type";
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
        [&] { return nodeError(node); });
    if (failed(out))
      return failure();
    out->isFloat = a->isFloat;
    out->isBool = a->isBool && b->isBool;
    return defineHost(node, std::move(*out));
  }
  SmallVector<Value, 3> operands;
  for (int i = 0; i < 3; ++i) {
    FailureOr<Value> v = getValue(node, i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  if (!cast<ShapedType>(operands[0].getType()).getElementType().isInteger(1))
    return nodeError(node) << "expects a boolean condition";
  Type elementType = cast<ShapedType>(operands[1].getType()).getElementType();
  if (!elementType.isF32() ||
      cast<ShapedType>(operands[2].getType()).getElementType() != elementType)
    return nodeError(node) << "selects only between float32 tensors";
  auto error = [&] { return nodeError(node); };
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      shapeOf(operands[0]), shapeOf(operands[1]), error);
  if (succeeded(shape))
    shape = nn::inferBroadcastShape(*shape, shapeOf(operands[2]), error);
  if (failed(shape))
    return failure();
  return define(node, builder.create<nn::WhereOp>(
                          locOf(node), tensorType(*shape, elementType),
                          operands[0], operands[1], operands[2]));
}

// Trilu of a constant (the causal mask torch.triu/tril builds in forward).
LogicalResult Importer::importTrilu(const onnx::NodeProto &node) {
  if (!isHost(node.input(0)))
    return nodeError(node) << "folds only Trilu of a constant; a causal mask "
                              "built from tensors the model computes is not "
                              "supported";
  FailureOr<HostTensor> t = getHost(node, 0);
  if (failed(t))
    return failure();
  int64_t k = 0;
  if (hasInput(node, 1)) {
    FailureOr<std::vector<int64_t>> kk = getHostInts(node, 1);
    if (failed(kk))
      return failure();
    if (kk->size() != 1)
      return nodeError(node) << "expects a single k";
    k = (*kk)[0];
  }
  if (t->shape.size() < 2)
    return nodeError(node) << "expects a tensor of rank >= 2";
  bool upper = getInt(node, "upper", 1) != 0;
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
  return defineHost(node, std::move(*t));
}

ArrayRef<Importer::HandlerEntry> Importer::mathHandlers() {
  static const HandlerEntry rows[] = {
      {"Relu", 13, &Importer::importUnary<nn::ReluOp>},
      {"Relu", 14, &Importer::importUnary<nn::ReluOp>},
// The elementwise functions, one per row of the runtime's table.
#define DPC_UNARY_FUNCTION(CODE, NAME, SINCE, ...)                             \
  {#NAME, SINCE, &Importer::importUnaryFunction<nn::NAME##Op>},
#include "dpc/runtime/UnaryFunctions.def"
      {"LeakyRelu", 16, &Importer::importUnaryFunction<nn::LeakyReluOp>},
      {"Gemm", 13, &Importer::importGemm},
      {"MatMul", 13, &Importer::importMatMul},
      {"Add", 13, &Importer::importBinary<nn::AddOp>},
      {"Add", 14, &Importer::importBinary<nn::AddOp>},
      {"Sub", 13, &Importer::importBinary<nn::SubOp>},
      {"Sub", 14, &Importer::importBinary<nn::SubOp>},
      {"Mul", 13, &Importer::importBinary<nn::MulOp>},
      {"Mul", 14, &Importer::importBinary<nn::MulOp>},
      {"Div", 13, &Importer::importBinary<nn::DivOp>},
      {"Div", 14, &Importer::importBinary<nn::DivOp>},
      {"Pow", 13, &Importer::importPow},
      {"Pow", 15, &Importer::importPow},
      {"ReduceMean", 13, &Importer::importReduce},
      {"ReduceSum", 13, &Importer::importReduce},
      {"Clip", 13, &Importer::importClip},
      {"Equal", 13, &Importer::importCompare},
      {"Less", 13, &Importer::importCompare},
      {"Greater", 13, &Importer::importCompare},
      {"LessOrEqual", 16, &Importer::importCompare},
      {"GreaterOrEqual", 16, &Importer::importCompare},
      {"And", 7, &Importer::importCompare},
      {"Or", 7, &Importer::importCompare},
      {"Xor", 7, &Importer::importCompare},
      {"Not", 1, &Importer::importNot},
      {"Where", 9, &Importer::importWhere},
      {"Where", 16, &Importer::importWhere},
      {"Trilu", 14, &Importer::importTrilu},
  };
  return rows;
}
