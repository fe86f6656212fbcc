//===- NNOps.td - nn dialect operations --------------------*- tablegen -*-===//
//
// Shape rules live in ShapeInference.{h,cpp} as plain functions; the
// verifiers here and the ONNX importer both call them.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNOPS_TD
#define DPC_DIALECTS_NN_IR_NNOPS_TD

include "dialects/nn/IR/NNBase.td"
include "dialects/nn/IR/NNInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def NN_ParamOp : NN_Op<"param", [MemoryEffects<[MemRead]>]> {
  let summary = "reads a trainable parameter by name";
  let description = [{
    Yields the current value of the parameter `name`. The value is state held
    by the runtime (initialised from the weights file and changed in place by
    the optimizer ops), so two reads separated by an update see different
    values; the op reads memory and is not folded or hoisted.

    A `frozen` parameter is a constant of the model kept in the weights file
    (an ONNX Constant used in tensor arithmetic): autodiff builds no gradient
    or update for it.

    ```mlir
    %w = nn.param "conv1.weight" : tensor<6x1x5x5xf32>
    %c = nn.param "scale" {frozen} : tensor<f32>
    ```
  }];
  let arguments = (ins StrAttr:$name, UnitAttr:$frozen);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

// Attributes shared by conv2d and its gradients. Pads are in ONNX order:
// [top, left, bottom, right]. `algorithm` is how the backend computes the
// convolution: `direct` (the default) or `winograd` (F(4x4, 3x3) tiles: a
// 3x3 filter, stride 1, no dilation, one group, f32), which
// select-conv-algorithm picks where it pays and autodiff carries to the
// gradients.
defvar NN_Conv2dAttrs = (ins
  DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
  DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
  DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
  DefaultValuedAttr<I64Attr, "1">:$groups,
  DefaultValuedStrAttr<StrAttr, "direct">:$algorithm);

