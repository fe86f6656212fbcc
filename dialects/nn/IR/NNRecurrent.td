//===- NNRecurrent.td - nn recurrent layers ----------------*- tablegen -*-===//
//
// lstm and its backward pass through time.
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
                       NN_FloatTensor:$initial_c);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $states_grad `,` $states `,` $recurrence `,` $initial_c attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // DPC_DIALECTS_NN_IR_NNRECURRENT_TD
