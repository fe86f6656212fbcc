// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s -mlir-print-op-generic | dpc-opt | FileCheck %s

// CHECK-LABEL: func.func @resize
// CHECK: nn.resize %{{.*}} {mode = "linear", scales = array<f64: 2.000000e+00, 2.000000e+00>} : (tensor<2x3x5x7xf32>) -> tensor<2x3x10x14xf32>
// CHECK: nn.resize %{{.*}} {coordinates = "asymmetric", nearest_mode = "floor", scales = array<f64: 3.000000e+00>} : (tensor<2x3x5xf32>) -> tensor<2x3x15xf32>
// CHECK: nn.resize %{{.*}} {coordinates = "align_corners", mode = "linear", scales = array<f64: 0.000000e+00, 0.000000e+00, 5.000000e-01>} : (tensor<1x2x3x4x6xf32>) -> tensor<1x2x5x2x3xf32>
// CHECK: nn.resize %{{.*}} {scales = array<f64: 6.000000e-01, 6.000000e-01>} : (tensor<1x1x4x6xf32>) -> tensor<1x1x2x3xf32>
// CHECK: nn.resize_grad %{{.*}} {mode = "linear", scales = array<f64: 2.000000e+00, 2.000000e+00>} : (tensor<2x3x10x14xf32>) -> tensor<2x3x5x7xf32>
func.func @resize(%x: tensor<2x3x5x7xf32>, %s: tensor<2x3x5xf32>,
                  %v: tensor<1x2x3x4x6xf32>, %d: tensor<1x1x4x6xf32>)
    -> tensor<2x3x5x7xf32> {
  %y = nn.resize %x {coordinates = "half_pixel", mode = "linear",
                     scales = array<f64: 2.0, 2.0>}
      : (tensor<2x3x5x7xf32>) -> tensor<2x3x10x14xf32>
  %n = nn.resize %s {coordinates = "asymmetric", nearest_mode = "floor",
                     scales = array<f64: 3.0>}
      : (tensor<2x3x5xf32>) -> tensor<2x3x15xf32>
  // Scales of 0: the sizes are the result's.
  %t = nn.resize %v {coordinates = "align_corners", mode = "linear",
                     scales = array<f64: 0.0, 0.0, 0.5>}
      : (tensor<1x2x3x4x6xf32>) -> tensor<1x2x5x2x3xf32>
  // floor(4 * 0.6) = 2, floor(6 * 0.6) = 3. ONNX's defaults (nearest,
  // half_pixel, round_prefer_floor) are not printed.
  %e = nn.resize %d {mode = "nearest", scales = array<f64: 0.6, 0.6>}
      : (tensor<1x1x4x6xf32>) -> tensor<1x1x2x3xf32>
  %dx = nn.resize_grad %y {coordinates = "half_pixel", mode = "linear",
                           scales = array<f64: 2.0, 2.0>}
      : (tensor<2x3x10x14xf32>) -> tensor<2x3x5x7xf32>
  return %dx : tensor<2x3x5x7xf32>
}
