//===- Fused.cpp - nn.fused regions to generated loops --------------------===//
//
// An nn.fused op becomes a call of a kernel generated for it: a function of
// one flat memref per input and one for the result, whose body is a loop
// over the result's elements (vectors of kWidth floats while every input
// can be read so, then single elements) that loads each input once per
// element, computes the region's ops on scalars or vectors with arith and
// math, and stores the yielded value. The values between the region's ops
// live in registers only. The kernels are built in a module nested in the
// rank module; lowerFusedKernels replaces math functions by polynomial
// approximations, converts the module to the LLVM dialect (bare pointers
// for memrefs, so the segment calls a kernel with the tensors' pointers)
// and moves the functions into the rank module, with internal linkage.
// The loops run on the calling thread.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/Fused.h"

#include "passes/lowering/RuntimeLowering.h"

#include "dialects/nn/IR/NNOps.h"
#include "dpc/runtime/Abi.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

namespace {

// Floats per vector of the vectorised loop: two SSE registers on the
// generic x86-64 target the rank object is compiled for.
constexpr int64_t kWidth = 8;
// The nested module that holds the kernels until they are converted.
constexpr StringLiteral kKernelModule = "dpc_fused_kernels";

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getElementType().isF32();
}

// The functions of UnaryFunctions.def the loop computes, forward and
// gradient.
bool isFusibleFunction(int64_t code) {
  switch (code) {
  case DPC_UNARY_TANH:
  case DPC_UNARY_SIGMOID:
  case DPC_UNARY_EXP:
  case DPC_UNARY_LOG:
  case DPC_UNARY_SQRT:
  case DPC_UNARY_NEG:
  case DPC_UNARY_ERF:
  case DPC_UNARY_ABS:
  case DPC_UNARY_RECIPROCAL:
  case DPC_UNARY_LEAKY_RELU:
  case DPC_UNARY_SOFTPLUS:
  case DPC_UNARY_SOFTSIGN:
  case DPC_UNARY_HARD_SWISH:
  case DPC_UNARY_HARD_SIGMOID:
    return true;
  default:
    return false;
  }
}

// Scalar or vector float arithmetic at one place: what a row of
// UnaryFunctions.def writes in C, built as arith and math ops.
struct Arithmetic {
  OpBuilder &b;
  Location loc;
  Type type; // f32 or vector<kWidth x f32>

