//===- NNInterfaces.td - nn dialect interfaces -------------*- tablegen -*-===//

#ifndef DPC_DIALECTS_NN_IR_NNINTERFACES_TD
#define DPC_DIALECTS_NN_IR_NNINTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::dpc::nn";
  let description = [{
    The gradient rule of a differentiable nn op, used by the `autodiff`
    pass. Given the gradients of the op's results, the rule builds the ops
    that compute the gradients of the operands that need one. Rules build
    separate ops for input and weight gradients, and skip operands that do
    not need a gradient (the model's input, for example), so no work is
    built that nothing consumes.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the operands marked in `needed` from
        `resultGrads` (one per result) at the builder's insertion point, and
        stores them in `operandGrads` (one per operand; null where not
        needed).
      }],
      "void", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::ArrayRef<bool>":$needed,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // DPC_DIALECTS_NN_IR_NNINTERFACES_TD
