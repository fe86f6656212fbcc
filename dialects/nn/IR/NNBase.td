//===- NNBase.td - nn dialect definition -------------------*- tablegen -*-===//
//
// The nn dialect holds the tensor computations of a neural network's training
// step: forward ops as imported from ONNX, their gradient ops as built by
// autodiff, the loss and the optimizer updates. Everything is value semantics
// on statically shaped builtin tensors, except parameters, which are named
// state read by `nn.param` and written by the optimizer ops.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNBASE_TD
#define DPC_DIALECTS_NN_IR_NNBASE_TD

include "dialects/nn/IR/NNInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::mlir::dpc::nn";
  let summary = "Tensor operations of neural-network training";
  let hasOperationAttrVerify = 1;
  let description = [{
    The `nn` dialect is dpc's model IR. The ONNX frontend imports a model's
    forward computation into it; the `autodiff` pass appends the loss, the
    gradient ops and the optimizer updates. Each forward op with weights has
    separate gradient ops for its input and for its weights (for example
    `nn.conv2d_grad_input` and `nn.conv2d_grad_filter`), so that zero-bubble
    schedules can run the weight gradients later than the input gradients.

    Tensors are builtin ranked tensors with static shapes. Parameters are not
    constants of the IR: `nn.param` names them, and their data lives in the
    weights files that `dpc compile` writes.
  }];
}

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits>;

// The gradient rule of an op whose first operand is the only one with a
// gradient: a `gradOp` of that operand's type, built from the result's
// gradient and then `args`, the forward op's values and attributes it
// reads, as C++ getters of the forward op. An op with
// DeclareOpInterfaceMethods<NN_GradientOpInterface> among its traits states
// it in one line:
//   let extraClassDefinition = NN_InputGradient<"ReluGradOp", "getResult()">.rule;
// Rules of more than one gradient are C++ in the op's family file.
class NN_InputGradient<string gradOp, string args = ""> {
  code rule = [{
    void $cppClass::buildGradients(::mlir::OpBuilder &builder,
        ::mlir::ValueRange resultGrads, ::llvm::ArrayRef<bool> needed,
        ::llvm::SmallVectorImpl<::mlir::Value> &operandGrads) {
      ::mlir::dpc::nn::buildInputGradient<}] # gradOp # [{>(*this, builder,
          resultGrads, needed, operandGrads}] # !if(!empty(args), "", ", ")
          # args # [{);
    }
  }];
}

// Float tensors with static shape: the values the dialect computes on.
def NN_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16]>;
// Class indices of a classification loss.
def NN_IndexTensor : StaticShapeTensorOf<[I64, I32]>;
// Booleans: masks, results of comparisons.
def NN_BoolTensor : StaticShapeTensorOf<[I1]>;
// Any element type the runtime holds: floats, ids and masks.
def NN_AnyTensor : StaticShapeTensorOf<[F32, F16, BF16, I64, I32, I1]>;

#endif // DPC_DIALECTS_NN_IR_NNBASE_TD