def NN_Conv2dOp : NN_Op<"conv2d", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "2-D convolution in NCHW layout";
  let description = [{
    Cross-correlates `input` (N x C x H x W) with `filter`
    (O x C/groups x KH x KW) and adds the optional per-channel `bias` (O).
    `pads` is [top, left, bottom, right] as in ONNX. The result shape must be
    the one the attributes imply.

    ```mlir
    %y = nn.conv2d %x, %w, %b {pads = array<i64: 2, 2, 2, 2>}
        : (tensor<16x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>)
        -> tensor<16x6x28x28xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$input, NN_FloatTensor:$filter,
                            Optional<NN_FloatTensor>:$bias),
                       NN_Conv2dAttrs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_Conv2dGradInputOp : NN_Op<"conv2d_grad_input", [Pure]> {
  let summary = "gradient of conv2d with respect to its input";
  let description = [{
    Given the gradient of a conv2d result and the conv2d's filter, computes
    the gradient of the conv2d's input (a transposed convolution). The result
    type is the forward input's type, which the attributes alone do not
    determine when a stride drops trailing rows or columns.
  }];
  let arguments = !con((ins NN_FloatTensor:$result_grad,
                            NN_FloatTensor:$filter),
                       NN_Conv2dAttrs);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `,` $filter attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_Conv2dGradFilterOp : NN_Op<"conv2d_grad_filter", [Pure]> {
  let summary = "gradient of conv2d with respect to its filter";
  let description = [{
    Given the gradient of a conv2d result and the conv2d's input, computes
    the gradient of the conv2d's filter. This is a weight gradient: it has no
    consumer on the pipeline's critical path and zero-bubble schedules may
    defer it.
  }];
  let arguments = !con((ins NN_FloatTensor:$result_grad,
                            NN_FloatTensor:$input),
                       NN_Conv2dAttrs);
  let results = (outs NN_FloatTensor:$filter_grad);
  let assemblyFormat = [{
    $result_grad `,` $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_Conv2dGradBiasOp : NN_Op<"conv2d_grad_bias", [Pure]> {
  let summary = "gradient of conv2d with respect to its bias";
  let description = [{
    Sums the gradient of a conv2d result (N x O x H x W) over the batch and
    spatial dimensions, giving the gradient of the bias (O). A weight
    gradient, like `nn.conv2d_grad_filter`.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad);
  let results = (outs NN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix multiplication
//===----------------------------------------------------------------------===//

defvar NN_MatmulAttrs = (ins DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                             DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);

def NN_MatmulOp : NN_Op<"matmul", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "matrix product, batched over leading dimensions";
  let description = [{
    Multiplies the last two dimensions of `lhs` (... x M x K) and `rhs`
    (... x K x N), each optionally transposed first. Leading batch dimensions
    must agree; a rank-2 `rhs` is shared by every batch of `lhs` (a linear
    layer applied to a sequence).

    ```mlir
    %y = nn.matmul %x, %w {transpose_rhs = true}
        : (tensor<16x784xf32>, tensor<256x784xf32>) -> tensor<16x256xf32>
    ```

    Canonicalization folds an operand's `nn.transpose` of the last two
    dimensions into the operand's flag, so that the GEMM reads it
    transposed and no transpose runs, forward or backward (PyTorch exports
    a linear layer on a sequence as a MatMul by the Transpose of its
    weight).
  }];
  let arguments = !con((ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs),
                       NN_MatmulAttrs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizeMethod = 1;
}

def NN_MatmulGradLhsOp : NN_Op<"matmul_grad_lhs", [Pure]> {
  let summary = "gradient of matmul with respect to its left operand";
  let description = [{
    Given the gradient of a matmul result and the matmul's `rhs`, computes the
    gradient of its `lhs`; the attributes are the forward op's. When `lhs` is
    an activation this is the input gradient on the pipeline's critical path.
  }];
  let arguments = !con((ins NN_FloatTensor:$result_grad, NN_FloatTensor:$rhs),
                       NN_MatmulAttrs);
  let results = (outs NN_FloatTensor:$lhs_grad);
  let assemblyFormat = [{
    $result_grad `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_MatmulGradRhsOp : NN_Op<"matmul_grad_rhs", [Pure]> {
  let summary = "gradient of matmul with respect to its right operand";
  let description = [{
    Given the gradient of a matmul result and the matmul's `lhs`, computes the
    gradient of its `rhs`, summed over the batch when a rank-2 `rhs` was
    shared across batches. When `rhs` is a weight this is a weight gradient.
  }];
  let arguments = !con((ins NN_FloatTensor:$result_grad, NN_FloatTensor:$lhs),
                       NN_MatmulAttrs);
  let results = (outs NN_FloatTensor:$rhs_grad);
  let assemblyFormat = [{
    $result_grad `,` $lhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Elementwise `lhs op rhs` after broadcasting both to the result shape by the
// numpy rules (align trailing dimensions; a dimension of size 1 stretches).
class NN_BinaryOp<string mnemonic, string formula, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat([Pure,
        DeclareOpInterfaceMethods<NN_GradientOpInterface>], traits)> {
  let summary = formula # ", elementwise with numpy broadcasting";
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_AddOp : NN_BinaryOp<"add", "lhs + rhs", [Commutative]> {
  let description = [{
    ```mlir
    %y = nn.add %x, %b : (tensor<16x10xf32>, tensor<10xf32>) -> tensor<16x10xf32>
    ```
  }];
}
def NN_SubOp : NN_BinaryOp<"sub", "lhs - rhs">;
def NN_MulOp : NN_BinaryOp<"mul", "lhs * rhs", [Commutative]>;
def NN_DivOp : NN_BinaryOp<"div", "lhs / rhs"> {
  let description = [{
    The gradient of `rhs` is `-dy * result / rhs`, so the result is kept for
    the backward pass rather than recomputed.
  }];
}

def NN_SumToShapeOp : NN_Op<"sum_to_shape", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "sums a tensor over broadcast dimensions, times a scale";
  let description = [{
    The adjoint of numpy broadcasting: sums `input` over the leading
    dimensions it has beyond the result's rank and over every dimension where
    the result has size 1 and the input does not, then multiplies by `scale`.
    Autodiff uses it for the gradients of broadcasting ops such as `nn.add`;
    ONNX ReduceSum imports to it, and ReduceMean with `scale` = 1 / (the
    number of elements summed). Its gradient is `nn.broadcast_to` with the
    same scale.

    ```mlir
    %m = nn.sum_to_shape %x {scale = 0.0625 : f32}
        : (tensor<8x28x16xf32>) -> tensor<8x28x1xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_BroadcastToOp : NN_Op<"broadcast_to", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "stretches a tensor to a shape by numpy broadcasting, times a scale";
  let description = [{
    Yields `scale * input` broadcast to the result shape (align trailing
    dimensions; a dimension of size 1 stretches). The gradient of a reduction
    (`nn.sum_to_shape`), and the other way round.

    ```mlir
    %g = nn.broadcast_to %dm {scale = 0.0625 : f32}
        : (tensor<8x28x1xf32>) -> tensor<8x28x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_ReluOp : NN_Op<"relu", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "rectified linear unit, max(x, 0)";
  let description = [{
    ```mlir
    %y = nn.relu %x : tensor<16x6x28x28xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def NN_ReluGradOp : NN_Op<"relu_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "gradient of relu";
  let description = [{
    Passes `result_grad` through where the forward relu's `result` is
    positive and yields zero elsewhere. It takes the forward result rather
    than its input so that only one tensor needs to be stashed.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad, NN_FloatTensor:$result);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = "$result_grad `,` $result attr-dict `:` type($input_grad)";
}

//===----------------------------------------------------------------------===//
// Elementwise functions
//===----------------------------------------------------------------------===//

// y = f(x) elementwise, for a row of include/dpc/runtime/UnaryFunctions.def
// whose CODE is the mnemonic in upper case. The gradient op `gradOp` takes
// the forward tensor the row's SAVED names (the result where f' is a
// function of it, as for tanh; the input, as for log), so that one tensor is
// stashed. An op without `gradOp` writes its own gradient rule. `params`
// are the f32 attributes a DPC_UNARY_FUNCTION_WITH_PARAMS row names, which
// the gradient op carries too.
class NN_UnaryOp<string mnemonic, string formula, string gradOp = "",
                 dag params = (ins)>
    : NN_Op<mnemonic, [Pure, SameOperandsAndResultType,
        NN_UnaryFunctionOpInterface,
        DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = formula # ", elementwise";
  let arguments = !con((ins NN_FloatTensor:$input), params);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDeclaration = [{
    static constexpr int64_t kUnaryFunction = DPC_UNARY_}]
        # !toupper(mnemonic) # [{;
    int64_t getUnaryFunction() { return kUnaryFunction; }
    bool isUnaryGradient() { return false; }
  }];
  let extraClassDefinition = !if(!empty(gradOp), "", [{
    void $cppClass::buildGradients(::mlir::OpBuilder &builder,
        ::mlir::ValueRange resultGrads, ::llvm::ArrayRef<bool> needed,
        ::llvm::SmallVectorImpl<::mlir::Value> &operandGrads) {
      operandGrads.assign(1, ::mlir::Value());
      if (needed[0])
        operandGrads[0] = builder.create<}] # gradOp # [{>(getLoc(),
            ::mlir::TypeRange{getType()},
            ::mlir::ValueRange{resultGrads[0], unaryGradientSaved(*this)},
            unaryParameters(*this));
    }
  }]);
}

class NN_UnaryGradOp<string mnemonic, string formula, dag params = (ins)>
    : NN_Op<mnemonic, [Pure, SameOperandsAndResultType,
        NN_UnaryFunctionOpInterface]> {
  let summary = "input gradient: " # formula;
  let arguments =
      !con((ins NN_FloatTensor:$result_grad, NN_FloatTensor:$saved), params);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat =
      "$result_grad `,` $saved attr-dict `:` type($input_grad)";
  let extraClassDeclaration = [{
    static constexpr int64_t kUnaryFunction = DPC_UNARY_}]
        # !toupper(!subst("_grad", "", mnemonic)) # [{;
    int64_t getUnaryFunction() { return kUnaryFunction; }
    bool isUnaryGradient() { return true; }
  }];
}

def NN_TanhOp : NN_UnaryOp<"tanh", "tanh(x)", "TanhGradOp">;
def NN_SigmoidOp : NN_UnaryOp<"sigmoid", "1 / (1 + exp(-x))", "SigmoidGradOp">;
def NN_ExpOp : NN_UnaryOp<"exp", "exp(x)", "ExpGradOp">;
def NN_LogOp : NN_UnaryOp<"log", "natural logarithm ln(x)", "LogGradOp">;
def NN_SqrtOp : NN_UnaryOp<"sqrt", "square root", "SqrtGradOp">;
// Its gradient is a neg of the result's gradient: no gradient op of its own.
def NN_NegOp : NN_UnaryOp<"neg", "-x">;
// The Gauss error function, as PyTorch exports GELU: x/2 (1 + erf(x/sqrt 2)).
def NN_ErfOp : NN_UnaryOp<"erf", "error function erf(x)", "ErfGradOp">;
def NN_AbsOp : NN_UnaryOp<"abs", "absolute value |x|", "AbsGradOp">;
def NN_ReciprocalOp : NN_UnaryOp<"reciprocal", "1 / x", "ReciprocalGradOp">;
def NN_SinOp : NN_UnaryOp<"sin", "sine", "SinGradOp">;
def NN_CosOp : NN_UnaryOp<"cos", "cosine", "CosGradOp">;
def NN_SoftplusOp : NN_UnaryOp<"softplus", "log(1 + exp(x))", "SoftplusGradOp">;
def NN_SoftsignOp : NN_UnaryOp<"softsign", "x / (1 + |x|)", "SoftsignGradOp">;
// MobileNetV3's activation.
def NN_HardSwishOp
    : NN_UnaryOp<"hard_swish", "x * relu6(x + 3) / 6", "HardSwishGradOp">;

def NN_LeakyReluOp : NN_UnaryOp<"leaky_relu", "x for x > 0, else alpha x",
    "LeakyReluGradOp", (ins F32Attr:$alpha)>;
def NN_EluOp : NN_UnaryOp<"elu", "x for x > 0, else alpha (e^x - 1)",
    "EluGradOp", (ins F32Attr:$alpha)>;
def NN_SeluOp : NN_UnaryOp<"selu",
    "gamma (x for x > 0, else alpha (e^x - 1))", "SeluGradOp",
    (ins F32Attr:$alpha, F32Attr:$gamma)>;
def NN_CeluOp : NN_UnaryOp<"celu", "x for x > 0, else alpha (e^(x/alpha) - 1)",
    "CeluGradOp", (ins F32Attr:$alpha)>;
def NN_ThresholdedReluOp : NN_UnaryOp<"thresholded_relu",
    "x for x > alpha, else 0", "ThresholdedReluGradOp", (ins F32Attr:$alpha)>;
def NN_HardSigmoidOp : NN_UnaryOp<"hard_sigmoid",
    "max(0, min(1, alpha x + beta))", "HardSigmoidGradOp",
    (ins F32Attr:$alpha, F32Attr:$beta)>;
def NN_ShrinkOp : NN_UnaryOp<"shrink",
    "x + bias below -lambd, x - bias above lambd, else 0", "ShrinkGradOp",
    (ins F32Attr:$bias, F32Attr:$lambd)>;

def NN_TanOp : NN_UnaryOp<"tan", "tangent", "TanGradOp">;
def NN_AsinOp : NN_UnaryOp<"asin", "arcsine", "AsinGradOp">;
def NN_AcosOp : NN_UnaryOp<"acos", "arccosine", "AcosGradOp">;
def NN_AtanOp : NN_UnaryOp<"atan", "arctangent", "AtanGradOp">;
def NN_SinhOp : NN_UnaryOp<"sinh", "hyperbolic sine", "SinhGradOp">;
def NN_CoshOp : NN_UnaryOp<"cosh", "hyperbolic cosine", "CoshGradOp">;
def NN_AsinhOp : NN_UnaryOp<"asinh", "inverse hyperbolic sine", "AsinhGradOp">;
def NN_AcoshOp
    : NN_UnaryOp<"acosh", "inverse hyperbolic cosine", "AcoshGradOp">;
def NN_AtanhOp
    : NN_UnaryOp<"atanh", "inverse hyperbolic tangent", "AtanhGradOp">;

def NN_TanhGradOp : NN_UnaryGradOp<"tanh_grad", "dy * (1 - y^2), saved = y">;
def NN_SigmoidGradOp
    : NN_UnaryGradOp<"sigmoid_grad", "dy * y * (1 - y), saved = y">;
def NN_ExpGradOp : NN_UnaryGradOp<"exp_grad", "dy * y, saved = y">;
def NN_LogGradOp : NN_UnaryGradOp<"log_grad", "dy / x, saved = x">;
def NN_SqrtGradOp : NN_UnaryGradOp<"sqrt_grad", "dy / (2 y), saved = y">;
def NN_ErfGradOp
    : NN_UnaryGradOp<"erf_grad", "dy * 2 / sqrt(pi) * exp(-x^2), saved = x">;
def NN_AbsGradOp : NN_UnaryGradOp<"abs_grad", "dy * sign(x), saved = x">;
def NN_ReciprocalGradOp
    : NN_UnaryGradOp<"reciprocal_grad", "-dy * y^2, saved = y">;
def NN_SinGradOp : NN_UnaryGradOp<"sin_grad", "dy * cos(x), saved = x">;
def NN_CosGradOp : NN_UnaryGradOp<"cos_grad", "-dy * sin(x), saved = x">;
def NN_SoftplusGradOp
    : NN_UnaryGradOp<"softplus_grad", "dy * sigmoid(x), saved = x">;
def NN_SoftsignGradOp
    : NN_UnaryGradOp<"softsign_grad", "dy / (1 + |x|)^2, saved = x">;
def NN_HardSwishGradOp
    : NN_UnaryGradOp<"hard_swish_grad",
                     "0 below -3, dy above 3, else dy * (x / 3 + 1/2); saved = x">;

def NN_LeakyReluGradOp : NN_UnaryGradOp<"leaky_relu_grad",
    "dy for x > 0, else alpha dy; saved = x", (ins F32Attr:$alpha)>;
def NN_EluGradOp : NN_UnaryGradOp<"elu_grad",
    "dy for x > 0, else dy alpha e^x; saved = x", (ins F32Attr:$alpha)>;
def NN_SeluGradOp : NN_UnaryGradOp<"selu_grad",
    "gamma dy for x > 0, else dy gamma alpha e^x; saved = x",
    (ins F32Attr:$alpha, F32Attr:$gamma)>;
def NN_CeluGradOp : NN_UnaryGradOp<"celu_grad",
    "dy for x > 0, else dy e^(x/alpha); saved = x", (ins F32Attr:$alpha)>;
def NN_ThresholdedReluGradOp : NN_UnaryGradOp<"thresholded_relu_grad",
    "dy for x > alpha, else 0; saved = x", (ins F32Attr:$alpha)>;
def NN_HardSigmoidGradOp : NN_UnaryGradOp<"hard_sigmoid_grad",
    "alpha dy where 0 < alpha x + beta < 1, else 0; saved = x",
    (ins F32Attr:$alpha, F32Attr:$beta)>;
def NN_ShrinkGradOp : NN_UnaryGradOp<"shrink_grad",
    "dy outside [-lambd, lambd], else 0; saved = x",
    (ins F32Attr:$bias, F32Attr:$lambd)>;

def NN_TanGradOp : NN_UnaryGradOp<"tan_grad", "dy * (1 + y^2), saved = y">;
def NN_AsinGradOp
    : NN_UnaryGradOp<"asin_grad", "dy / sqrt(1 - x^2), saved = x">;
def NN_AcosGradOp
    : NN_UnaryGradOp<"acos_grad", "-dy / sqrt(1 - x^2), saved = x">;
def NN_AtanGradOp : NN_UnaryGradOp<"atan_grad", "dy / (1 + x^2), saved = x">;
def NN_SinhGradOp : NN_UnaryGradOp<"sinh_grad", "dy * cosh(x), saved = x">;
def NN_CoshGradOp : NN_UnaryGradOp<"cosh_grad", "dy * sinh(x), saved = x">;
def NN_AsinhGradOp
    : NN_UnaryGradOp<"asinh_grad", "dy / sqrt(x^2 + 1), saved = x">;
def NN_AcoshGradOp
    : NN_UnaryGradOp<"acosh_grad", "dy / sqrt(x^2 - 1), saved = x">;
def NN_AtanhGradOp
    : NN_UnaryGradOp<"atanh_grad", "dy / (1 - x^2), saved = x">;

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

// softmax and log_softmax along `axis` (negative counts from the end), and
// their input gradients from the forward result.
class NN_SoftmaxFamilyOp<string mnemonic, string formula, string gradOp>
    : NN_Op<mnemonic, [Pure, SameOperandsAndResultType,
        DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = formula # " along one axis";
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    void $cppClass::buildGradients(::mlir::OpBuilder &builder,
        ::mlir::ValueRange resultGrads, ::llvm::ArrayRef<bool> needed,
        ::llvm::SmallVectorImpl<::mlir::Value> &operandGrads) {
      operandGrads.assign(1, ::mlir::Value());
      if (needed[0])
        operandGrads[0] = builder.create<}] # gradOp # [{>(getLoc(),
            resultGrads[0], getResult(), getAxisAttr());
    }
  }];
}

class NN_SoftmaxFamilyGradOp<string mnemonic, string formula>
    : NN_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "input gradient: " # formula;
  let arguments = (ins NN_FloatTensor:$result_grad, NN_FloatTensor:$result,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat =
      "$result_grad `,` $result attr-dict `:` type($input_grad)";
  let hasVerifier = 1;
}

def NN_SoftmaxOp : NN_SoftmaxFamilyOp<"softmax",
    "exp(x) / sum(exp(x))", "SoftmaxGradOp"> {
  let description = [{
    ONNX Softmax (opset 13 and later) imports to it.

    ```mlir
    %p = nn.softmax %scores {axis = -1 : i64} : tensor<8x28x28xf32>
    ```
  }];
}
def NN_LogSoftmaxOp : NN_SoftmaxFamilyOp<"log_softmax",
    "x - log(sum(exp(x)))", "LogSoftmaxGradOp">;

def NN_SoftmaxGradOp : NN_SoftmaxFamilyGradOp<"softmax_grad",
    "y * (dy - sum(dy * y)), the sum along the axis">;
def NN_LogSoftmaxGradOp : NN_SoftmaxFamilyGradOp<"log_softmax_grad",
    "dy - exp(y) * sum(dy), the sum along the axis">;

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

defvar NN_Pool2dAttrs = (ins DenseI64ArrayAttr:$kernel_shape,
  DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
  DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
  DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);

def NN_MaxPool2dOp : NN_Op<"max_pool2d", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "2-D max pooling in NCHW layout";
  let description = [{
    Takes the maximum over `kernel_shape` windows of `input` moved by
    `strides`, with implicit -infinity padding `pads` ([top, left, bottom,
    right]); `ceil_mode` rounds the output size up as in ONNX.

    ```mlir
    %y = nn.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
        : (tensor<16x6x28x28xf32>) -> tensor<16x6x14x14xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$input), NN_Pool2dAttrs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_MaxPool2dGradOp : NN_Op<"max_pool2d_grad", [Pure]> {
  let summary = "gradient of max_pool2d";
  let description = [{
    Routes each element of `result_grad` to the position of its window's
    maximum in the forward `input` (the first one on ties, as PyTorch does).
  }];
  let arguments = !con((ins NN_FloatTensor:$result_grad, NN_FloatTensor:$input),
                       NN_Pool2dAttrs);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `,` $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_AvgPool2dOp : NN_Op<"avg_pool2d", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "2-D average pooling in NCHW layout";
  let description = [{
    Averages `input` over `kernel_shape` windows moved by `strides`, with
    zero padding `pads` ([top, left, bottom, right]). With
    `count_include_pad` the divisor is the whole window, padding included;
    without, only the input elements the window covers count (ONNX's
    default, and PyTorch's `count_include_pad=False`).

    ```mlir
    %y = nn.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
        : (tensor<16x6x28x28xf32>) -> tensor<16x6x14x14xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$input), NN_Pool2dAttrs,
      (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad));
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_AvgPool2dGradOp : NN_Op<"avg_pool2d_grad", [Pure]> {
  let summary = "gradient of avg_pool2d";
  let description = [{
    Spreads each element of `result_grad` evenly over its window, divided by
    the divisor the forward op used. The result type is the forward input's
    type, which the attributes alone do not determine.
  }];
  let arguments = !con((ins NN_FloatTensor:$result_grad), NN_Pool2dAttrs,
      (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad));
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_GlobalAvgPoolOp : NN_Op<"global_avg_pool", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "mean over every spatial dimension";
  let description = [{
    Averages `input` (N x C x D1 x ... x Dk, k >= 1) over D1..Dk, keeping
    them as dimensions of size 1, as ONNX GlobalAveragePool does.

    ```mlir
    %y = nn.global_avg_pool %x : (tensor<16x64x7x7xf32>) -> tensor<16x64x1x1xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_GlobalAvgPoolGradOp : NN_Op<"global_avg_pool_grad", [Pure]> {
  let summary = "gradient of global_avg_pool";
  let description = [{
    Broadcasts `result_grad` (N x C x 1 x ... x 1) over the spatial
    dimensions of the result type (the forward input's), divided by their
    element count.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def NN_BatchNormStatsOp : NN_Op<"batch_norm_stats",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "the per-channel statistics batch normalization uses";
  let description = [{
    Yields a 2 x C tensor for `input` (N x C x D1 x ... x Dk, k >= 0): row 0
    holds the mean, row 1 the biased variance of each channel over every
    other dimension. These are the statistics training normalizes with, and
    the op also updates the running statistics in place the way
    `torch.nn.BatchNorm2d` does in training mode:
    `running = momentum * running + (1 - momentum) * batch`, where the
    variance folded in is the unbiased one. `momentum` follows ONNX
    (PyTorch's momentum 0.1 is 0.9 here). `running_mean` and `running_var`
    (C each) must come from `nn.param`; they are state, not trainable.

    In evaluation (the runtime's forward-only pass) the op yields the
    running statistics and changes nothing.

    The op has no gradient rule: the input gradient of `nn.batch_norm`
    already accounts for the statistics depending on the input.

    ```mlir
    %s = nn.batch_norm_stats %x, %rm, %rv {momentum = 0.9 : f32}
        : (tensor<16x8x28x28xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$running_mean,
                       NN_FloatTensor:$running_var,
                       DefaultValuedAttr<F32Attr, "0.9f">:$momentum);
  let results = (outs NN_FloatTensor:$stats);
  let assemblyFormat = [{
    $input `,` $running_mean `,` $running_var attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_BatchNormOp : NN_Op<"batch_norm", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "per-channel normalization with an affine transform";
  let description = [{
    Yields `scale * (input - mean) / sqrt(var + epsilon) + bias` per channel
    (dimension 1 of `input`), with `mean` and `var` the rows of `stats`, a
    2 x C tensor from `nn.batch_norm_stats`. ONNX BatchNormalization imports
    as the pair.

    ```mlir
    %y = nn.batch_norm %x, %s, %gamma, %beta {epsilon = 1.0e-05 : f32}
        : (tensor<16x8x28x28xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
        -> tensor<16x8x28x28xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$stats,
                       NN_FloatTensor:$scale, NN_FloatTensor:$bias,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $stats `,` $scale `,` $bias attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_BatchNormGradInputOp : NN_Op<"batch_norm_grad_input", [Pure]> {
  let summary = "gradient of batch_norm with respect to its input";
  let description = [{
    The input gradient of training-mode batch normalization, where `stats`
    are the batch statistics of `input`: with `xhat` the normalized input
    and `m` the element count per channel,
    `scale / sqrt(var + epsilon) * (dy - sum(dy) / m - xhat * sum(dy * xhat) / m)`.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad, NN_FloatTensor:$input,
                       NN_FloatTensor:$stats, NN_FloatTensor:$scale,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `,` $input `,` $stats `,` $scale attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_BatchNormGradScaleOp : NN_Op<"batch_norm_grad_scale", [Pure]> {
  let summary = "gradient of batch_norm with respect to its scale";
  let description = [{
    `sum(dy * xhat)` per channel, `xhat` being the input normalized with
    `stats`. A weight gradient.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad, NN_FloatTensor:$input,
                       NN_FloatTensor:$stats,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs NN_FloatTensor:$scale_grad);
  let assemblyFormat = [{
    $result_grad `,` $input `,` $stats attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_BatchNormGradBiasOp : NN_Op<"batch_norm_grad_bias", [Pure]> {
  let summary = "gradient of batch_norm with respect to its bias";
  let description = [{
    Sums `result_grad` (N x C x ...) over every dimension but the channel.
    A weight gradient.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad);
  let results = (outs NN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_LayerNormOp : NN_Op<"layer_norm", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "normalization over the trailing dimensions";
  let description = [{
    Normalizes `input` over dimensions [axis, rank) (a negative `axis`
    counts from the end): each of the prod(shape[:axis]) rows is shifted by
    its mean and divided by `sqrt(var + epsilon)`, `var` the biased
    variance, then multiplied by `scale` and shifted by `bias` where given.
    Both have the normalized shape, shape[axis:]. ONNX LayerNormalization
    (opset 17) and `torch.nn.LayerNorm` import to it.

    The backward pass recomputes each row's mean and inverse standard
    deviation from `input`, which it keeps anyway: one extra read of the
    row, against a second result that every stash, transfer and memory
    plan would have to carry.

    ```mlir
    %y = nn.layer_norm %x scale %g bias %b {axis = 2 : i64}
        : (tensor<16x28x32xf32>, tensor<32xf32>, tensor<32xf32>)
        -> tensor<16x28x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       Optional<NN_FloatTensor>:$scale,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` $scale^)? (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_LayerNormGradInputOp : NN_Op<"layer_norm_grad_input", [Pure]> {
  let summary = "gradient of layer_norm with respect to its input";
  let description = [{
    With `xhat` the row normalized, `g = result_grad * scale` (or
    `result_grad` without a scale) and `n` the row length:
    `(g - sum(g) / n - xhat * sum(g * xhat) / n) / sqrt(var + epsilon)`,
    the sums over the row. The row's statistics are recomputed from
    `input`.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad, NN_FloatTensor:$input,
                       Optional<NN_FloatTensor>:$scale,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `,` $input (`scale` $scale^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_LayerNormGradScaleOp : NN_Op<"layer_norm_grad_scale", [Pure]> {
  let summary = "gradient of layer_norm with respect to its scale";
  let description = [{
    `sum(result_grad * xhat)` over the rows, of the normalized shape: a
    weight gradient. The bias gradient is `nn.sum_to_shape` of the result
    gradient to the normalized shape.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad, NN_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1e-5f">:$epsilon);
  let results = (outs NN_FloatTensor:$scale_grad);
  let assemblyFormat = [{
    $result_grad `,` $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

def NN_RelayoutOp : NN_Op<"relayout", [Pure, SameOperandsAndResultType]> {
  let summary = "moves an activation between memory layouts";
  let description = [{
    Yields `input` unchanged; only where its elements lie in memory changes.
    A value is channel-blocked when the op that defines it carries
    `nn.layout = "nChw16c"` (N, C/16, H, W, 16 in memory), else plain; a
    relayout's own `nn.layout` says which its result is. propagate-layouts
    inserts it, in CPU builds, between the kernels that take blocked
    activations and those that take plain ones.

    ```mlir
    %b = nn.relayout %x {nn.layout = "nChw16c"} : tensor<16x64x28x28xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_ReshapeOp : NN_Op<"reshape", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "reinterprets a tensor with another shape";
  let description = [{
    Yields `input`'s elements in row-major order with the result's shape; the
    element counts must agree. ONNX Flatten and Reshape both import to it. Its
    gradient is a reshape back. Masks (i1) and ids (i64) reshape too.
  }];
  let arguments = (ins NN_AnyTensor:$input);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_TransposeOp : NN_Op<"transpose", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "permutes the dimensions of a tensor";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`, as in ONNX Transpose.
    Its gradient is the transpose by the inverse permutation.

    ```mlir
    %kt = nn.transpose %k {perm = array<i64: 0, 2, 1>}
        : (tensor<8x28x16xf32>) -> tensor<8x16x28xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Concatenation, slices and clipping
//===----------------------------------------------------------------------===//

def NN_ConcatOp : NN_Op<"concat", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "concatenates tensors along one dimension";
  let description = [{
    Joins `inputs` (at least one, all of one rank, equal in every dimension
    but `axis`) along `axis`, as ONNX Concat (DenseNet's feature reuse,
    Inception's branches). The gradient of each input is the slice of the
    result's gradient where that input lies.

    ```mlir
    %y = nn.concat %a, %b {axis = 1 : i64}
        : (tensor<4x8x7x7xf32>, tensor<4x16x7x7xf32>) -> tensor<4x24x7x7xf32>
    ```
  }];
  let arguments = (ins Variadic<NN_FloatTensor>:$inputs, I64Attr:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_SliceOp : NN_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "a strided box of a tensor";
  let description = [{
    Result element `i` (a multi-index) is input element `offsets + i *
    steps`, with one offset and one positive step per dimension: ONNX Slice
    and each output of Split, normalized by the importer. The gradient
    (`nn.slice_grad`) puts the result's gradient back into a zero tensor of
    the input's shape.

    ```mlir
    %h = nn.slice %x {offsets = array<i64: 0, 16>, steps = array<i64: 1, 1>}
        : (tensor<4x32xf32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$steps);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_SliceGradOp : NN_Op<"slice_grad", [Pure]> {
  let summary = "input gradient of nn.slice";
  let description = [{
    A tensor of the sliced input's type that holds `result_grad` at the
    slice's elements and zero everywhere else.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$steps);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_PadOp : NN_Op<"pad", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "pads a tensor with a constant";
  let description = [{
    Surrounds the input with `value`: `pads` holds the elements added before
    each dimension, then those added after it (ONNX Pad's order, constant
    mode, non-negative pads). The gradient is the slice of the result's
    gradient where the input lies.

    ```mlir
    %y = nn.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 0.0 : f32}
        : (tensor<4x3x5x5xf32>) -> tensor<4x3x7x7xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$pads,
                       F32Attr:$value);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_GatherOp : NN_Op<"gather", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "rows of a table picked by integer indices (an embedding)";
  let description = [{
    `result[i..., j...] = table[indices[i...], j...]`: ONNX Gather along
    axis 0 of a float table, which is how nn.Embedding exports. A negative
    index counts from the end of the table, as ONNX allows; one outside
    `[-rows, rows)` stops the run with an error naming it. The indices get
    no gradient; the table's (`nn.gather_grad`) adds each row of the
    result's gradient into the row it was read from.

    ```mlir
    %e = nn.gather %table, %tokens
        : (tensor<64x32xf32>, tensor<4x16xi64>) -> tensor<4x16x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$table, NN_IndexTensor:$indices);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_GatherGradOp : NN_Op<"gather_grad", [Pure]> {
  let summary = "table gradient of nn.gather";
  let description = [{
    A tensor of the table's type, zero but for the rows `indices` name, each
    the sum of the rows of `result_grad` read from it. The rows are summed
    in index order, so the result does not depend on threads.

    ```mlir
    %dtable = nn.gather_grad %dy, %tokens
        : (tensor<4x16x32xf32>, tensor<4x16xi64>) -> tensor<64x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$result_grad, NN_IndexTensor:$indices);
  let results = (outs NN_FloatTensor:$table_grad);
  let assemblyFormat = [{
    $result_grad `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_DropoutOp : NN_Op<"dropout", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "dropout in training, the identity in evaluation";
  let description = [{
    Zeroes each element with probability `ratio` and scales the kept ones by
    1 / (1 - ratio), as torch.nn.Dropout in training mode. The mask is not
    stored: it is drawn from a counter-based generator under a key of the
    run's seed, the step, the microbatch and `mask_id` (the op's number in
    the model, unique), so the gradient op draws the same mask, and a run
    drops the same elements on any stage split and schedule. Evaluation and
    inference runs pass the input through. Pure as far as the IR goes: two
    dropouts of one input with one `mask_id` draw one mask.

    ```mlir
    %y = nn.dropout %x {mask_id = 0 : i64, ratio = 5.000000e-01 : f32}
        : tensor<16x120xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, F32Attr:$ratio,
                       I64Attr:$mask_id);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_DropoutGradOp
    : NN_Op<"dropout_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "input gradient of nn.dropout: dy through the same mask";
  let arguments = (ins NN_FloatTensor:$result_grad, F32Attr:$ratio,
                       I64Attr:$mask_id);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = "$result_grad attr-dict `:` type($input_grad)";
}

def NN_ClipOp : NN_Op<"clip", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "clamps every element to [min, max]";
  let description = [{
    `min(max(x, min), max)`, as ONNX Clip with constant bounds (ReLU6 is
    `min = 0, max = 6`; an absent bound is infinite). The gradient passes
    where `min <= x <= max`, bounds included, as PyTorch's clamp does.
  }];
  let arguments = (ins NN_FloatTensor:$input, F32Attr:$min, F32Attr:$max);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_ClipGradOp : NN_Op<"clip_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "input gradient of nn.clip: dy where min <= x <= max";
  let arguments = (ins NN_FloatTensor:$result_grad, NN_FloatTensor:$input,
                       F32Attr:$min, F32Attr:$max);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat =
      "$result_grad `,` $input attr-dict `:` type($input_grad)";
}

//===----------------------------------------------------------------------===//
// Masks: comparisons, boolean logic, casts and selection
//===----------------------------------------------------------------------===//

// The ops of attention masks as PyTorch exports them: `ids == pad` and
// torch.triu give i1 tensors, masked_fill is a select. Booleans are i1
// tensors, one byte per element in the runtime's buffers and messages.

def NN_CompareOp : NN_Op<"compare", [Pure]> {
  let summary = "elementwise comparison with numpy broadcasting, as i1";
  let description = [{
    `lhs predicate rhs` for `predicate` one of `eq`, `lt`, `gt`, `le`, `ge`
    (ONNX Equal, Less, Greater, LessOrEqual, GreaterOrEqual), on two
    tensors of one element type (float, int64 or i1 for `eq`). Not
    differentiable: the result is a boolean.

    ```mlir
    %pad = nn.compare %ids, %zero {predicate = "eq"}
        : (tensor<4x16xi64>, tensor<i64>) -> tensor<4x16xi1>
    ```
  }];
  let arguments = (ins NN_AnyTensor:$lhs, NN_AnyTensor:$rhs,
                       StrAttr:$predicate);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_LogicalOp : NN_Op<"logical", [Pure]> {
  let summary = "elementwise and, or, xor of booleans with numpy broadcasting";
  let description = [{
    ONNX And, Or and Xor (`kind` = `and`, `or`, `xor`): combining a causal
    mask with a padding mask, for instance.
  }];
  let arguments = (ins NN_BoolTensor:$lhs, NN_BoolTensor:$rhs,
                       StrAttr:$kind);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_NotOp : NN_Op<"not", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise logical negation";
  let arguments = (ins NN_BoolTensor:$input);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def NN_CastOp : NN_Op<"cast", [Pure, SameOperandsAndResultShape,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "converts elements to the result's element type";
  let description = [{
    ONNX Cast between f32, i64 and i1: to i1 is `x != 0`, from i1 gives 0
    or 1, float to integer truncates toward zero. A cast from an integer or
    boolean has no gradient (a mask turned additive, `mask.float()`), and a
    cast between float types passes the gradient through.

    A boolean or integer constant the importer cannot fold into tensor
    arithmetic is a frozen float parameter (the weights file holds float32)
    cast to its type, exact for integers up to 2^24.
  }];
  let arguments = (ins NN_AnyTensor:$input);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_WhereOp : NN_Op<"where", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "selects elements: condition ? lhs : rhs, with broadcasting";
  let description = [{
    ONNX Where, as `masked_fill` exports: all three operands broadcast to
    the result shape by the numpy rules. The gradient of `lhs` is the
    result gradient where the condition holds and 0 elsewhere, that of
    `rhs` the other way round (`nn.where_grad`), each summed back to its
    operand's shape; the condition has none.

    ```mlir
    %s = nn.where %causal, %neg_inf, %scores
        : (tensor<16x16xi1>, tensor<f32>, tensor<4x2x16x16xf32>)
          -> tensor<4x2x16x16xf32>
    ```
  }];
  let arguments = (ins NN_BoolTensor:$condition, NN_FloatTensor:$lhs,
                       NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_WhereGradOp : NN_Op<"where_grad", [Pure]> {
  let summary = "gradient of one branch of nn.where: dy where condition == branch";
  let description = [{
    `condition == branch ? result_grad : 0`, the condition broadcast to the
    gradient's shape; `branch` is true for nn.where's lhs, false for its rhs.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad, NN_BoolTensor:$condition,
                       BoolAttr:$branch);
  let results = (outs NN_FloatTensor:$branch_grad);
  let assemblyFormat = [{
    $result_grad `,` $condition attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recurrent
//===----------------------------------------------------------------------===//

def NN_LstmOp : NN_Op<"lstm", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "one forward LSTM layer over a sequence";
  let description = [{
    ONNX LSTM with one forward direction and the default activations, gates
    in ONNX's order i, o, f, c: for t in [0, T), with
    `z = x[t] w^T + h[t-1] r^T + bias[0:4H] + bias[4H:8H]` (B x 4H),
    `i, o, f = sigmoid(z_i, z_o, z_f)`, `g = tanh(z_c)`,
    `c[t] = f * c[t-1] + i * g` and `h[t] = o * tanh(c[t])`, starting from
    `initial_h` and `initial_c` (B x H; the importer gives zeros when the
    model has none). `x` is T x B x I, `w` 4H x I, `r` 4H x H, `bias` 8H.

    The result holds the whole state sequence, T x B x 6H: for each step
    and sample `h[t]`, `c[t]` and the activated gates `i, o, f, g`. ONNX's
    Y, Y_h and Y_c are slices of it. The backward pass reads the cells and
    gates from it instead of recomputing the recurrence, so what a pipeline
    stashes for an LSTM layer is this one tensor (and the layer's input).

    ```mlir
    %s = nn.lstm %x, %w, %r bias %b initial %h0, %c0
        : (tensor<7x4x8xf32>, tensor<64x8xf32>, tensor<64x16xf32>,
           tensor<128xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
        -> tensor<7x4x96xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       NN_FloatTensor:$recurrence,
                       Optional<NN_FloatTensor>:$bias,
                       NN_FloatTensor:$initial_h, NN_FloatTensor:$initial_c);
  let results = (outs NN_FloatTensor:$states);
  let assemblyFormat = [{
    $input `,` $weight `,` $recurrence (`bias` $bias^)? `initial` $initial_h
    `,` $initial_c attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_LstmGradOp : NN_Op<"lstm_grad", [Pure]> {
  let summary = "backward pass through time of nn.lstm";
  let description = [{
    From the gradient of the state sequence (`states_grad`, T x B x 6H, of
    which the h and c parts are read) and the forward's `states`, runs the
    recurrence backwards: T x B x 5H holding, for each step, the gradients
    of the gate pre-activations (4H, order i, o, f, c) and of the cell
    `c[t]` (H, with what flows back from step t + 1). Everything else is
    plain algebra on this result, which the gradient rule of nn.lstm builds
    from nn.matmul, nn.slice and nn.sum_to_shape: the input gradient
    (`z_grad w`) and the initial states' (`z_grad[0] r`,
    `c_grad[0] * f[0]`), and apart from them the weight gradients
    (`z_grad^T x`, `z_grad^T h[t-1]`, sums of `z_grad`), which zero-bubble
    schedules run later.
  }];
  let arguments = (ins NN_FloatTensor:$states_grad, NN_FloatTensor:$states,
                       NN_FloatTensor:$recurrence,
                       NN_FloatTensor:$initial_c);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $states_grad `,` $states `,` $recurrence `,` $initial_c attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def NN_SoftmaxCrossEntropyOp : NN_Op<"softmax_cross_entropy", [Pure]> {
  let summary = "softmax cross-entropy over integer class labels";
  let description = [{
    Computes `scale` times the sum over the rows of
    `-log softmax(logits[i])[labels[i]]`, a 0-d tensor. `logits` is N x C
    (a classifier) or N x positions... x C (a token-level loss, each
    position a row), and `labels` holds a class index per row, of the
    logits' shape without C. With `scale` = 1/rows this is the mean that
    `torch.nn.CrossEntropyLoss()` gives on the flattened logits; a pipeline
    splits a minibatch into microbatches and uses 1/(microbatches x rows)
    so that their sum is the minibatch mean.

    With `ignore_index` (torch's `CrossEntropyLoss(ignore_index=N)`), rows
    whose label is N add nothing, and the mean runs over the other rows of
    the whole minibatch, a count known only when the step's labels are
    read: the scale is then the run time's (`dpc_loss_scale`, 1 / the
    step's counted labels) and the `scale` attribute must stay 1.

    With `label_smoothing` e in [0, 1) (torch's `label_smoothing`), a row's
    term is `(1 - e) * -log p[label] + e * mean_j -log p[j]`.

    ```mlir
    %loss = nn.softmax_cross_entropy %logits, %labels {scale = 0.015625 : f32}
        : (tensor<16x10xf32>, tensor<16xi64>) -> tensor<f32>
    %tokens = nn.softmax_cross_entropy %logits2, %labels2
        {ignore_index = -100 : i64}
        : (tensor<4x8x65xf32>, tensor<4x8xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing);
  let results = (outs NN_FloatTensor:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_SoftmaxCrossEntropyGradOp
    : NN_Op<"softmax_cross_entropy_grad", [Pure]> {
  let summary = "gradient of softmax_cross_entropy with respect to the logits";
  let description = [{
    Yields `scale * (softmax(logits) - onehot(labels))`, the gradient of the
    loss of `nn.softmax_cross_entropy` with the same `scale`,
    `ignore_index` (an ignored row's gradient is 0) and `label_smoothing` e
    (the target is then `(1 - e) * onehot(labels) + e / C`).
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing);
  let results = (outs NN_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_MseLossOp : NN_Op<"mse_loss", [Pure]> {
  let summary = "squared error against float targets";
  let description = [{
    Computes `scale` times the sum over every element of
    `(prediction - target)^2`, a 0-d tensor; `target` has the prediction's
    shape and element type. With `scale` = 1/elements this is
    `torch.nn.MSELoss()` (reduction 'mean'); a pipeline splits a minibatch
    into microbatches and uses 1/(microbatches x elements) so that their sum
    is the minibatch mean.

    ```mlir
    %loss = nn.mse_loss %prediction, %target {scale = 0.0078125 : f32}
        : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$prediction, NN_FloatTensor:$target,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale);
  let results = (outs NN_FloatTensor:$loss);
  let assemblyFormat = [{
    $prediction `,` $target attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_MseLossGradOp : NN_Op<"mse_loss_grad", [Pure]> {
  let summary = "gradient of mse_loss with respect to the prediction";
  let description = [{
    Yields `2 * scale * (prediction - target)`, the gradient of the loss of
    `nn.mse_loss` with the same `scale`.
  }];
  let arguments = (ins NN_FloatTensor:$prediction, NN_FloatTensor:$target,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale);
  let results = (outs NN_FloatTensor:$prediction_grad);
  let assemblyFormat = [{
    $prediction `,` $target attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def NN_SgdUpdateOp : NN_Op<"sgd_update",
    [MemoryEffects<[MemRead, MemWrite]>, AllTypesMatch<["param", "grad"]>,
     DeclareOpInterfaceMethods<NN_OptimizerUpdateOpInterface,
                               ["getNumStateTensors"]>]> {
  let summary = "updates a parameter in place by SGD with momentum";
  let description = [{
    Applies one step of stochastic gradient descent to the parameter that
    `param` reads, in the formulation of `torch.optim.SGD`:
    `g = grad + weight_decay * param`, `v = momentum * v + g` (the first step
    sets `v = g`), `param -= lr * v`. The momentum buffer `v` is optimizer
    state the runtime keeps beside the parameter. `param` must come from
    `nn.param`, which names the parameter to update.

    ```mlir
    %w = nn.param "fc1.weight" : tensor<10x84xf32>
    nn.sgd_update %w, %gw {lr = 0.05 : f32, momentum = 0.9 : f32} : tensor<10x84xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$param, NN_FloatTensor:$grad,
                       F32Attr:$lr,
                       DefaultValuedAttr<F32Attr, "0.0f">:$momentum,
                       DefaultValuedAttr<F32Attr, "0.0f">:$weight_decay);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
  let hasVerifier = 1;
}

def NN_AdamUpdateOp : NN_Op<"adam_update",
    [MemoryEffects<[MemRead, MemWrite]>, AllTypesMatch<["param", "grad"]>,
     DeclareOpInterfaceMethods<NN_OptimizerUpdateOpInterface,
                               ["getNumStateTensors"]>]> {
  let summary = "updates a parameter in place by Adam";
  let description = [{
    Applies one step of Adam to the parameter that `param` reads, in the
    formulation of `torch.optim.Adam` (L2 weight decay, no AMSGrad): with
    `t` the parameter's update count including this one,
    `g = grad + weight_decay * param`, `m = beta1 * m + (1 - beta1) * g`,
    `v = beta2 * v + (1 - beta2) * g * g`,
    `param -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)`.
    The moments `m` and `v` (zero at first) and `t` are optimizer state the
    runtime keeps beside the parameter. With `decoupled`, the weight decay
    is torch.optim.AdamW's: `param *= 1 - lr * weight_decay` first, and
    `g = grad`.

    ```mlir
    %w = nn.param "fc1.weight" : tensor<10x84xf32>
    nn.adam_update %w, %gw {lr = 1.0e-3 : f32} : tensor<10x84xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$param, NN_FloatTensor:$grad,
                       F32Attr:$lr,
                       DefaultValuedAttr<F32Attr, "0.9f">:$beta1,
                       DefaultValuedAttr<F32Attr, "0.999f">:$beta2,
                       DefaultValuedAttr<F32Attr, "1.0e-8f">:$eps,
                       DefaultValuedAttr<F32Attr, "0.0f">:$weight_decay,
                       UnitAttr:$decoupled);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused regions
//===----------------------------------------------------------------------===//

def NN_FusedOp : NN_Op<"fused", [Pure, IsolatedFromAbove, SingleBlock]> {
  let summary = "elementwise ops computed in one loop";
  let description = [{
    A chain of elementwise ops that fuse-elementwise grouped: the body's
    block arguments are `inputs`, its ops compute on them (every op of the
    body has the result's shape; inputs may broadcast as the ops allow) and
    `nn.yield` returns the one value that leaves the group. Lowering makes
    one loop over the result's elements of it, so the values between the
    body's ops are never stored (passes/lowering/Fused.cpp).

    ```mlir
    %y = nn.fused %x, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32> {
    ^bb0(%a: tensor<16x64xf32>, %c: tensor<64xf32>):
      %s = nn.add %a, %c : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
      %t = nn.tanh %s : tensor<16x64xf32>
      nn.yield %t : tensor<16x64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<NN_AnyTensor>:$inputs);
  let results = (outs NN_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      ::mlir::Block &block = getBody().front();
      if (block.getArgumentTypes() != getInputs().getTypes())
        return emitOpError("expects one block argument of each input's type");
      auto yield = ::llvm::dyn_cast<YieldOp>(block.getTerminator());
      if (!yield || yield->getOperandTypes() != getOperation()->getResultTypes())
        return emitOpError("expects its body to yield the result's type");
      return ::mlir::success();
    }
  }];
}

def NN_YieldOp : NN_Op<"yield", [Pure, Terminator, HasParent<"FusedOp">]> {
  let summary = "the value a fused region computes";
  let arguments = (ins Variadic<NN_AnyTensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif // DPC_DIALECTS_NN_IR_NNOPS_TD
