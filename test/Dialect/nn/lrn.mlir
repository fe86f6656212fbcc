// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s -mlir-print-op-generic | dpc-opt | FileCheck %s

// ONNX's defaults (alpha 1e-4, beta 0.75, bias 1) are not printed; size has
// none.
// CHECK-LABEL: func.func @lrn
// CHECK: nn.lrn %{{.*}} {size = 5 : i64} : (tensor<2x7x4x3xf32>) -> tensor<2x7x4x3xf32>
// CHECK: nn.lrn %{{.*}} {alpha = 2.000000e-03 : f32, beta = 5.000000e-01 : f32, bias = 2.000000e+00 : f32, size = 2 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK: nn.lrn_grad %{{.*}}, %{{.*}} {size = 5 : i64} : (tensor<2x7x4x3xf32>, tensor<2x7x4x3xf32>) -> tensor<2x7x4x3xf32>
func.func @lrn(%x: tensor<2x7x4x3xf32>, %m: tensor<3x4xf32>)
    -> tensor<2x7x4x3xf32> {
  %y = nn.lrn %x {size = 5 : i64}
      : (tensor<2x7x4x3xf32>) -> tensor<2x7x4x3xf32>
  %z = nn.lrn %m {size = 2 : i64, alpha = 2.0e-3 : f32, beta = 0.5 : f32,
                  bias = 2.0 : f32}
      : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %dx = nn.lrn_grad %y, %x {size = 5 : i64}
      : (tensor<2x7x4x3xf32>, tensor<2x7x4x3xf32>) -> tensor<2x7x4x3xf32>
  return %dx : tensor<2x7x4x3xf32>
}
