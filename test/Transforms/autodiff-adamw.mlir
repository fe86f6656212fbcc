// RUN: dpc-opt %s --dpc-autodiff='optimizer=adamw lr=0.001 weight-decay=0.1 no-decay=*.bias,*norm*' | FileCheck %s
// RUN: dpc-opt %s --dpc-autodiff='optimizer=sgd weight-decay=0.1 no-decay=*.bias' | FileCheck %s --check-prefix=SGD
// RUN: dpc-opt %s --dpc-autodiff='optimizer=adam weight-decay=0.1' | FileCheck %s --check-prefix=ADAM
// RUN: dpc-opt %s --dpc-autodiff='label-smoothing=0.1' | FileCheck %s --check-prefix=SMOOTH
// RUN: not dpc-opt %s --dpc-autodiff='label-smoothing=1.0' 2>&1 | FileCheck %s --check-prefix=SMOOTH-RANGE
// RUN: not dpc-opt %s --dpc-autodiff='loss=mse label-smoothing=0.1' 2>&1 | FileCheck %s --check-prefix=SMOOTH-MSE

// AdamW marks every update decoupled; a name matching a no-decay glob gets
// weight decay 0 (the default, which the printer leaves out), the others
// the option's.
// CHECK-DAG: nn.adam_update %{{.*}} {decoupled, lr = 1.000000e-03 : f32} : tensor<3xf32>
// CHECK-DAG: nn.adam_update %{{.*}} {decoupled, lr = 1.000000e-03 : f32} : tensor<4x3xf32>
// CHECK-DAG: nn.adam_update %{{.*}} {decoupled, lr = 1.000000e-03 : f32, weight_decay = 1.000000e-01 : f32} : tensor<3x3xf32>
// SGD-DAG: nn.sgd_update %{{.*}} {lr = 0.00999999977 : f32} : tensor<3xf32>
// SGD-DAG: nn.sgd_update %{{.*}} {lr = 0.00999999977 : f32, weight_decay = 1.000000e-01 : f32} : tensor<4x3xf32>
// ADAM-NOT: decoupled
// ADAM-COUNT-3: weight_decay = 1.000000e-01
// The loss and its gradient both carry the smoothing.
// SMOOTH: nn.softmax_cross_entropy %{{.*}} {label_smoothing = 1.000000e-01 : f32
// SMOOTH: nn.softmax_cross_entropy_grad %{{.*}} {label_smoothing = 1.000000e-01 : f32
// SMOOTH-RANGE: error: expects label-smoothing in [0, 1)
// SMOOTH-MSE: error: label-smoothing applies to the softmax-cross-entropy loss, not mse
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %w = nn.param "fc.weight" : tensor<3x3xf32>
  %b = nn.param "fc.bias" : tensor<3xf32>
  %n = nn.param "layernorm.weight" : tensor<4x3xf32>
  %y = nn.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %z = nn.add %y, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %o = nn.mul %z, %n : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %o : tensor<4x3xf32>
}
