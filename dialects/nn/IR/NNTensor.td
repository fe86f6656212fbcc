//===- NNTensor.td - nn views, layouts and data movement ---*- tablegen -*-===//
//
// relayout, reshape, transpose, concat, slice, pad, gather and resize.
// Their verifiers and gradient rules are in NNTensor.cpp; shape rules in
// ShapeInference.{h,cpp}.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNTENSOR_TD
#define DPC_DIALECTS_NN_IR_NNTENSOR_TD

include "dialects/nn/IR/NNBase.td"

// What the pure data movements (transpose, concat, slice) take: activations
// and integer ids, so that one id input can be split, joined and permuted
// inside the graph. An integer value gets no gradient.
def NN_DataTensor : StaticShapeTensorOf<[F32, F16, BF16, I64, I32]>;

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
  let extraClassDefinition = NN_InputGradient<"ReshapeOp">.rule;
}

def NN_TransposeOp : NN_Op<"transpose", [Pure, NN_InferResult,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "permutes the dimensions of a tensor";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`, as in ONNX Transpose.
    Its gradient is the transpose by the inverse permutation. Integer
    tensors (ids) transpose too, without a gradient.

    ```mlir
    %kt = nn.transpose %k {perm = array<i64: 0, 2, 1>}
        : (tensor<8x28x16xf32>) -> tensor<8x16x28xf32>
    ```
  }];
  let arguments = (ins NN_DataTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs NN_DataTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Concatenation, slices and clipping
//===----------------------------------------------------------------------===//

def NN_ConcatOp : NN_Op<"concat", [Pure, NN_InferResult,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "concatenates tensors along one dimension";
  let description = [{
    Joins `inputs` (at least one, all of one rank, equal in every dimension
    but `axis`) along `axis`, as ONNX Concat (DenseNet's feature reuse,
    Inception's branches), all of one element type: floats, or integer ids.
    The gradient of each float input is the slice of the result's gradient
    where that input lies.

    ```mlir
    %y = nn.concat %a, %b {axis = 1 : i64}
        : (tensor<4x8x7x7xf32>, tensor<4x16x7x7xf32>) -> tensor<4x24x7x7xf32>
    ```
  }];
  let arguments = (ins Variadic<NN_DataTensor>:$inputs, I64Attr:$axis);
  let results = (outs NN_DataTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type(operands, results)
  }];
}

def NN_SliceOp : NN_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "a strided box of a tensor";
  let description = [{
    Result element `i` (a multi-index) is input element `offsets + i *
    steps`, with one offset and one positive step per dimension: ONNX Slice
    and each output of Split, normalized by the importer. Integer ids slice
    too (the source and target halves of one id input), without a gradient.
    The gradient of a float slice (`nn.slice_grad`) puts the result's
    gradient back into a zero tensor of the input's shape.

    ```mlir
    %h = nn.slice %x {offsets = array<i64: 0, 16>, steps = array<i64: 1, 1>}
        : (tensor<4x32xf32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins NN_DataTensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$steps);
  let results = (outs NN_DataTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition =
      NN_InputGradient<"SliceGradOp", "getOffsets(), getSteps()">.rule;
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

def NN_PadOp : NN_Op<"pad", [Pure, NN_InferResult,
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
}

def NN_GatherOp : NN_Op<"gather", [Pure, NN_InferResult,
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
  let extraClassDefinition =
      NN_InputGradient<"GatherGradOp", "getIndices()">.rule;
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

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

def NN_ResizeOp : NN_Op<"resize", [Pure,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "resizes the spatial dimensions by interpolation";
  let description = [{
    ONNX Resize (and Upsample, which the version converter turns into it)
    of an `N x C x D1..Dk` tensor (k from 1 to 3) over its spatial
    dimensions. Each output position is mapped into the input by
    `coordinates` (ONNX's coordinate_transformation_mode: `half_pixel`,
    `pytorch_half_pixel`, `align_corners`, `asymmetric` or
    `tf_half_pixel_for_nn`) with `scales` (one per spatial dimension; 0
    where the importer was given sizes: the step is then input over output
    length), then read by `mode`: `nearest` (the element `nearest_mode`
    rounds to: `round_prefer_floor`, `round_prefer_ceil`, `floor`, `ceil`)
    or `linear` (multilinear between the two neighbours of each dimension,
    the coordinate clamped into the input, as PyTorch's bilinear). A
    positive scale gives `floor(Di * scale)` outputs. torch.onnx writes
    `F.interpolate(mode="bilinear")` as linear with half_pixel
    (align_corners=False) or align_corners, and `mode="nearest"` as nearest,
    asymmetric, floor. The gradient (`nn.resize_grad`) reads only the
    result's gradient.

    ```mlir
    %y = nn.resize %x {coordinates = "half_pixel", mode = "linear",
                       scales = array<f64: 2.0, 2.0>}
        : (tensor<16x8x14x14xf32>) -> tensor<16x8x28x28xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseF64ArrayAttr:$scales,
                       DefaultValuedStrAttr<StrAttr, "nearest">:$mode,
                       DefaultValuedStrAttr<StrAttr, "half_pixel">:$coordinates,
                       DefaultValuedStrAttr<StrAttr, "round_prefer_floor">:
                           $nearest_mode);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_ResizeGradOp : NN_Op<"resize_grad", [Pure]> {
  let summary = "input gradient of nn.resize";
  let description = [{
    A tensor of the resized input's type: each element the sum of
    `result_grad` over the outputs that read it, times the weight they read
    it with. Both kernels gather these sums per input element in a fixed
    order (no atomics), so runs repeat bit for bit.

    ```mlir
    %dx = nn.resize_grad %dy {coordinates = "half_pixel", mode = "linear",
                              scales = array<f64: 2.0, 2.0>}
        : (tensor<16x8x28x28xf32>) -> tensor<16x8x14x14xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$result_grad, DenseF64ArrayAttr:$scales,
                       DefaultValuedStrAttr<StrAttr, "nearest">:$mode,
                       DefaultValuedStrAttr<StrAttr, "half_pixel">:$coordinates,
                       DefaultValuedStrAttr<StrAttr, "round_prefer_floor">:
                           $nearest_mode);
  let results = (outs NN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // DPC_DIALECTS_NN_IR_NNTENSOR_TD
