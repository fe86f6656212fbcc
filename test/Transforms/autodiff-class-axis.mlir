// RUN: dpc-opt %s --dpc-autodiff='microbatches=2 class-axis=1' | FileCheck %s
// RUN: not dpc-opt %s --dpc-autodiff='class-axis=4' 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not dpc-opt %s --dpc-autodiff='class-axis=1 loss=mse' 2>&1 | FileCheck %s --check-prefix=MSE

// Per-pixel logits [N, C, H, W] (class axis 1): the classes are moved last
// before the loss, whose labels are [N, H, W] and whose mean runs over the
// 2 microbatches x 2 x 4 x 5 pixels; the transposed logits are the step's
// output, and the loss gradient comes back through the inverse transpose.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4x5xf32>, %[[LABELS:.*]]: tensor<2x4x5xi64> {pipe.labels})
// CHECK-SAME: -> (tensor<f32>, tensor<2x4x5x3xf32>)
// CHECK: %[[Y:.*]] = nn.add
// CHECK: %[[T:.*]] = nn.transpose %[[Y]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
// CHECK: %[[LOSS:.*]] = nn.softmax_cross_entropy %[[T]], %[[LABELS]] {scale = 1.250000e-02 : f32} : (tensor<2x4x5x3xf32>, tensor<2x4x5xi64>) -> tensor<f32>
// CHECK: %[[G:.*]] = nn.softmax_cross_entropy_grad %[[T]], %[[LABELS]]
// CHECK: %[[GY:.*]] = nn.transpose %[[G]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
// CHECK: nn.sgd_update %{{.*}}, %[[GY]]
// CHECK: return %[[LOSS]], %[[T]]
// RANGE: error: class-axis 4 is not a dimension after the batch of the logits 'tensor<2x3x4x5xf32>'
// MSE: error: class-axis applies to the softmax-cross-entropy loss, not mse
func.func @main(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32> {
  %w = nn.param "w" : tensor<2x3x4x5xf32>
  %y = nn.add %x, %w : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  return %y : tensor<2x3x4x5xf32>
}
