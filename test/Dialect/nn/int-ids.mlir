// RUN: dpc-opt %s | FileCheck %s
// RUN: dpc-opt %s --mlir-print-op-generic | dpc-opt | FileCheck %s
// Integer ids as values inside the graph (#43): one int64 input [B, 2T]
// sliced into a source and a target half, the halves joined and transposed
// back, and each half embedded by one shared table. Autodiff gives the
// table a gradient from both gathers and the ids none: no slice_grad, and
// no gradient of the int64 concat or transpose.
// RUN: dpc-opt %s --dpc-autodiff | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: func.func @main
func.func @main(%ids: tensor<2x8xi64>) -> tensor<2x8x3xf32> {
  %table = nn.param "table" : tensor<16x3xf32>
  // CHECK: nn.slice %{{.*}} {offsets = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x8xi64>) -> tensor<2x4xi64>
  %src = nn.slice %ids {offsets = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x8xi64>) -> tensor<2x4xi64>
  // CHECK: nn.slice %{{.*}} {offsets = array<i64: 0, 4>, steps = array<i64: 1, 1>} : (tensor<2x8xi64>) -> tensor<2x4xi64>
  %tgt = nn.slice %ids {offsets = array<i64: 0, 4>, steps = array<i64: 1, 1>} : (tensor<2x8xi64>) -> tensor<2x4xi64>
  // CHECK: nn.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<4x4xi64>
  %both = nn.concat %tgt, %src {axis = 0 : i64} : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<4x4xi64>
  // CHECK: nn.transpose %{{.*}} {perm = array<i64: 1, 0>} : (tensor<4x4xi64>) -> tensor<4x4xi64>
  %t = nn.transpose %both {perm = array<i64: 1, 0>} : (tensor<4x4xi64>) -> tensor<4x4xi64>
  // CHECK: nn.slice %{{.*}} : (tensor<4x4xi64>) -> tensor<2x4xi64>
  %back = nn.slice %t {offsets = array<i64: 0, 0>, steps = array<i64: 2, 1>} : (tensor<4x4xi64>) -> tensor<2x4xi64>
  %e1 = nn.gather %table, %src : (tensor<16x3xf32>, tensor<2x4xi64>) -> tensor<2x4x3xf32>
  %e2 = nn.gather %table, %back : (tensor<16x3xf32>, tensor<2x4xi64>) -> tensor<2x4x3xf32>
  %y = nn.concat %e1, %e2 {axis = 1 : i64} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x8x3xf32>
  return %y : tensor<2x8x3xf32>
}

// GRAD-NOT: nn.slice_grad
// GRAD-NOT: tensor<4x4xi64>) -> tensor<4x4xi64>{{.*}}transpose
// GRAD: nn.gather_grad
// GRAD: nn.gather_grad
// GRAD-NOT: nn.slice_grad
// GRAD: nn.sgd_update

// CHECK-LABEL: func.func @int32
func.func @int32(%x: tensor<3x4xi32>) -> tensor<4x3xi32> {
  // CHECK: nn.transpose %{{.*}} : (tensor<3x4xi32>) -> tensor<4x3xi32>
  %y = nn.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x4xi32>) -> tensor<4x3xi32>
  return %y : tensor<4x3xi32>
}
