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

// Squared error against float targets of the prediction's shape.
// CHECK-LABEL: func.func @squared_error
func.func @squared_error(%p: tensor<16x8xf32>, %t: tensor<16x8xf32>) -> (tensor<f32>, tensor<16x8xf32>) {
  // CHECK: nn.mse_loss %{{.*}}, %{{.*}} {scale = 7.812500e-03 : f32} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<f32>
  %loss = nn.mse_loss %p, %t {scale = 0.0078125 : f32} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<f32>
  // CHECK: nn.mse_loss_grad %{{.*}}, %{{.*}} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %g = nn.mse_loss_grad %p, %t : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %loss, %g : tensor<f32>, tensor<16x8xf32>
}
