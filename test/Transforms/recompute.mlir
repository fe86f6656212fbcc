// RUN: dpc-opt %s --dpc-recompute=all=true --dpc-insert-stash | FileCheck %s
// RUN: dpc-opt %s --dpc-recompute=stages=1 --dpc-insert-stash | FileCheck %s --check-prefix=ONE
// RUN: dpc-opt %s --dpc-recompute --dpc-insert-stash | FileCheck %s --check-prefix=NONE

// Two stages after autodiff and insert-send-recv. Stage 0 computes
// fc0 -> relu0 -> drop0 and sends it; stage 1 normalizes what it received
// (batch_norm_stats updates the running statistics), drops out and computes
// the logits. With every stage recomputed, each stage stashes only its
// inputs (the data and the labels, the received activation) and the
// batch-norm statistics, which must not be computed twice; the backward
// starts by computing again, from those, the forward values it reads.

// CHECK: module attributes {{{.*}}pipe.recompute = array<i64: 0, 1>
// ONE: module attributes {{{.*}}pipe.recompute = array<i64: 1>
// NONE-NOT: pipe.recompute
// NONE-NOT: pipe.recomputed

// The forward: only inputs and the statistics are stashed.
// CHECK: pipe.stash %arg0 key "input" {pipe.stage = 0 : i64}
// CHECK: pipe.stash %arg1 key "labels" {pipe.stage = 1 : i64}
// CHECK: %[[W0:.*]] = nn.param "w0"
// CHECK: %[[R0:.*]] = nn.relu
// CHECK-NOT: pipe.stash
// CHECK: %[[IN1:.*]] = pipe.recv from 0 tag 0
// CHECK-NEXT: pipe.stash %[[IN1]] key "fc1.input" {pipe.stage = 1 : i64}
// CHECK: %[[S:.*]] = nn.batch_norm_stats
// CHECK-NEXT: pipe.stash %[[S]] key "bn1.stats" {pipe.stage = 1 : i64}
// CHECK-NOT: pipe.stash
// CHECK: %[[YF:.*]] = nn.matmul
// CHECK-NOT: pipe.stash
// CHECK: nn.softmax_cross_entropy %[[YF]]

// Stage 1's backward recomputes batch_norm, dropout and the logits from the
// restored input and statistics; the dropout keeps its mask_id.
// CHECK: %[[IN1_R:.*]] = pipe.restore key "fc1.input" {pipe.stage = 1 : i64}
// CHECK-NEXT: %[[S_R:.*]] = pipe.restore key "bn1.stats" {pipe.stage = 1 : i64}
// CHECK-NEXT: %[[BN:.*]] = nn.batch_norm %[[IN1_R]], %[[S_R]], %{{.*}}, %{{.*}} {pipe.recomputed, pipe.stage = 1 : i64}
// CHECK-NEXT: %[[DP:.*]] = nn.dropout %[[BN]] {mask_id = 7 : i64, pipe.recomputed, pipe.stage = 1 : i64
// CHECK-NEXT: %[[Y:.*]] = nn.matmul %[[DP]], %{{.*}} {pipe.recomputed, pipe.stage = 1 : i64}
// CHECK-NOT: nn.batch_norm_stats
// CHECK: nn.softmax_cross_entropy_grad %[[Y]]
// CHECK: nn.matmul_grad_rhs %{{.*}}, %[[DP]]
// CHECK: nn.batch_norm_grad_input %{{.*}}, %[[IN1_R]], %[[S_R]]

// Stage 0's backward recomputes fc0 and relu0 from the restored data.
// CHECK: %[[X_R:.*]] = pipe.restore key "input" {pipe.stage = 0 : i64}
// CHECK-NEXT: %[[M0:.*]] = nn.matmul %[[X_R]], %[[W0]] {pipe.recomputed, pipe.stage = 0 : i64}
// CHECK-NEXT: %[[R0_C:.*]] = nn.relu %[[M0]] {pipe.recomputed, pipe.stage = 0 : i64}
// CHECK-NEXT: pipe.recv from 1 tag 1
// CHECK: nn.relu_grad %{{.*}}, %[[R0_C]]
// CHECK: nn.matmul_grad_rhs %{{.*}}, %[[X_R]]
// The forward outputs returned are the forward's, not the clones.
// CHECK: return %{{.*}}, %[[YF]] :

