// RUN: dpc-opt %s | FileCheck %s
// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s --mlir-print-op-generic | dpc-opt | FileCheck %s
// The ops of self-attention and of layer normalization as PyTorch exports
// them, and their gradient rules: transpose back by the inverse
// permutation, softmax from its result, a scaled sum broadcast back with
// the same scale (and a broadcast summed back).
// RUN: dpc-opt %s --dpc-autodiff | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<2x4x6xf32>) -> tensor<8x6xf32> {
  %w = nn.param "w" : tensor<6x6xf32>
  %q = nn.matmul %x, %w : (tensor<2x4x6xf32>, tensor<6x6xf32>) -> tensor<2x4x6xf32>
  // CHECK: %[[KT:.*]] = nn.transpose %{{.*}} {perm = array<i64: 0, 2, 1>} : (tensor<2x4x6xf32>) -> tensor<2x6x4xf32>
  %kt = nn.transpose %q {perm = array<i64: 0, 2, 1>} : (tensor<2x4x6xf32>) -> tensor<2x6x4xf32>
  %s = nn.matmul %q, %kt : (tensor<2x4x6xf32>, tensor<2x6x4xf32>) -> tensor<2x4x4xf32>
  // CHECK: %[[P:.*]] = nn.softmax %{{.*}} : tensor<2x4x4xf32>
  %p = nn.softmax %s : tensor<2x4x4xf32>
  // CHECK: nn.log_softmax %[[P]] {axis = 1 : i64} : tensor<2x4x4xf32>
  %lp = nn.log_softmax %p {axis = 1 : i64} : tensor<2x4x4xf32>
  %a = nn.matmul %lp, %q : (tensor<2x4x4xf32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // CHECK: %[[M:.*]] = nn.sum_to_shape %{{.*}} {scale = 0.166666672 : f32} : (tensor<2x4x6xf32>) -> tensor<2x4x1xf32>
  %m = nn.sum_to_shape %a {scale = 0.166666672 : f32} : (tensor<2x4x6xf32>) -> tensor<2x4x1xf32>
  // CHECK: nn.broadcast_to %[[M]] {scale = 2.000000e+00 : f32} : (tensor<2x4x1xf32>) -> tensor<2x4x6xf32>
  %b = nn.broadcast_to %m {scale = 2.0 : f32} : (tensor<2x4x1xf32>) -> tensor<2x4x6xf32>
  %y = nn.sub %a, %b : (tensor<2x4x6xf32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %logits = nn.reshape %y : (tensor<2x4x6xf32>) -> tensor<8x6xf32>
  return %logits : tensor<8x6xf32>
}

// GRAD: %[[Q:.*]] = nn.matmul
// GRAD: %[[KT:.*]] = nn.transpose %[[Q]]
// GRAD: %[[P:.*]] = nn.softmax
// GRAD: %[[LP:.*]] = nn.log_softmax %[[P]] {axis = 1 : i64}
// GRAD: %[[A:.*]] = nn.matmul %[[LP]], %[[Q]]
// The broadcast's gradient is summed back with its scale, then the
// reduction's is broadcast with its own.
// GRAD: %[[DB:.*]] = nn.neg
// GRAD: %[[DM:.*]] = nn.sum_to_shape %[[DB]] {scale = 2.000000e+00 : f32} : (tensor<2x4x6xf32>) -> tensor<2x4x1xf32>
// GRAD: nn.broadcast_to %[[DM]] {scale = 0.166666672 : f32} : (tensor<2x4x1xf32>) -> tensor<2x4x6xf32>
// GRAD: %[[DLP:.*]] = nn.matmul_grad_lhs
// GRAD: %[[DP:.*]] = nn.log_softmax_grad %[[DLP]], %[[LP]] {axis = 1 : i64} : tensor<2x4x4xf32>
// GRAD: %[[DS:.*]] = nn.softmax_grad %[[DP]], %[[P]] : tensor<2x4x4xf32>
// GRAD: %[[DKT:.*]] = nn.matmul_grad_rhs %[[DS]]
// GRAD: nn.transpose %[[DKT]] {perm = array<i64: 0, 2, 1>} : (tensor<2x6x4xf32>) -> tensor<2x4x6xf32>

// CHECK-LABEL: func.func @gradients
func.func @gradients(%dy: tensor<3x5xf32>, %y: tensor<3x5xf32>) -> tensor<3x5xf32> {
  // CHECK: nn.softmax_grad %{{.*}}, %{{.*}} : tensor<3x5xf32>
  %a = nn.softmax_grad %dy, %y : tensor<3x5xf32>
  // CHECK: nn.log_softmax_grad %{{.*}}, %{{.*}} {axis = 0 : i64} : tensor<3x5xf32>
  %b = nn.log_softmax_grad %a, %y {axis = 0 : i64} : tensor<3x5xf32>
  return %b : tensor<3x5xf32>
}
