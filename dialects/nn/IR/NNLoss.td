//===- NNLoss.td - nn softmax and losses -------------------*- tablegen -*-===//
//
// softmax and log_softmax, softmax cross-entropy and squared error.
// Their verifiers and gradient rules are in NNLoss.cpp; shape rules in
// ShapeInference.{h,cpp}.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNLOSS_TD
#define DPC_DIALECTS_NN_IR_NNLOSS_TD

include "dialects/nn/IR/NNBase.td"

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
  let extraClassDefinition =
      NN_InputGradient<gradOp, "getResult(), getAxisAttr()">.rule;
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

#endif // DPC_DIALECTS_NN_IR_NNLOSS_TD
