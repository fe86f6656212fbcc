// RUN: dpc-opt %s | FileCheck %s
// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s --mlir-print-op-generic | dpc-opt | FileCheck %s

// Stage 0 of a two-stage pipeline: forward sends the activation, backward
// receives its gradient and restores what the forward stashed.

// CHECK-LABEL: func.func @stage0_forward
func.func @stage0_forward(%x: tensor<16x1x28x28xf32>) {
  %w = nn.param "conv1.weight" {pipe.stage = 0 : i64} : tensor<6x1x5x5xf32>
  %y = nn.conv2d %x, %w {pipe.stage = 0 : i64}
      : (tensor<16x1x28x28xf32>, tensor<6x1x5x5xf32>) -> tensor<16x6x24x24xf32>
  // CHECK: pipe.stash %{{.*}} key "conv1.input" : tensor<16x1x28x28xf32>
  pipe.stash %x key "conv1.input" : tensor<16x1x28x28xf32>
  // CHECK: pipe.send %{{.*}} to 1 tag 0 {pipe.stage = 0 : i64} : tensor<16x6x24x24xf32>
  pipe.send %y to 1 tag 0 {pipe.stage = 0 : i64} : tensor<16x6x24x24xf32>
  return
}

// CHECK-LABEL: func.func @stage0_backward
func.func @stage0_backward() -> tensor<6x1x5x5xf32> {
  // CHECK: %[[DY:.*]] = pipe.recv from 1 tag 1 : tensor<16x6x24x24xf32>
  %dy = pipe.recv from 1 tag 1 : tensor<16x6x24x24xf32>
  // CHECK: %[[X:.*]] = pipe.restore key "conv1.input" : tensor<16x1x28x28xf32>
  %x = pipe.restore key "conv1.input" : tensor<16x1x28x28xf32>
  %dw = nn.conv2d_grad_filter %dy, %x
      : (tensor<16x6x24x24xf32>, tensor<16x1x28x28xf32>) -> tensor<6x1x5x5xf32>
  // CHECK: pipe.allreduce %{{.*}} "mean" : tensor<6x1x5x5xf32>
  %g = pipe.allreduce %dw "mean" : tensor<6x1x5x5xf32>
  // CHECK: pipe.allreduce %{{.*}} "sum" : tensor<6x1x5x5xf32>
  %s = pipe.allreduce %g "sum" : tensor<6x1x5x5xf32>
  return %s : tensor<6x1x5x5xf32>
}

// Segment functions after outline-stages.
// CHECK-LABEL: func.func @stage1_forward
// CHECK-SAME: attributes {pipe.segment = "forward", pipe.stage = 1 : i64}
func.func @stage1_forward() attributes {pipe.segment = "forward", pipe.stage = 1 : i64} {
  // CHECK: %[[X:.*]] = pipe.input 0 : tensor<4x8xf32>
  %x = pipe.input 0 : tensor<4x8xf32>
  // CHECK: %[[Y:.*]] = pipe.labels : tensor<4xi64>
  %y = pipe.labels : tensor<4xi64>
  %loss = nn.softmax_cross_entropy %x, %y : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  // CHECK: pipe.report_loss %{{.*}} : tensor<f32>
  pipe.report_loss %loss : tensor<f32>
  // CHECK: pipe.report_output %[[X]] : tensor<4x8xf32>
  pipe.report_output %x : tensor<4x8xf32>
  return
}

// The last stage of a regression (--loss mse) reads float targets.
// CHECK-LABEL: func.func @stage1_forward_mse
func.func @stage1_forward_mse() attributes {pipe.segment = "forward", pipe.stage = 1 : i64} {
  %x = pipe.input 0 : tensor<4x8xf32>
  // CHECK: %[[T:.*]] = pipe.labels : tensor<4x8xf32>
  %t = pipe.labels : tensor<4x8xf32>
  // CHECK: nn.mse_loss %{{.*}}, %[[T]]
  %loss = nn.mse_loss %x, %t {scale = 0.03125 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  pipe.report_loss %loss : tensor<f32>
  return
}

// CHECK-LABEL: func.func @stage1_optimizer
func.func @stage1_optimizer(%g: tensor<8xf32>) {
  %w = nn.param "w" : tensor<8xf32>
  // CHECK: pipe.accumulate_grad %{{.*}}, %{{.*}} : tensor<8xf32>
  pipe.accumulate_grad %w, %g : tensor<8xf32>
  // CHECK: pipe.accumulated_grad %{{.*}} : tensor<8xf32>
  %acc = pipe.accumulated_grad %w : tensor<8xf32>
  nn.sgd_update %w, %acc {lr = 0.1 : f32} : tensor<8xf32>
  return
}
