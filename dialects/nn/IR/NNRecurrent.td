//===- NNRecurrent.td - nn recurrent layers ----------------*- tablegen -*-===//
//
// lstm and gru and their backward passes through time.
// Their verifiers and gradient rules are in NNRecurrent.cpp; shape rules in
// ShapeInference.{h,cpp}.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNRECURRENT_TD
#define DPC_DIALECTS_NN_IR_NNRECURRENT_TD

include "dialects/nn/IR/NNBase.td"

//===----------------------------------------------------------------------===//
// Recurrent
//===----------------------------------------------------------------------===//

def NN_LstmOp : NN_Op<"lstm", [Pure,
    DeclareOpInterfaceMethods<NN_InferResultOpInterface,
                              ["getInferredResultName"]>,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "one LSTM layer over a sequence, in one direction";
  let description = [{
    ONNX LSTM in one direction with the default activations, gates
    in ONNX's order i, o, f, c: for t in [0, T), with
    `z = x[t] w^T + h[t-1] r^T + bias[0:4H] + bias[4H:8H]` (B x 4H),
    `i, o, f = sigmoid(z_i, z_o, z_f)`, `g = tanh(z_c)`,
    `c[t] = f * c[t-1] + i * g` and `h[t] = o * tanh(c[t])`, starting from
    `initial_h` and `initial_c` (B x H; the importer gives zeros when the
    model has none). `x` is T x B x I, `w` 4H x I, `r` 4H x H, `bias` 8H.
    With `reverse` the steps run from T - 1 down to 0 (h[t-1] above is then
    h[t+1]): the second direction of a bidirectional layer, which the
    importer builds as two nn.lstm.

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
                       NN_FloatTensor:$initial_h, NN_FloatTensor:$initial_c,
                       UnitAttr:$reverse);
  let results = (outs NN_FloatTensor:$states);
  let assemblyFormat = [{
    $input `,` $weight `,` $recurrence (`bias` $bias^)? `initial` $initial_h
    `,` $initial_c attr-dict `:` functional-type(operands, results)
  }];
}

def NN_LstmGradOp : NN_Op<"lstm_grad", [Pure, NN_InferResult]> {
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
                       NN_FloatTensor:$initial_c, UnitAttr:$reverse);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $states_grad `,` $states `,` $recurrence `,` $initial_c attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_GruOp : NN_Op<"gru", [Pure,
    DeclareOpInterfaceMethods<NN_InferResultOpInterface,
                              ["getInferredResultName"]>,
    DeclareOpInterfaceMethods<NN_GradientOpInterface>]> {
  let summary = "one GRU layer over a sequence, in one direction";
  let description = [{
    ONNX GRU in one direction with the default activations, gates in ONNX's
    order z, r, h: for t in [0, T), with `xz, xr, xn` the parts of
    `x[t] w^T + bias[0:3H]` and `Rz, Rr, Rh`, `Rbz, Rbr, Rbh` those of `r`
    and `bias[3H:6H]`:
    `z = sigmoid(xz + h[t-1] Rz^T + Rbz)`,
    `r = sigmoid(xr + h[t-1] Rr^T + Rbr)`, and with `linear_before_reset`
    (as torch's nn.GRU is exported) `q = h[t-1] Rh^T + Rbh`,
    `n = tanh(xn + r * q)`, else `q = (r * h[t-1]) Rh^T + Rbh`,
    `n = tanh(xn + q)`; `h[t] = (1 - z) * n + z * h[t-1]`, from `initial_h`
    (B x H; zeros from the importer when the model has none). `x` is
    T x B x I, `w` 3H x I, `r` 3H x H, `bias` 6H. `reverse` runs the steps
    from T - 1 down, as nn.lstm's.

    The result is T x B x 5H: per step and sample `h[t]`, `z`, `r`, `n` and
    `q` (with linear_before_reset) or `r * h[t-1]` (without), what the
    backward pass reads. ONNX's Y and Y_h are slices of it.

    ```mlir
    %s = nn.gru %x, %w, %r bias %b initial %h0 {linear_before_reset = true}
        : (tensor<7x4x8xf32>, tensor<48x8xf32>, tensor<48x16xf32>,
           tensor<96xf32>, tensor<4x16xf32>) -> tensor<7x4x80xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       NN_FloatTensor:$recurrence,
                       Optional<NN_FloatTensor>:$bias,
                       NN_FloatTensor:$initial_h,
                       DefaultValuedAttr<BoolAttr, "true">:$linear_before_reset,
                       UnitAttr:$reverse);
  let results = (outs NN_FloatTensor:$states);
  let assemblyFormat = [{
    $input `,` $weight `,` $recurrence (`bias` $bias^)? `initial` $initial_h
    attr-dict `:` functional-type(operands, results)
  }];
}

def NN_GruGradOp : NN_Op<"gru_grad", [Pure, NN_InferResult]> {
  let summary = "backward pass through time of nn.gru";
  let description = [{
    From the gradient of the state sequence (`states_grad`, T x B x 5H, of
    which the h part is read) and the forward's `states`, runs the
    recurrence backwards: T x B x 5H holding, for each step, the gradients
    of the pre-activations of z and r, of `xn`, of `q`, and of h[t-1]
    through every path. The gradient rule of nn.gru builds the rest from
    nn.matmul, nn.slice and nn.sum_to_shape: the input's (`[dz, dr, dxn] w`)
    and the initial state's (the last part at the first step run), and
    apart from them the weights' (`[dz, dr, dxn]^T x`, `[dz, dr]^T h[t-1]`,
    `dq^T h[t-1]` or `dq^T (r * h[t-1])`, and sums).
  }];
  let arguments = (ins NN_FloatTensor:$states_grad, NN_FloatTensor:$states,
                       NN_FloatTensor:$recurrence, NN_FloatTensor:$initial_h,
                       DefaultValuedAttr<BoolAttr, "true">:$linear_before_reset,
                       UnitAttr:$reverse);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $states_grad `,` $states `,` $recurrence `,` $initial_h attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // DPC_DIALECTS_NN_IR_NNRECURRENT_TD
