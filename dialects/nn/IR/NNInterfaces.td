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

def NN_InferResultOpInterface : OpInterface<"InferResultOpInterface"> {
  let cppNamespace = "::mlir::dpc::nn";
  let description = [{
    An op whose one result type follows from its operands and attributes by
    a shape rule of ShapeInference.h, as upstream dialects infer theirs with
    inferReturnTypes: the op states the rule once, in inferResultType, and
    one verifier shared by every such op compares the declared result type
    with it ("expects result of shape ..., got ..."). What an op checks
    beyond its result type stays in its own verifier, which runs after this
    one.
  }];
  let methods = [
    InterfaceMethod<[{
        The result type the operands and attributes imply. Emits an error on
        the op and fails where they do not fit together.
      }],
      "::mlir::FailureOr<::mlir::RankedTensorType>", "inferResultType">,
    InterfaceMethod<"The result's name in the verifier's messages.",
      "::llvm::StringRef", "getInferredResultName", (ins), [{}],
      [{ return "result"; }]>,
  ];
  let verify = [{ return ::mlir::dpc::nn::verifyInferredResult($_op); }];
}

// An op whose result type its inferResultType gives.
def NN_InferResult : DeclareOpInterfaceMethods<NN_InferResultOpInterface>;

def NN_OptimizerUpdateOpInterface : OpInterface<"OptimizerUpdateOpInterface"> {
  let cppNamespace = "::mlir::dpc::nn";
  let description = [{
    An optimizer update: writes the parameter that `nn.param` reads from its
    gradient, keeping optimizer state beside it. Outlining, memory planning
    and lowering treat every optimizer alike through this interface.
  }];
  let methods = [
    InterfaceMethod<"The parameter read (from `nn.param`).",
      "::mlir::Value", "getParam">,
    InterfaceMethod<"The parameter's gradient.",
      "::mlir::Value", "getGrad">,
    InterfaceMethod<[{
        The optimizer state tensors the runtime keeps per parameter, each of
        the parameter's shape (SGD's momentum; Adam's two moments).
      }],
      "int64_t", "getNumStateTensors">,
  ];
  let extraClassDeclaration = [{
    /// Points the update at another parameter read and gradient (outlining
    /// moves it into a stage's optimizer segment).
    void setParamAndGrad(::mlir::Value param, ::mlir::Value grad) {
      (*this)->setOperand(0, param);
      (*this)->setOperand(1, grad);
    }
  }];
}

def NN_UnaryFunctionOpInterface : OpInterface<"UnaryFunctionOpInterface"> {
  let cppNamespace = "::mlir::dpc::nn";
  let description = [{
    An elementwise function of one float tensor (nn.tanh, nn.erf, ...) or its
    input gradient (nn.tanh_grad, ...): a row of the runtime's
    UnaryFunctions.def, which gives its kernel code, which forward tensor
    its gradient reads, and its costs. Lowering and the cost model treat
    every such op alike through this interface.
  }];
  let methods = [
    InterfaceMethod<"The function's ABI code (DPC_UNARY_*).",
      "int64_t", "getUnaryFunction">,
    InterfaceMethod<[{
        Whether this is the input gradient (operands: the result's gradient
        and the saved tensor) rather than the function (operand: the input).
      }],
      "bool", "isUnaryGradient">,
  ];
}

#endif // DPC_DIALECTS_NN_IR_NNINTERFACES_TD
