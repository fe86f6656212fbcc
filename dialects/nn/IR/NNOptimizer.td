//===- NNOptimizer.td - nn parameters and optimizers -------*- tablegen -*-===//
//
// param, which reads a trainable parameter, and the updates that write it.
// Their verifiers and gradient rules are in NNOptimizer.cpp; shape rules in
// ShapeInference.{h,cpp}.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_DIALECTS_NN_IR_NNOPTIMIZER_TD
#define DPC_DIALECTS_NN_IR_NNOPTIMIZER_TD

include "dialects/nn/IR/NNBase.td"

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

#endif // DPC_DIALECTS_NN_IR_NNOPTIMIZER_TD
