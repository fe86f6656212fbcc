// RUN: dpc-opt %s --dpc-autodiff='optimizer=adam lr=0.001 beta2=0.99 eps=1e-6 weight-decay=0.01' | FileCheck %s --check-prefix=ADAM
// RUN: not dpc-opt %s --dpc-autodiff='optimizer=rmsprop' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not dpc-opt %s --dpc-autodiff='optimizer=adam beta1=1.0' 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not dpc-opt %s --dpc-autodiff='optimizer=adam eps=0' 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not dpc-opt %s --dpc-autodiff='loss=hinge' 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not dpc-opt %s --dpc-autodiff='momentum=1.0' 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// RUN: not dpc-opt %s --dpc-autodiff='microbatches=0' 2>&1 | FileCheck %s --check-prefix=MICRO

// ADAM: %[[W:.*]] = nn.param "w"
// ADAM: %[[G:.*]] = nn.softmax_cross_entropy_grad
// ADAM-NOT: nn.sgd_update
// ADAM: nn.adam_update %[[W]], %[[G]] {beta2 = 9.900000e-01 : f32, eps = 9.99999997E-7 : f32, lr = 1.000000e-03 : f32, weight_decay = 0.00999999977 : f32} : tensor<4x3xf32>
// UNKNOWN: error: unknown optimizer 'rmsprop'; expected sgd, adam or adamw
// BETA: error: expects beta1 and beta2 in [0, 1) and eps > 0
// LOSS: error: unknown loss 'hinge'; expected softmax-cross-entropy or mse
// MOMENTUM: error: expects lr > 0, momentum in [0, 1) and weight-decay >= 0
// MICRO: error: expects microbatches >= 1
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %w = nn.param "w" : tensor<4x3xf32>
  %y = nn.add %x, %w : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
