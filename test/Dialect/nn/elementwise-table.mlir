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
