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