  Value c(double value) {
    if (auto vector = dyn_cast<VectorType>(type))
      return b.create<arith::ConstantOp>(
          loc, vector,
          DenseElementsAttr::get(vector, b.getF32FloatAttr(float(value))));
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(float(value)));
  }
  Value add(Value x, Value y) { return b.create<arith::AddFOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<arith::SubFOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulFOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<arith::DivFOp>(loc, x, y); }
  Value neg(Value x) { return b.create<arith::NegFOp>(loc, x); }
  Value abs(Value x) { return b.create<math::AbsFOp>(loc, x); }
  Value exp(Value x) { return b.create<math::ExpOp>(loc, x); }
  // fmaxf and fminf: the other operand where one is NaN.
  Value max(Value x, Value y) { return b.create<arith::MaxNumFOp>(loc, x, y); }
  Value min(Value x, Value y) { return b.create<arith::MinNumFOp>(loc, x, y); }
  Value cmp(arith::CmpFPredicate predicate, Value x, Value y) {
    return b.create<arith::CmpFOp>(loc, predicate, x, y);
  }
  Value select(Value condition, Value x, Value y) {
    return b.create<arith::SelectOp>(loc, condition, x, y);
  }
  // `condition(x, 0) ? x : y`, the rows' comparisons with zero.
  Value ifPositive(Value x, Value then, Value otherwise) {
    return select(cmp(arith::CmpFPredicate::OGT, x, c(0)), then, otherwise);
  }
  // dpc_sigmoid of ElementwiseMath.h: exponentiates -|x| only.
  Value sigmoid(Value x) {
    Value e = exp(neg(abs(x)));
    Value denominator = add(c(1), e);
    return select(cmp(arith::CmpFPredicate::OGE, x, c(0)),
                  div(c(1), denominator), div(e, denominator));
  }

  // f(x) of row `code`, with its attributes `p`.
  Value value(int64_t code, Value x, std::array<float, 2> p) {
    switch (code) {
    case DPC_UNARY_TANH:
      return b.create<math::TanhOp>(loc, x);
    case DPC_UNARY_SIGMOID:
      return sigmoid(x);
    case DPC_UNARY_EXP:
      return exp(x);
    case DPC_UNARY_LOG:
      return b.create<math::LogOp>(loc, x);
    case DPC_UNARY_SQRT:
      return b.create<math::SqrtOp>(loc, x);
    case DPC_UNARY_NEG:
      return neg(x);
    case DPC_UNARY_ERF:
      return b.create<math::ErfOp>(loc, x);
    case DPC_UNARY_ABS:
      return abs(x);
    case DPC_UNARY_RECIPROCAL:
      return div(c(1), x);
    case DPC_UNARY_LEAKY_RELU:
      return ifPositive(x, x, mul(c(p[0]), x));
    case DPC_UNARY_SOFTPLUS:
      return add(max(x, c(0)), b.create<math::Log1pOp>(loc, exp(neg(abs(x)))));
    case DPC_UNARY_SOFTSIGN:
      return div(x, add(c(1), abs(x)));
    case DPC_UNARY_HARD_SWISH:
      return div(mul(x, min(max(add(x, c(3)), c(0)), c(6))), c(6));
    case DPC_UNARY_HARD_SIGMOID:
      return max(c(0), min(c(1), add(mul(c(p[0]), x), c(p[1]))));
    }
    llvm_unreachable("not a fusible function");
  }

  // The input gradient of row `code` from the incoming gradient `g` and the
  // saved tensor `s`.
  Value grad(int64_t code, Value g, Value s, std::array<float, 2> p) {
    switch (code) {
    case DPC_UNARY_TANH:
      return mul(g, sub(c(1), mul(s, s)));
    case DPC_UNARY_SIGMOID:
      return mul(mul(g, s), sub(c(1), s));
    case DPC_UNARY_EXP:
      return mul(g, s);
    case DPC_UNARY_LOG:
      return div(g, s);
    case DPC_UNARY_SQRT:
      return div(g, mul(c(2), s));
    case DPC_UNARY_ERF:
      return mul(mul(g, c(1.12837916709551257)), exp(neg(mul(s, s))));
    case DPC_UNARY_ABS:
      return ifPositive(
          s, g, select(cmp(arith::CmpFPredicate::OLT, s, c(0)), neg(g), c(0)));
    case DPC_UNARY_RECIPROCAL:
      return mul(mul(neg(g), s), s);
    case DPC_UNARY_LEAKY_RELU:
      return ifPositive(s, g, mul(c(p[0]), g));
    case DPC_UNARY_SOFTPLUS:
      return mul(g, sigmoid(s));
    case DPC_UNARY_SOFTSIGN: {
      Value d = add(c(1), abs(s));
      return div(g, mul(d, d));
    }
    case DPC_UNARY_HARD_SWISH:
      return select(cmp(arith::CmpFPredicate::OLT, s, c(-3)), c(0),
                    select(cmp(arith::CmpFPredicate::OLE, s, c(3)),
                           mul(g, add(div(s, c(3)), c(0.5))), g));
    case DPC_UNARY_HARD_SIGMOID: {
      Value t = add(mul(c(p[0]), s), c(p[1]));
      Value inside =
          b.create<arith::AndIOp>(loc, cmp(arith::CmpFPredicate::OGT, t, c(0)),
                                  cmp(arith::CmpFPredicate::OLT, t, c(1)));
      return select(inside, mul(g, c(p[0])), c(0));
    }
    }
    llvm_unreachable("not a fusible gradient");
  }

  // One op of a fused region on the values of its operands.
  Value compute(Operation *op, ArrayRef<Value> x) {
    if (isa<nn::AddOp>(op))
      return add(x[0], x[1]);
    if (isa<nn::SubOp>(op))
      return sub(x[0], x[1]);
    if (isa<nn::MulOp>(op))
      return mul(x[0], x[1]);
    if (isa<nn::DivOp>(op))
      return div(x[0], x[1]);
    // std::max(x, 0): NaN stays NaN.
    if (isa<nn::ReluOp>(op))
      return select(cmp(arith::CmpFPredicate::OLT, x[0], c(0)), c(0), x[0]);
    if (isa<nn::ReluGradOp>(op))
      return ifPositive(x[1], x[0], c(0));
    auto unary = cast<nn::UnaryFunctionOpInterface>(op);
    std::array<float, 2> p = nn::unaryParameterValues(unary);
    if (unary.isUnaryGradient())
      return grad(unary.getUnaryFunction(), x[0], x[1], p);
    return value(unary.getUnaryFunction(), x[0], p);
  }
};

