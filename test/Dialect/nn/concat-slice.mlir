// RUN: dpc-opt %s | FileCheck %s
// RUN: dpc-opt %s --mlir-print-op-generic | dpc-opt | FileCheck %s
// Autodiff: each concat input's gradient is the slice of the result's
// gradient where it lies; a slice's gradient puts it back into zeros; clip's
// reads the input.
// RUN: dpc-opt %s --dpc-autodiff | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x6xf32>) -> tensor<4x10xf32> {
  %w = nn.param "w" : tensor<6x6xf32>
  %v = nn.param "v" : tensor<6x4xf32>
  %a = nn.matmul %x, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  %b = nn.matmul %x, %v : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  // CHECK: nn.clip %{{.*}} {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<4x6xf32>
  %c = nn.clip %a {min = 0.0 : f32, max = 6.0 : f32} : tensor<4x6xf32>
  // CHECK: nn.slice %{{.*}} {offsets = array<i64: 0, 1>, steps = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  %s = nn.slice %c {offsets = array<i64: 0, 1>, steps = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  // CHECK: nn.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x10xf32>
  %y = nn.concat %s, %b, %s {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}

// GRAD: %[[A:.*]] = nn.matmul
// GRAD: %[[C:.*]] = nn.clip %[[A]]
// GRAD: %[[Y:.*]] = nn.concat
// GRAD-DAG: %[[G2:.*]] = nn.slice %[[DY:.*]] {offsets = array<i64: 0, 7>, steps = array<i64: 1, 1>} : (tensor<4x10xf32>) -> tensor<4x3xf32>
// GRAD-DAG: %[[GB:.*]] = nn.slice %[[DY]] {offsets = array<i64: 0, 3>, steps = array<i64: 1, 1>} : (tensor<4x10xf32>) -> tensor<4x4xf32>
// GRAD-DAG: %[[G0:.*]] = nn.slice %[[DY]] {offsets = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<4x10xf32>) -> tensor<4x3xf32>
// GRAD: %[[DS:.*]] = nn.slice_grad %{{.*}} {offsets = array<i64: 0, 1>, steps = array<i64: 1, 2>} : (tensor<4x3xf32>) -> tensor<4x6xf32>
// GRAD: nn.clip_grad %[[DS]], %[[A]] {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<4x6xf32>

// CHECK-LABEL: func.func @pad
func.func @pad(%x: tensor<4x6xf32>) -> tensor<5x9xf32> {
  // CHECK: nn.pad %{{.*}} {pads = array<i64: 1, 2, 0, 1>, value = 0.000000e+00 : f32} : (tensor<4x6xf32>) -> tensor<5x9xf32>
  %y = nn.pad %x {pads = array<i64: 1, 2, 0, 1>, value = 0.0 : f32} : (tensor<4x6xf32>) -> tensor<5x9xf32>
  return %y : tensor<5x9xf32>
}
