// RUN: dpc-opt %s | FileCheck %s
// RUN: dpc-opt %s --mlir-print-op-generic | dpc-opt | FileCheck %s
// RUN: dpc-opt %s --dpc-autodiff | FileCheck %s --check-prefix=GRAD
// The functions that reach dpc through UnaryFunctions.def alone; autodiff
// saves the input for each, the result for reciprocal.
// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %w = nn.param "w2" : tensor<6x6xf32>
  %m = nn.matmul %x, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  // CHECK: %[[A:.*]] = nn.abs %{{.*}} : tensor<4x6xf32>
  %a = nn.abs %m : tensor<4x6xf32>
  // CHECK: %[[R:.*]] = nn.reciprocal %[[A]]
  %r = nn.reciprocal %a : tensor<4x6xf32>
  // CHECK: %[[S:.*]] = nn.sin %[[R]]
  %s = nn.sin %r : tensor<4x6xf32>
  // CHECK: %[[C:.*]] = nn.cos %[[S]]
  %c = nn.cos %s : tensor<4x6xf32>
  // CHECK: %[[P:.*]] = nn.softplus %[[C]]
  %p = nn.softplus %c : tensor<4x6xf32>
  // CHECK: %[[G:.*]] = nn.softsign %[[P]]
  %g = nn.softsign %p : tensor<4x6xf32>
  // CHECK: nn.hard_swish %[[G]]
  %h = nn.hard_swish %g : tensor<4x6xf32>
  return %h : tensor<4x6xf32>
}

// GRAD: %[[M:.*]] = nn.matmul
// GRAD: %[[A:.*]] = nn.abs %[[M]]
// GRAD: %[[R:.*]] = nn.reciprocal %[[A]]
// GRAD: %[[S:.*]] = nn.sin %[[R]]
// GRAD: %[[C:.*]] = nn.cos %[[S]]
// GRAD: %[[P:.*]] = nn.softplus %[[C]]
// GRAD: %[[G:.*]] = nn.softsign %[[P]]
// GRAD: nn.hard_swish %[[G]]
// GRAD: %[[DG:.*]] = nn.hard_swish_grad %{{.*}}, %[[G]] : tensor<4x6xf32>
// GRAD: %[[DP:.*]] = nn.softsign_grad %[[DG]], %[[P]]
// GRAD: %[[DC:.*]] = nn.softplus_grad %[[DP]], %[[C]]
// GRAD: %[[DS:.*]] = nn.cos_grad %[[DC]], %[[S]]
// GRAD: %[[DR:.*]] = nn.sin_grad %[[DS]], %[[R]]
// GRAD: %[[DA:.*]] = nn.reciprocal_grad %[[DR]], %[[R]]
// GRAD: %[[DM:.*]] = nn.abs_grad %[[DA]], %[[M]]
// GRAD: nn.matmul_grad_rhs %[[DM]]

// The trigonometric and hyperbolic family and their gradient ops.
// CHECK-LABEL: func.func @trig
func.func @trig(%x: tensor<3xf32>, %dy: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: nn.tan
  %0 = nn.tan %x : tensor<3xf32>
  // CHECK: nn.asin
  %1 = nn.asin %0 : tensor<3xf32>
  // CHECK: nn.acos
  %2 = nn.acos %1 : tensor<3xf32>
  // CHECK: nn.atan
  %3 = nn.atan %2 : tensor<3xf32>
  // CHECK: nn.sinh
  %4 = nn.sinh %3 : tensor<3xf32>
  // CHECK: nn.cosh
  %5 = nn.cosh %4 : tensor<3xf32>
  // CHECK: nn.asinh
  %6 = nn.asinh %5 : tensor<3xf32>
  // CHECK: nn.acosh
  %7 = nn.acosh %6 : tensor<3xf32>
  // CHECK: nn.atanh
  %8 = nn.atanh %7 : tensor<3xf32>
  // CHECK: nn.tan_grad %{{.*}}, %{{.*}} : tensor<3xf32>
  %9 = nn.tan_grad %dy, %0 : tensor<3xf32>
  // CHECK: nn.atanh_grad
  %10 = nn.atanh_grad %9, %8 : tensor<3xf32>
  return %10 : tensor<3xf32>
}
