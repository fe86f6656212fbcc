// RUN: not dpc-opt %s --dpc-autodiff='optimizer=adam' 2>&1 | FileCheck %s --check-prefix=ADAM
// RUN: not dpc-opt %s --dpc-autodiff='loss=mse' 2>&1 | FileCheck %s --check-prefix=MSE
// RUN: not dpc-opt %s --dpc-autodiff='momentum=1.0' 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// RUN: not dpc-opt %s --dpc-autodiff='microbatches=0' 2>&1 | FileCheck %s --check-prefix=MICRO

// ADAM: error: optimizer 'adam' is not supported yet; use sgd
// MSE: error: loss 'mse' is not supported yet; use softmax-cross-entropy
// MOMENTUM: error: expects lr > 0, momentum in [0, 1) and weight-decay >= 0
// MICRO: error: expects microbatches >= 1
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %w = nn.param "w" : tensor<4x3xf32>
  %y = nn.add %x, %w : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
