//===- Elementwise.cpp - Elementwise and broadcasting ops -----------------===//
//
// Broadcasting arithmetic and comparisons (operand shapes padded to the
// result's rank), masks and casts, clips, cumsums, relu, dropout, and every
// function
// of include/dpc/runtime/UnaryFunctions.def through one dpc_unary call keyed
// by the op's function code.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/RuntimeLowering.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/nn/IR/ShapeInference.h"
#include "dpc/runtime/Abi.h"

#include "llvm/ADT/StringSwitch.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::dpc;
using namespace mlir::dpc::lowering;

namespace {

// dpc_binary's function code of a broadcasting binary op.
int64_t binaryCode(Operation *op) {
  if (isa<nn::SubOp>(op))
    return DPC_BINARY_SUB;
  if (isa<nn::MulOp>(op))
    return DPC_BINARY_MUL;
  if (isa<nn::DivOp>(op))
    return DPC_BINARY_DIV;
  assert(isa<nn::AddOp>(op) && "not a binary op");
  return DPC_BINARY_ADD;
}

// dpc_compare's function code of nn.compare and nn.logical.
int64_t compareCode(StringRef name) {
  return llvm::StringSwitch<int64_t>(name)
      .Case("eq", DPC_COMPARE_EQ)
      .Case("lt", DPC_COMPARE_LT)
      .Case("gt", DPC_COMPARE_GT)
      .Case("le", DPC_COMPARE_LE)
      .Case("ge", DPC_COMPARE_GE)
      .Case("and", DPC_COMPARE_AND)
      .Case("or", DPC_COMPARE_OR)
      .Default(DPC_COMPARE_XOR);
}

} // namespace