// Stage 1 alone: stage 0 keeps its relu output, stage 1 stashes as above.
// ONE: pipe.stash %arg0 key "input" {pipe.stage = 0 : i64}
// ONE: %[[R0:.*]] = nn.relu
// ONE-NEXT: pipe.stash %[[R0]] key "relu0" {pipe.stage = 0 : i64}
// ONE: pipe.stash %{{.*}} key "fc1.input" {pipe.stage = 1 : i64}
// ONE: pipe.stash %{{.*}} key "bn1.stats" {pipe.stage = 1 : i64}
// ONE-NOT: pipe.stash
// ONE: nn.matmul {{.*}}pipe.recomputed, pipe.stage = 1
// ONE-NOT: pipe.recomputed, pipe.stage = 0
// ONE: pipe.restore key "relu0" {pipe.stage = 0 : i64}

// Without stages the pass changes nothing: every value is stashed.
// NONE: pipe.stash %{{.*}} key "relu0"
// NONE: pipe.stash %{{.*}} key "bn1.stats"
// NONE: pipe.stash %{{.*}} key "drop1"
// NONE: pipe.stash %{{.*}} key "logits"

module attributes {pipe.num_stages = 2 : i64} {
func.func @main(%x: tensor<4x8xf32> loc("input"), %labels: tensor<4xi64> {pipe.labels} loc("labels")) -> (tensor<f32>, tensor<4x8xf32>) {
  %w0 = nn.param "w0" {pipe.stage = 0 : i64} : tensor<8x8xf32>
  %m0 = nn.matmul %x, %w0 {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc0")
  %r0 = nn.relu %m0 {pipe.stage = 0 : i64} : tensor<4x8xf32> loc("relu0")
  %d0 = nn.dropout %r0 {mask_id = 3 : i64, ratio = 5.000000e-01 : f32, pipe.stage = 0 : i64} : tensor<4x8xf32> loc("drop0")
  pipe.send %d0 to 1 tag 0 {pipe.stage = 0 : i64} : tensor<4x8xf32>
  %in1 = pipe.recv from 0 tag 0 {pipe.stage = 1 : i64} : tensor<4x8xf32> loc("fc1.input")
  %rm = nn.param "bn1.running_mean" {pipe.stage = 1 : i64} : tensor<8xf32>
  %rv = nn.param "bn1.running_var" {pipe.stage = 1 : i64} : tensor<8xf32>
  %gamma = nn.param "bn1.weight" {pipe.stage = 1 : i64} : tensor<8xf32>
  %beta = nn.param "bn1.bias" {pipe.stage = 1 : i64} : tensor<8xf32>
  %s = nn.batch_norm_stats %in1, %rm, %rv {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("bn1.stats")
  %bn = nn.batch_norm %in1, %s, %gamma, %beta {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("bn1")
  %dp = nn.dropout %bn {mask_id = 7 : i64, ratio = 5.000000e-01 : f32, pipe.stage = 1 : i64} : tensor<4x8xf32> loc("drop1")
  %w1 = nn.param "w1" {pipe.stage = 1 : i64} : tensor<8x8xf32>
  %y = nn.matmul %dp, %w1 {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("logits")
  %loss = nn.softmax_cross_entropy %y, %labels {pipe.stage = 1 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %dy = nn.softmax_cross_entropy_grad %y, %labels {pipe.stage = 1 : i64, scale = 0.25 : f32} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %ddp = nn.matmul_grad_lhs %dy, %w1 {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %dw1 = nn.matmul_grad_rhs %dy, %dp {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %dbn = nn.dropout_grad %ddp {mask_id = 7 : i64, ratio = 5.000000e-01 : f32, pipe.stage = 1 : i64} : tensor<4x8xf32>
  %din = nn.batch_norm_grad_input %dbn, %in1, %s, %gamma {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %dgamma = nn.batch_norm_grad_scale %dbn, %in1, %s {pipe.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<8xf32>
  pipe.send %din to 0 tag 1 {pipe.stage = 1 : i64} : tensor<4x8xf32>
  %g = pipe.recv from 1 tag 1 {pipe.stage = 0 : i64} : tensor<4x8xf32>
  %gd = nn.dropout_grad %g {mask_id = 3 : i64, ratio = 5.000000e-01 : f32, pipe.stage = 0 : i64} : tensor<4x8xf32>
  %dr = nn.relu_grad %gd, %r0 {pipe.stage = 0 : i64} : tensor<4x8xf32>
  %dw0 = nn.matmul_grad_rhs %dr, %x {pipe.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  nn.sgd_update %w0, %dw0 {lr = 0.1 : f32, pipe.stage = 0 : i64} : tensor<8x8xf32>
  nn.sgd_update %w1, %dw1 {lr = 0.1 : f32, pipe.stage = 1 : i64} : tensor<8x8xf32>
  nn.sgd_update %gamma, %dgamma {lr = 0.1 : f32, pipe.stage = 1 : i64} : tensor<8xf32>
  return %loss, %y : tensor<f32>, tensor<4x8xf32>
}
}
