// RUN: dpc-opt %s | FileCheck %s
// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s --mlir-print-op-generic | dpc-opt | FileCheck %s
// Autodiff builds each function's gradient from the tensor it names: the
// result for tanh, sigmoid, exp and sqrt, the input for log and erf.
// RUN: dpc-opt %s --dpc-autodiff | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %w = nn.param "w" : tensor<6x6xf32>
  %m = nn.matmul %x, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  // CHECK: %[[T:.*]] = nn.tanh %{{.*}} : tensor<4x6xf32>
  %t = nn.tanh %m : tensor<4x6xf32>
  // CHECK: %[[S:.*]] = nn.sigmoid %[[T]] : tensor<4x6xf32>
  %s = nn.sigmoid %t : tensor<4x6xf32>
  // CHECK: %[[E:.*]] = nn.exp %[[S]] : tensor<4x6xf32>
  %e = nn.exp %s : tensor<4x6xf32>
  // CHECK: %[[L:.*]] = nn.log %[[E]] : tensor<4x6xf32>
  %l = nn.log %e : tensor<4x6xf32>
  // CHECK: %[[Q:.*]] = nn.sqrt %[[L]] : tensor<4x6xf32>
  %q = nn.sqrt %l : tensor<4x6xf32>
  // CHECK: nn.erf %[[Q]] : tensor<4x6xf32>
  %r = nn.erf %q : tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// GRAD: %[[M:.*]] = nn.matmul
// GRAD: %[[T:.*]] = nn.tanh %[[M]]
// GRAD: %[[S:.*]] = nn.sigmoid %[[T]]
// GRAD: %[[E:.*]] = nn.exp %[[S]]
// GRAD: %[[L:.*]] = nn.log %[[E]]
// GRAD: %[[Q:.*]] = nn.sqrt %[[L]]
// GRAD: nn.erf %[[Q]]
// GRAD: %[[DQ:.*]] = nn.erf_grad %{{.*}}, %[[Q]] : tensor<4x6xf32>
// GRAD: %[[DL:.*]] = nn.sqrt_grad %[[DQ]], %[[Q]] : tensor<4x6xf32>
// GRAD: %[[DE:.*]] = nn.log_grad %[[DL]], %[[E]] : tensor<4x6xf32>
// GRAD: %[[DS:.*]] = nn.exp_grad %[[DE]], %[[E]] : tensor<4x6xf32>
// GRAD: %[[DT:.*]] = nn.sigmoid_grad %[[DS]], %[[S]] : tensor<4x6xf32>
// GRAD: %[[DM:.*]] = nn.tanh_grad %[[DT]], %[[T]] : tensor<4x6xf32>
// GRAD: nn.matmul_grad_rhs %[[DM]]

// CHECK-LABEL: func.func @gradients
func.func @gradients(%dy: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: nn.tanh_grad %{{.*}}, %{{.*}} : tensor<3xf32>
  %a = nn.tanh_grad %dy, %y : tensor<3xf32>
  // CHECK: nn.sigmoid_grad
  %b = nn.sigmoid_grad %a, %y : tensor<3xf32>
  // CHECK: nn.exp_grad
  %c = nn.exp_grad %b, %y : tensor<3xf32>
  // CHECK: nn.log_grad
  %d = nn.log_grad %c, %y : tensor<3xf32>
  // CHECK: nn.sqrt_grad
  %e = nn.sqrt_grad %d, %y : tensor<3xf32>
  // CHECK: nn.erf_grad
  %f = nn.erf_grad %e, %y : tensor<3xf32>
  return %f : tensor<3xf32>
}
