//===- NNMath.td - nn elementwise ops and masks ------------*- tablegen -*-===//
//
// Broadcasting binary ops and reductions to a shape, relu, the elementwise
// functions of UnaryFunctions.def, dropout and clip, the mask ops
// (comparisons, boolean logic, casts, selection) and fused regions.
// Their verifiers and gradient rules are in NNMath.cpp; shape rules in
// ShapeInference.{h,cpp}.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNMATH_TD
#define DPC_DIALECTS_NN_IR_NNMATH_TD

include "dialects/nn/IR/NNBase.td"

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Elementwise `lhs op rhs` after broadcasting both to the result shape by the
// numpy rules (align trailing dimensions; a dimension of size 1 stretches).
class NN_BinaryOp<string mnemonic, string formula, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat([Pure, NN_InferResult,
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
  let extraClassDefinition =
      NN_InputGradient<"BroadcastToOp", "getScaleAttr()">.rule;
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
  let extraClassDefinition =
      NN_InputGradient<"SumToShapeOp", "getScaleAttr()">.rule;
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
  let extraClassDefinition = NN_InputGradient<"ReluGradOp", "getResult()">.rule;
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
def NN_NegOp : NN_UnaryOp<"neg", "-x"> {
  let extraClassDefinition = NN_InputGradient<"NegOp">.rule;
}
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
  let extraClassDefinition =
      NN_InputGradient<"DropoutGradOp", "getRatioAttr(), getMaskIdAttr()">.rule;
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
  let extraClassDefinition = NN_InputGradient<"ClipGradOp",
      "getInput(), getMinAttr(), getMaxAttr()">.rule;
}

def NN_ClipGradOp : NN_Op<"clip_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "input gradient of nn.clip: dy where min <= x <= max";
  let arguments = (ins NN_FloatTensor:$result_grad, NN_FloatTensor:$input,
                       F32Attr:$min, F32Attr:$max);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat =
      "$result_grad `,` $input attr-dict `:` type($input_grad)";
}

def NN_CumSumOp : NN_Op<"cumsum", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "cumulative sum along one dimension";
  let description = [{
    ONNX CumSum with a constant axis: `result[..., j, ...]` is the sum of
    `input[..., i, ...]` over `i <= j` (`i < j` when `exclusive`; `i >= j`
    and `i > j` when `reverse`), added in order along the axis from its
    first summand, as torch.cumsum adds. The gradient is the same sum of the
    result gradient the other way (`reverse` flipped, `exclusive` kept):
    another nn.cumsum.

    ```mlir
    %c = nn.cumsum %x {axis = 1 : i64, exclusive} : tensor<2x5xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$axis,
                       UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Masks: comparisons, boolean logic, casts and selection
//===----------------------------------------------------------------------===//

// The ops of attention masks as PyTorch exports them: `ids == pad` and
// torch.triu give i1 tensors, masked_fill is a select. Booleans are i1
// tensors, one byte per element in the runtime's buffers and messages.

def NN_CompareOp : NN_Op<"compare", [Pure, NN_InferResult]> {
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

def NN_LogicalOp : NN_Op<"logical", [Pure, NN_InferResult]> {
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

def NN_WhereOp : NN_Op<"where", [Pure, NN_InferResult,
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

#endif // DPC_DIALECTS_NN_IR_NNMATH_TD