// Builds the loop from `begin` to `end` (multiples of `width` apart) of the
// kernel whose entry block `entry` takes `fused`'s inputs and its result as
// flat memrefs.
void buildLoop(OpBuilder &b, nn::FusedOp fused, Block *entry,
               ArrayRef<BroadcastAccess> accesses, int64_t begin, int64_t end,
               int64_t width) {
  Location loc = fused.getLoc();
  int64_t count = cast<RankedTensorType>(fused.getType()).getNumElements();
  auto index = [&](int64_t value) {
    return b.create<arith::ConstantIndexOp>(loc, value).getResult();
  };
  auto loop = b.create<scf::ForOp>(loc, index(begin), index(end), index(width));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value i = loop.getInductionVar();
  Type f32 = b.getF32Type();
  auto vectorType = VectorType::get({width}, f32);
  Arithmetic math{b, loc, width > 1 ? Type(vectorType) : f32};
  auto splat = [&](Value scalar) -> Value {
    return width > 1 ? b.create<vector::BroadcastOp>(loc, vectorType, scalar)
                     : scalar;
  };

  DenseMap<Value, Value> values;
  Block &body = fused.getBody().front();
  for (auto [arg, memref, access] :
       llvm::zip(body.getArguments(), entry->getArguments(), accesses)) {
    if (access.extent == 1) {
      values[arg] = splat(b.create<memref::LoadOp>(loc, memref, index(0)));
      continue;
    }
    Value element = i;
    if (access.inner > 1)
      element = b.create<arith::DivUIOp>(loc, element, index(access.inner));
    if (access.inner * access.extent != count)
      element = b.create<arith::RemUIOp>(loc, element, index(access.extent));
    if (access.inner == 1 && width > 1)
      values[arg] = b.create<vector::LoadOp>(loc, vectorType, memref, element);
    else
      values[arg] = splat(b.create<memref::LoadOp>(loc, memref, element));
  }
  for (Operation &op : body.without_terminator()) {
    SmallVector<Value> operands;
    for (Value operand : op.getOperands())
      operands.push_back(values.lookup(operand));
    values[op.getResult(0)] = math.compute(&op, operands);
  }
  Value result = values.lookup(body.getTerminator()->getOperand(0));
  Value out = entry->getArguments().back();
  if (width > 1)
    b.create<vector::StoreOp>(loc, result, out, i);
  else
    b.create<memref::StoreOp>(loc, result, out, i);
}

// Whether the vectorised loop can read an input with `access`: a vector of
// consecutive elements, or one element for the whole vector.
bool readsByVectors(BroadcastAccess access, int64_t count) {
  if (access.extent == 1)
    return true;
  if (access.inner == 1)
    return access.extent == count || access.extent % kWidth == 0;
  return access.inner % kWidth == 0;
}

// Adds kernel `name` for `fused` to `kernels`.
void buildKernel(ModuleOp kernels, StringRef name, nn::FusedOp fused) {
  OpBuilder b(kernels.getContext());
  b.setInsertionPointToEnd(kernels.getBody());
  Location loc = fused.getLoc();
  ArrayRef<int64_t> shape = shapeOf(fused.getResult());
  int64_t count = cast<RankedTensorType>(fused.getType()).getNumElements();
  SmallVector<Type> params;
  SmallVector<BroadcastAccess> accesses;
  bool vectorised = count >= kWidth;
  for (Value input : fused.getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    params.push_back(MemRefType::get({type.getNumElements()}, b.getF32Type()));
    std::optional<BroadcastAccess> access =
        broadcastAccess(type.getShape(), shape);
    assert(access && "fuse-elementwise groups broadcastable inputs only");
    accesses.push_back(*access);
    vectorised = vectorised && readsByVectors(*access, count);
  }
  params.push_back(MemRefType::get({count}, b.getF32Type()));
  auto kernel =
      b.create<func::FuncOp>(loc, name, b.getFunctionType(params, {}));
  Block *entry = kernel.addEntryBlock();
  b.setInsertionPointToStart(entry);
  int64_t vectorEnd = vectorised ? count / kWidth * kWidth : 0;
  if (vectorEnd > 0)
    buildLoop(b, fused, entry, accesses, 0, vectorEnd, kWidth);
  if (vectorEnd < count)
    buildLoop(b, fused, entry, accesses, vectorEnd, count, 1);
  b.create<func::ReturnOp>(loc);
}