void lowering::populateElementwiseLowerings(RuntimeLoweringTable &table) {
  table.add<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp>(
      [](auto binary, RuntimeLowering &rt) {
        size_t rank = shapeOf(binary).size();
        Ptr y = rt.alloc(binary);
        rt.call<abi::dpc_binary>(
            {rt.i64(binaryCode(binary)), rt.ptrOf(binary.getLhs()),
             rt.constArray(padShape(shapeOf(binary.getLhs()), rank)),
             rt.ptrOf(binary.getRhs()),
             rt.constArray(padShape(shapeOf(binary.getRhs()), rank)), y,
             rt.shape(binary), rt.i64(rank)});
        rt.define(binary, y);
      });
  table.add<nn::DropoutOp, nn::DropoutGradOp>([](auto dropout,
                                                 RuntimeLowering &rt) {
    // The mask's key for this microbatch, then the kernel; the gradient
    // is the same kernel on the result's gradient.
    Ptr out = rt.alloc(dropout);
    auto key =
        rt.call<abi::dpc_random_key>({rt.context, rt.i64(dropout.getMaskId())});
    rt.call<abi::dpc_dropout>({rt.ptrOf(dropout->getOperand(0)), out,
                               rt.i64(nn::getNumElements(shapeOf(dropout))),
                               rt.f32(dropout.getRatio().convertToFloat()),
                               key});
    rt.define(dropout, out);
  });
  table.add<nn::CompareOp, nn::LogicalOp>(
      [](auto compare, RuntimeLowering &rt) {
        size_t rank = shapeOf(compare).size();
        StringRef name = [&] {
          if constexpr (std::is_same_v<decltype(compare), nn::CompareOp>)
            return compare.getPredicate();
          else
            return compare.getKind();
        }();
        Ptr y = rt.alloc(compare);
        rt.call<abi::dpc_compare>(
            {rt.i64(compareCode(name)), rt.i64(dtypeCode(compare.getLhs())),
             rt.ptrOf(compare.getLhs()),
             rt.constArray(padShape(shapeOf(compare.getLhs()), rank)),
             rt.ptrOf(compare.getRhs()),
             rt.constArray(padShape(shapeOf(compare.getRhs()), rank)), y,
             rt.shape(compare), rt.i64(rank)});
        rt.define(compare, y);
      });
  table.add<nn::NotOp>([](nn::NotOp negation, RuntimeLowering &rt) {
    Ptr y = rt.alloc(negation);
    rt.call<abi::dpc_not>({rt.ptrOf(negation.getInput()), y,
                           rt.i64(nn::getNumElements(shapeOf(negation)))});
    rt.define(negation, y);
  });
  table.add<nn::CastOp>([](nn::CastOp conversion, RuntimeLowering &rt) {
    Ptr y = rt.alloc(conversion);
    rt.call<abi::dpc_cast>({rt.i64(dtypeCode(conversion.getInput())),
                            rt.i64(dtypeCode(conversion.getResult())),
                            rt.ptrOf(conversion.getInput()), y,
                            rt.i64(nn::getNumElements(shapeOf(conversion)))});
    rt.define(conversion, y);
  });
  table.add<nn::WhereOp>([](nn::WhereOp where, RuntimeLowering &rt) {
    size_t rank = shapeOf(where).size();
    Ptr y = rt.alloc(where);
    rt.call<abi::dpc_where>(
        {rt.ptrOf(where.getCondition()),
         rt.constArray(padShape(shapeOf(where.getCondition()), rank)),
         rt.ptrOf(where.getLhs()),
         rt.constArray(padShape(shapeOf(where.getLhs()), rank)),
         rt.ptrOf(where.getRhs()),
         rt.constArray(padShape(shapeOf(where.getRhs()), rank)), y,
         rt.shape(where), rt.i64(rank)});
    rt.define(where, y);
  });
  table.add<nn::WhereGradOp>([](nn::WhereGradOp grad, RuntimeLowering &rt) {
    size_t rank = shapeOf(grad).size();
    Ptr dx = rt.alloc(grad);
    rt.call<abi::dpc_where_grad>(
        {rt.ptrOf(grad.getCondition()),
         rt.constArray(padShape(shapeOf(grad.getCondition()), rank)),
         rt.ptrOf(grad.getResultGrad()), dx, rt.shape(grad), rt.i64(rank),
         rt.i64(grad.getBranch())});
    rt.define(grad, dx);
  });
  table.add<nn::CumSumOp>([](nn::CumSumOp cumsum, RuntimeLowering &rt) {
    ArrayRef<int64_t> shape = shapeOf(cumsum);
    int64_t axis = cumsum.getAxisAttr().getInt();
    Ptr y = rt.alloc(cumsum);
    rt.call<abi::dpc_cumsum>(
        {rt.ptrOf(cumsum.getInput()), y,
         rt.i64(nn::getNumElements(shape.take_front(axis))),
         rt.i64(shape[axis]),
         rt.i64(nn::getNumElements(shape.drop_front(axis + 1))),
         rt.i64(cumsum.getExclusive()), rt.i64(cumsum.getReverse())});
    rt.define(cumsum, y);
  });
  table.add<nn::ClipOp>([](nn::ClipOp clip, RuntimeLowering &rt) {
    Ptr y = rt.alloc(clip);
    rt.call<abi::dpc_clip>({rt.ptrOf(clip.getInput()), y,
                            rt.i64(nn::getNumElements(shapeOf(clip))),
                            rt.f32(clip.getMin().convertToFloat()),
                            rt.f32(clip.getMax().convertToFloat())});
    rt.define(clip, y);
  });
  table.add<nn::ClipGradOp>([](nn::ClipGradOp grad, RuntimeLowering &rt) {
    Ptr dx = rt.alloc(grad);
    rt.call<abi::dpc_clip_grad>({rt.ptrOf(grad.getResultGrad()),
                                 rt.ptrOf(grad.getInput()), dx,
                                 rt.i64(nn::getNumElements(shapeOf(grad))),
                                 rt.f32(grad.getMin().convertToFloat()),
                                 rt.f32(grad.getMax().convertToFloat())});
    rt.define(grad, dx);
  });
  table.add<nn::ReluOp>([](nn::ReluOp relu, RuntimeLowering &rt) {
    Ptr y = rt.alloc(relu);
    rt.call<abi::dpc_relu>({rt.ptrOf(relu.getInput()), y,
                            rt.i64(nn::getNumElements(shapeOf(relu)))});
    rt.define(relu, y);
  });
  table.add<nn::ReluGradOp>([](nn::ReluGradOp grad, RuntimeLowering &rt) {
    Ptr dx = rt.alloc(grad);
    rt.call<abi::dpc_relu_grad>({rt.ptrOf(grad.getResultGrad()),
                                 rt.ptrOf(grad.getResult()), dx,
                                 rt.i64(nn::getNumElements(shapeOf(grad)))});
    rt.define(grad, dx);
  });
  table.addInterface<nn::UnaryFunctionOpInterface>(
      [](nn::UnaryFunctionOpInterface unary, RuntimeLowering &rt) {
        // dpc_unary(fn, a, b, x, y, n) or
        // dpc_unary_grad(fn, a, b, dy, saved, dx, n).
        Value result = unary->getResult(0);
        Ptr out = rt.alloc(result);
        std::array<float, 2> params = nn::unaryParameterValues(unary);
        I64 fn = rt.i64(unary.getUnaryFunction());
        F32 a = rt.f32(params[0]), b = rt.f32(params[1]);
        I64 count = rt.i64(nn::getNumElements(shapeOf(result)));
        if (unary.isUnaryGradient())
          rt.call<abi::dpc_unary_grad>(
              {fn, a, b, rt.ptrOf(unary->getOperand(0)),
               rt.ptrOf(unary->getOperand(1)), out, count});
        else
          rt.call<abi::dpc_unary>(
              {fn, a, b, rt.ptrOf(unary->getOperand(0)), out, count});
        rt.define(result, out);
      });
}
