// RUN: dpc-opt %s --dpc-select-conv-algorithm | FileCheck %s
// RUN: dpc-opt %s --dpc-select-conv-algorithm=algorithm=winograd --verify-diagnostics

// A bf16 build runs its convolutions in bf16, which the Winograd kernels do
// not: auto leaves a layer direct that an f32 build would give Winograd
// (test/Transforms/select-conv-algorithm.mlir), and forcing Winograd is an
// error.

// CHECK-LABEL: func.func @main
// CHECK-NOT: winograd
// CHECK: return

// expected-error @+1 {{select-conv-algorithm: winograd convolutions are f32; a bf16 build runs direct bf16 convolutions}}
module attributes {pipe.precision = "bf16"} {
func.func @main(%x: tensor<16x64x28x28xf32>) -> tensor<16x64x28x28xf32> {
  %w = nn.param "w" : tensor<64x64x3x3xf32>
  %y = nn.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<16x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x28x28xf32>
  return %y : tensor<16x64x28x28xf32>
}
}