// The polynomial approximations use math.fma, which on the generic x86-64
// target (no FMA instructions) would become a call of fmaf per element.
struct ExpandFma : OpRewritePattern<math::FmaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FmaOp fma,
                                PatternRewriter &rewriter) const override {
    Value product =
        rewriter.create<arith::MulFOp>(fma.getLoc(), fma.getA(), fma.getB());
    rewriter.replaceOpWithNewOp<arith::AddFOp>(fma, product, fma.getC());
    return success();
  }
};

ModuleOp kernelModule(ModuleOp module) {
  if (auto kernels = module.lookupSymbol<ModuleOp>(kKernelModule))
    return kernels;
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  return b.create<ModuleOp>(module.getLoc(), kKernelModule);
}

} // namespace

std::optional<BroadcastAccess>
lowering::broadcastAccess(ArrayRef<int64_t> operand, ArrayRef<int64_t> result) {
  if (operand.size() > result.size())
    return std::nullopt;
  SmallVector<int64_t> padded = padShape(operand, result.size());
  // The run of dimensions the operand spans: from its first dimension that
  // is not 1 to its last.
  int64_t first = -1, last = -1;
  for (auto [d, size] : llvm::enumerate(padded)) {
    if (size != 1 && size != result[d])
      return std::nullopt;
    if (size != 1) {
      first = first < 0 ? int64_t(d) : first;
      last = d;
    }
  }
  BroadcastAccess access;
  if (first < 0)
    return access;
  for (int64_t d = first; d <= last; ++d) {
    if (padded[d] != result[d])
      return std::nullopt;
    access.extent *= result[d];
  }
  for (size_t d = last + 1; d < result.size(); ++d)
    access.inner *= result[d];
  return access;
}

bool lowering::isFusible(Operation *op) {
  if (op->getNumResults() != 1 || !isF32Tensor(op->getResult(0).getType()) ||
      !llvm::all_of(op->getOperandTypes(), isF32Tensor))
    return false;
  if (isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp>(op))
    return llvm::all_of(op->getOperands(), [&](Value operand) {
      return broadcastAccess(shapeOf(operand), shapeOf(op->getResult(0)))
          .has_value();
    });
  if (isa<nn::ReluOp, nn::ReluGradOp>(op))
    return true;
  auto unary = dyn_cast<nn::UnaryFunctionOpInterface>(op);
  return unary && isFusibleFunction(unary.getUnaryFunction());
}

void lowering::populateFusedLowerings(RuntimeLoweringTable &table) {
  table.add<nn::FusedOp>([](nn::FusedOp fused, RuntimeLowering &rt) {
    ModuleOp kernels = kernelModule(rt.module);
    std::string name =
        "dpc_fused_" +
        std::to_string(llvm::range_size(kernels.getOps<func::FuncOp>()));
    buildKernel(kernels, name, fused);
    Value out = rt.alloc(fused.getResult());
    SmallVector<Value> args;
    for (Value input : fused.getInputs())
      args.push_back(rt.ptrOf(input));
    args.push_back(out);
    rt.callGenerated(name, args);
    rt.define(fused.getResult(), out);
  });
}

LogicalResult lowering::lowerFusedKernels(
    ModuleOp module,
    const std::function<LogicalResult(OpPassManager &, Operation *)>
        &runPipeline) {
  auto kernels = module.lookupSymbol<ModuleOp>(kKernelModule);
  if (!kernels)
    return success();
  MLIRContext *ctx = module.getContext();
  RewritePatternSet patterns(ctx);
  populateMathPolynomialApproximationPatterns(patterns);
  patterns.add<ExpandFma>(ctx);
  if (failed(applyPatternsAndFoldGreedily(kernels, std::move(patterns))))
    return kernels.emitError("cannot approximate the fused kernels' math");

  OpPassManager pm(ModuleOp::getOperationName());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions bare;
  bare.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(bare));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(runPipeline(pm, kernels)))
    return failure();

  // The segments declared each kernel when they called it.
  Block *body = module.getBody();
  for (Operation &op : llvm::make_early_inc_range(*kernels.getBody())) {
    auto function = dyn_cast<LLVM::LLVMFuncOp>(op);
    if (!function)
      return op.emitError("fused kernel not lowered to the LLVM dialect");
    if (auto declared =
            module.lookupSymbol<LLVM::LLVMFuncOp>(function.getSymName())) {
      if (!declared.isExternal())
        return declared.emitError("fused kernel defined twice");
      declared.erase();
    }
    if (!function.isExternal())
      function.setLinkage(LLVM::Linkage::Internal);
    function->moveBefore(body, body->end());
  }
  kernels.erase();
  return success();
}
