// RUN: dpc-opt %s --split-input-file --dpc-select-conv-algorithm | FileCheck %s
// RUN: dpc-opt %s --split-input-file --dpc-select-conv-algorithm=algorithm=winograd --verify-diagnostics

// A bf16 build runs its convolutions in bf16, except where f32 Winograd is
// faster than bf16: auto gives Winograd to 64 channels at 28x28 outputs,
// and leaves direct the 64-channel 14x14 layer an f32 build would give
// Winograd (test/Transforms/select-conv-algorithm.mlir). Forcing Winograd
// on every layer is an error.

// CHECK-LABEL: func.func @large
// CHECK: nn.conv2d {{.*}}algorithm = "winograd"
// CHECK: return

// expected-error @+1 {{select-conv-algorithm: winograd convolutions are f32; a bf16 build takes them only where auto finds them faster than bf16}}
module attributes {pipe.precision = "bf16"} {
func.func @large(%x: tensor<16x64x28x28xf32>) -> tensor<16x64x28x28xf32> {
  %w = nn.param "w" : tensor<64x64x3x3xf32>
  %y = nn.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<16x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x28x28xf32>
  return %y : tensor<16x64x28x28xf32>
}
}

// -----

// CHECK-LABEL: func.func @small
// CHECK-NOT: winograd
// CHECK: return

// expected-error @+1 {{select-conv-algorithm: winograd convolutions are f32}}
module attributes {pipe.precision = "bf16"} {
func.func @small(%x: tensor<16x64x14x14xf32>) -> tensor<16x64x14x14xf32> {
  %w = nn.param "w" : tensor<64x64x3x3xf32>
  %y = nn.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<16x64x14x14xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x14x14xf32>
  return %y : tensor<16x64x14x14xf32>
}
}
