//===- NNPoolNorm.td - nn pooling and normalization --------*- tablegen -*-===//
//
// max, average and global average pooling, batch, layer and local response
// normalization. Their verifiers and gradient rules are in NNPoolNorm.cpp;
// shape rules in ShapeInference.{h,cpp}, but for nn.lrn's, a static member
// of its op (docs/EXTENDING.md).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNPOOLNORM_TD
#define DPC_DIALECTS_NN_IR_NNPOOLNORM_TD

include "dialects/nn/IR/NNBase.td"

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

defvar NN_Pool2dAttrs = (ins DenseI64ArrayAttr:$kernel_shape,
  DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
  DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
  DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);

def NN_MaxPool2dOp : NN_Op<"max_pool2d", [Pure, NN_InferResult,
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
  let extraClassDefinition = NN_InputGradient<"MaxPool2dGradOp",
      "getInput(), getKernelShapeAttr(), getStridesAttr(), " #
      "getPadsAttr(), getCeilModeAttr()">.rule;
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

def NN_AvgPool2dOp : NN_Op<"avg_pool2d", [Pure, NN_InferResult,
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
  let extraClassDefinition = NN_InputGradient<"AvgPool2dGradOp",
      "getKernelShapeAttr(), getStridesAttr(), getPadsAttr(), " #
      "getCeilModeAttr(), getCountIncludePadAttr()">.rule;
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

def NN_GlobalAvgPoolOp : NN_Op<"global_avg_pool", [Pure, NN_InferResult,
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
  let extraClassDefinition = NN_InputGradient<"GlobalAvgPoolGradOp">.rule;
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
// Local response normalization
//===----------------------------------------------------------------------===//

defvar NN_LrnAttrs = (ins I64Attr:$size,
  DefaultValuedAttr<F32Attr, "1e-4f">:$alpha,
  DefaultValuedAttr<F32Attr, "0.75f">:$beta,
  DefaultValuedAttr<F32Attr, "1.0f">:$bias);

def NN_LrnOp : NN_Op<"lrn", [Pure, NN_InferResult,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "local response normalization across channels";
  let description = [{
    ONNX LRN of `input`, N x C x D1..Dk: each element x_c is divided by
    `(bias + alpha / size * s_c)^beta`, s_c the sum of the squares of the
    elements at the same position in channels
    [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] that exist. For
    an odd `size` that is PyTorch's `local_response_norm`. The backward
    pass recomputes the sums from `input`.

    ```mlir
    %y = nn.lrn %x {size = 5 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32}
        : (tensor<8x64x14x14xf32>) -> tensor<8x64x14x14xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$input), NN_LrnAttrs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The result shape of an input of shape `input` over windows of `size`
    /// channels: the input's, when it has a batch and a channel dimension
    /// and `size` is at least 1. `error` starts the message.
    static ::mlir::FailureOr<::llvm::SmallVector<int64_t, 4>>
    inferShape(::llvm::ArrayRef<int64_t> input, int64_t size,
               ::llvm::function_ref<::mlir::InFlightDiagnostic()> error);
  }];
  let extraClassDefinition = NN_InputGradient<"LrnGradOp",
      "getInput(), getSizeAttr(), getAlphaAttr(), getBetaAttr(), " #
      "getBiasAttr()">.rule;
}

def NN_LrnGradOp : NN_Op<"lrn_grad", [Pure]> {
  let summary = "gradient of lrn";
  let description = [{
    With b_c the base of channel c's element and w(j) the channels whose
    windows hold channel j:
    `result_grad_j * b_j^-beta - 2 * alpha * beta / size * input_j *
    sum over c in w(j) of result_grad_c * input_c * b_c^(-beta - 1)`.
  }];
  let arguments = !con((ins NN_FloatTensor:$result_grad, NN_FloatTensor:$input),
                       NN_LrnAttrs);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `,` $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // DPC_DIALECTS_NN_IR_NNPOOLNORM_TD
