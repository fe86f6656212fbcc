// RUN: dpc-opt %s -split-input-file | FileCheck %s
// RUN: dpc-opt %s -split-input-file | dpc-opt -split-input-file | FileCheck %s
// RUN: dpc-opt %s -split-input-file --dpc-autodiff | FileCheck %s --check-prefix=GRAD

// Broadcasting sub, mul and div, neg, and a frozen parameter: the gradient
// of a broadcast operand is summed back to its shape, sub's rhs and neg get
// a negated gradient, and the frozen constant gets neither a gradient nor an
// update.
// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %w = nn.param "w" : tensor<6x6xf32>
  %b = nn.param "b" : tensor<6xf32>
  %g = nn.param "g" : tensor<1x6xf32>
  // CHECK: nn.param "c" {frozen} : tensor<f32>
  %c = nn.param "c" {frozen} : tensor<f32>
  %m = nn.matmul %x, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  // CHECK: nn.sub %{{.*}}, %{{.*}} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %s = nn.sub %m, %b : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  // CHECK: nn.mul %{{.*}}, %{{.*}} : (tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %p = nn.mul %s, %g : (tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  // CHECK: nn.div %{{.*}}, %{{.*}} : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %d = nn.div %p, %c : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  // CHECK: nn.neg %{{.*}} : tensor<4x6xf32>
  %n = nn.neg %d : tensor<4x6xf32>
  return %n : tensor<4x6xf32>
}

// GRAD-LABEL: func.func @main
// GRAD-DAG: %[[W:.*]] = nn.param "w"
// GRAD-DAG: %[[B:.*]] = nn.param "b"
// GRAD-DAG: %[[G:.*]] = nn.param "g"
// GRAD-DAG: %[[C:.*]] = nn.param "c" {frozen}
// GRAD: %[[S:.*]] = nn.sub
// GRAD: %[[DY:.*]] = nn.softmax_cross_entropy_grad
// GRAD: %[[DD:.*]] = nn.neg %[[DY]] : tensor<4x6xf32>
// GRAD: %[[DP:.*]] = nn.div %[[DD]], %[[C]] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
// GRAD-NOT: nn.div
// GRAD: %[[DS:.*]] = nn.mul %[[DP]], %[[G]] : (tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
// GRAD: %[[PG:.*]] = nn.mul %[[DP]], %[[S]] : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// GRAD: %[[DG:.*]] = nn.sum_to_shape %[[PG]] : (tensor<4x6xf32>) -> tensor<1x6xf32>
// GRAD: %[[SB:.*]] = nn.sum_to_shape %[[DS]] : (tensor<4x6xf32>) -> tensor<6xf32>
// GRAD: %[[DB:.*]] = nn.neg %[[SB]] : tensor<6xf32>
// GRAD: %[[DW:.*]] = nn.matmul_grad_rhs %[[DS]]
// GRAD: nn.sgd_update %[[W]], %[[DW]]
// GRAD: nn.sgd_update %[[B]], %[[DB]]
// GRAD: nn.sgd_update %[[G]], %[[DG]]
// GRAD-NOT: nn.sgd_update

// -----

// A trained divisor: d(l / r)/dr = -dy * (l / r) / r, from the kept result,
// summed to the divisor's shape and negated.
// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %r = nn.param "r" : tensor<6xf32>
  %q = nn.div %x, %r : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %q : tensor<4x6xf32>
}

// GRAD: %[[R:.*]] = nn.param "r"
// GRAD: %[[Q:.*]] = nn.div %arg0, %[[R]]
// GRAD: %[[DY:.*]] = nn.softmax_cross_entropy_grad
// GRAD-NOT: nn.div %[[DY]]
// GRAD: %[[T:.*]] = nn.mul %[[DY]], %[[Q]] : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// GRAD: %[[U:.*]] = nn.div %[[T]], %[[R]] : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
// GRAD: %[[V:.*]] = nn.sum_to_shape %[[U]] : (tensor<4x6xf32>) -> tensor<6xf32>
// GRAD: %[[DR:.*]] = nn.neg %[[V]] : tensor<6xf32>
// GRAD: nn.sgd_update %[[R]], %[[DR]]
