// RUN: dpc-opt %s --dpc-insert-stash | FileCheck %s

// Two stages after autodiff and insert-send-recv. Each stage stashes the
// forward values its backward reads (the received activation, the relu
// output, the data argument) right where they become available, and restores
// them before their first backward use; parameters are never stashed.

// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x8xf32> loc("input"), %labels: tensor<4xi64> {pipe.labels} loc("labels")) -> (tensor<f32>, tensor<4x8xf32>) {
  // CHECK: pipe.stash %arg0 key "input" {pipe.stage = 0 : i64}
  // CHECK: pipe.stash %arg1 key "labels" {pipe.stage = 1 : i64}
  // CHECK: %[[W0:.*]] = nn.param "w0"
  %w0 = nn.param "w0" {pipe.stage = 0 : i64} : tensor<8x8xf32>
  %m0 = nn.matmul %x, %w0 {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[R0:.*]] = nn.relu
  // CHECK-NEXT: pipe.stash %[[R0]] key "relu0" {pipe.stage = 0 : i64}
  %r0 = nn.relu %m0 {pipe.stage = 0 : i64} : tensor<4x8xf32> loc("relu0")
  pipe.send %r0 to 1 tag 0 {pipe.stage = 0 : i64} : tensor<4x8xf32>
  // CHECK: %[[IN1:.*]] = pipe.recv from 0 tag 0
  // CHECK-NEXT: pipe.stash %[[IN1]] key "fc1.input" {pipe.stage = 1 : i64}
  %in1 = pipe.recv from 0 tag 0 {pipe.stage = 1 : i64} : tensor<4x8xf32> loc("fc1.input")
  %w1 = nn.param "w1" {pipe.stage = 1 : i64} : tensor<8x8xf32>
  // CHECK: %[[Y:.*]] = nn.matmul
  // CHECK-NEXT: pipe.stash %[[Y]] key "logits" {pipe.stage = 1 : i64}
  %y = nn.matmul %in1, %w1 {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("logits")
  // CHECK: %[[LOSS:.*]] = nn.softmax_cross_entropy %[[Y]], %arg1
  %loss = nn.softmax_cross_entropy %y, %labels {pipe.stage = 1 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  // CHECK-NEXT: %[[Y_R:.*]] = pipe.restore key "logits" {pipe.stage = 1 : i64}
  // CHECK-NEXT: %[[L_R:.*]] = pipe.restore key "labels" {pipe.stage = 1 : i64}
  // CHECK-NEXT: %[[DY:.*]] = nn.softmax_cross_entropy_grad %[[Y_R]], %[[L_R]]
  %dy = nn.softmax_cross_entropy_grad %y, %labels {pipe.stage = 1 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  // CHECK: nn.matmul_grad_lhs %[[DY]], %{{[0-9]+}} {pipe.stage = 1 : i64}
  %din = nn.matmul_grad_lhs %dy, %w1 {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[IN1_R:.*]] = pipe.restore key "fc1.input" {pipe.stage = 1 : i64}
  // CHECK-NEXT: nn.matmul_grad_rhs %[[DY]], %[[IN1_R]]
  %dw1 = nn.matmul_grad_rhs %dy, %in1 {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  pipe.send %din to 0 tag 1 {pipe.stage = 1 : i64} : tensor<4x8xf32>
  %g = pipe.recv from 1 tag 1 {pipe.stage = 0 : i64} : tensor<4x8xf32>
  // CHECK: %[[R0_R:.*]] = pipe.restore key "relu0" {pipe.stage = 0 : i64}
  // CHECK-NEXT: nn.relu_grad %{{.*}}, %[[R0_R]]
  %dr = nn.relu_grad %g, %r0 {pipe.stage = 0 : i64} : tensor<4x8xf32>
  // CHECK: %[[X_R:.*]] = pipe.restore key "input" {pipe.stage = 0 : i64}
  // CHECK-NEXT: nn.matmul_grad_rhs %{{.*}}, %[[X_R]]
  %dw0 = nn.matmul_grad_rhs %dr, %x {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // CHECK: nn.sgd_update %[[W0]]
  nn.sgd_update %w0, %dw0 {lr = 0.1 : f32, pipe.stage = 0 : i64} : tensor<8x8xf32>
  nn.sgd_update %w1, %dw1 {lr = 0.1 : f32, pipe.stage = 1 : i64} : tensor<8x8xf32>
  // The forward outputs returned are the values themselves, not restores.
  // CHECK: return %[[LOSS]], %[[Y]]
  return %loss, %y : tensor<f32>, tensor<4x8xf32>
}
