//===- NNConv.td - nn convolutions and matmul --------------*- tablegen -*-===//
//
// conv2d, conv3d, conv_transpose2d, conv_transpose3d and matmul, and their
// input and weight gradients.
// Their verifiers and gradient rules are in NNConv.cpp; shape rules in
// ShapeInference.{h,cpp}.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNCONV_TD
#define DPC_DIALECTS_NN_IR_NNCONV_TD

include "dialects/nn/IR/NNBase.td"

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

def NN_Conv2dOp : NN_Op<"conv2d", [Pure, NN_InferResult,
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
  let summary = "gradient of a convolution with respect to its bias";
  let description = [{
    Sums the gradient of a conv2d, conv3d or transposed convolution result
    (N x O x H x W, or N x O x D x H x W) over the batch and spatial
    dimensions, giving the gradient of the bias (O). A weight gradient, like
    `nn.conv2d_grad_filter`.
  }];
  let arguments = (ins NN_FloatTensor:$result_grad);
  let results = (outs NN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_ConvTranspose2dOp : NN_Op<"conv_transpose2d", [Pure, NN_InferResult,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "2-D transposed convolution in NCHW layout";
  let description = [{
    ONNX ConvTranspose: scatters each element of `input` (N x Cin x H x W)
    through `filter` (Cin x Cout/groups x KH x KW) into the result
    (N x Cout x OH x OW) and adds the optional per-channel `bias` (Cout).
    It is the input gradient of the `nn.conv2d` with the same filter,
    strides, pads ([top, left, bottom, right], cropped from the result),
    dilations and groups whose input has the result's shape; each spatial
    size is (in - 1) * stride - pad_begin - pad_end + dilation * (k - 1) +
    1 + output_padding, with output_padding below the stride. A 1-D
    ConvTranspose imports as this op on a height of 1.

    Its gradients are convolutions: the input's is `nn.conv2d` of the
    result's gradient by the filter, the filter's is
    `nn.conv2d_grad_filter` with the input as that convolution's output
    gradient, and the bias's is `nn.conv2d_grad_bias`.

    ```mlir
    %y = nn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>,
        pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>}
        : (tensor<2x8x7x7xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>)
        -> tensor<2x4x14x14xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$filter,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// Attributes shared by conv3d, its gradients and conv_transpose3d. Pads are
// in ONNX order: [front, top, left, back, bottom, right].
defvar NN_Conv3dAttrs = (ins
  DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1, 1}">:$strides,
  DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0, 0, 0}">:$pads,
  DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1, 1}">:$dilations,
  DefaultValuedAttr<I64Attr, "1">:$groups);

def NN_Conv3dOp : NN_Op<"conv3d", [Pure, NN_InferResult,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "3-D convolution in NCDHW layout";
  let description = [{
    Cross-correlates `input` (N x C x D x H x W) with `filter`
    (O x C/groups x KD x KH x KW) and adds the optional per-channel `bias`
    (O), as `nn.conv2d` does in two dimensions (ONNX Conv of a rank-5
    input). Its gradients are `nn.conv3d_grad_input`,
    `nn.conv3d_grad_filter` and `nn.conv2d_grad_bias`.

    ```mlir
    %y = nn.conv3d %x, %w {pads = array<i64: 1, 1, 1, 1, 1, 1>}
        : (tensor<2x3x4x8x8xf32>, tensor<6x3x3x3x3xf32>)
        -> tensor<2x6x4x8x8xf32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$input, NN_FloatTensor:$filter,
                            Optional<NN_FloatTensor>:$bias),
                       NN_Conv3dAttrs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_Conv3dGradInputOp : NN_Op<"conv3d_grad_input", [Pure]> {
  let summary = "gradient of conv3d with respect to its input";
  let description = [{
    Given the gradient of a conv3d result and the conv3d's filter, computes
    the gradient of the conv3d's input; the result type is the forward
    input's, as for `nn.conv2d_grad_input`.
  }];
  let arguments = !con((ins NN_FloatTensor:$result_grad,
                            NN_FloatTensor:$filter),
                       NN_Conv3dAttrs);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `,` $filter attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_Conv3dGradFilterOp : NN_Op<"conv3d_grad_filter", [Pure]> {
  let summary = "gradient of conv3d with respect to its filter";
  let description = [{
    Given the gradient of a conv3d result and the conv3d's input, computes
    the gradient of the conv3d's filter. A weight gradient.
  }];
  let arguments = !con((ins NN_FloatTensor:$result_grad,
                            NN_FloatTensor:$input),
                       NN_Conv3dAttrs);
  let results = (outs NN_FloatTensor:$filter_grad);
  let assemblyFormat = [{
    $result_grad `,` $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_ConvTranspose3dOp : NN_Op<"conv_transpose3d", [Pure, NN_InferResult,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "3-D transposed convolution in NCDHW layout";
  let description = [{
    ONNX ConvTranspose of a rank-5 input, as `nn.conv_transpose2d` in two
    dimensions: `input` (N x Cin x D x H x W), `filter`
    (Cin x Cout/groups x KD x KH x KW), the optional `bias` (Cout), one
    output_padding per dimension below its stride. It is the input gradient
    of the `nn.conv3d` with the same filter and attributes; its gradients
    are that conv3d (input), `nn.conv3d_grad_filter` (filter) and
    `nn.conv2d_grad_bias`.
  }];
  let arguments = !con((ins NN_FloatTensor:$input, NN_FloatTensor:$filter,
                            Optional<NN_FloatTensor>:$bias),
                       NN_Conv3dAttrs,
                       (ins DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0}">:$output_padding));
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix multiplication
//===----------------------------------------------------------------------===//

defvar NN_MatmulAttrs = (ins DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                             DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);

def NN_MatmulOp : NN_Op<"matmul", [Pure, NN_InferResult,
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

#endif // DPC_DIALECTS_NN_IR_NNCONV_TD
