// RUN: dpc-opt %s | dpc-opt | FileCheck %s

// A token-level loss that skips padded positions: ignore_index round-trips
// on the loss and its gradient, the scale left to the run time.
// CHECK-LABEL: func.func @ignored_tokens
func.func @ignored_tokens(%l: tensor<4x8x10xf32>, %y: tensor<4x8xi64>) -> (tensor<f32>, tensor<4x8x10xf32>) {
  // CHECK: nn.softmax_cross_entropy %{{.*}}, %{{.*}} {ignore_index = -100 : i64} : (tensor<4x8x10xf32>, tensor<4x8xi64>) -> tensor<f32>
  %loss = nn.softmax_cross_entropy %l, %y {ignore_index = -100 : i64} : (tensor<4x8x10xf32>, tensor<4x8xi64>) -> tensor<f32>
  // CHECK: nn.softmax_cross_entropy_grad %{{.*}}, %{{.*}} {ignore_index = 3 : i64} : (tensor<4x8x10xf32>, tensor<4x8xi64>) -> tensor<4x8x10xf32>
  %g = nn.softmax_cross_entropy_grad %l, %y {ignore_index = 3 : i64} : (tensor<4x8x10xf32>, tensor<4x8xi64>) -> tensor<4x8x10xf32>
  return %loss, %g : tensor<f32>, tensor<4x8x10xf32>
}
