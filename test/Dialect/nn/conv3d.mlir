// RUN: dpc-opt %s | dpc-opt | FileCheck %s
// RUN: dpc-opt %s -mlir-print-op-generic | dpc-opt | FileCheck %s

// nn.conv3d, its gradients (the bias's is conv2d_grad_bias over a rank-5
// result_grad) and nn.conv_transpose3d.

// CHECK-LABEL: func.func @conv3d
// CHECK: nn.conv3d %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 2, 1>, groups = 2 : i64, pads = array<i64: 1, 2, 1, 1, 2, 0>, strides = array<i64: 2, 1, 1>} : (tensor<2x4x5x6x7xf32>, tensor<6x2x3x3x3xf32>, tensor<6xf32>) -> tensor<2x6x3x6x6xf32>
// CHECK: nn.conv3d_grad_input %{{.*}}, %{{.*}} {dilations = array<i64: 1, 2, 1>, groups = 2 : i64, pads = array<i64: 1, 2, 1, 1, 2, 0>, strides = array<i64: 2, 1, 1>} : (tensor<2x6x3x6x6xf32>, tensor<6x2x3x3x3xf32>) -> tensor<2x4x5x6x7xf32>
// CHECK: nn.conv3d_grad_filter %{{.*}}, %{{.*}} {dilations = array<i64: 1, 2, 1>, groups = 2 : i64, pads = array<i64: 1, 2, 1, 1, 2, 0>, strides = array<i64: 2, 1, 1>} : (tensor<2x6x3x6x6xf32>, tensor<2x4x5x6x7xf32>) -> tensor<6x2x3x3x3xf32>
// CHECK: nn.conv2d_grad_bias %{{.*}} : (tensor<2x6x3x6x6xf32>) -> tensor<6xf32>
// CHECK: nn.conv_transpose3d %{{.*}}, %{{.*}} {output_padding = array<i64: 1, 0, 0>, pads = array<i64: 0, 1, 1, 0, 1, 1>, strides = array<i64: 2, 1, 1>} : (tensor<1x2x3x4x4xf32>, tensor<2x3x2x3x3xf32>) -> tensor<1x3x7x4x4xf32>
func.func @conv3d(%x: tensor<2x4x5x6x7xf32>, %w: tensor<6x2x3x3x3xf32>,
                  %b: tensor<6xf32>, %t: tensor<1x2x3x4x4xf32>,
                  %f: tensor<2x3x2x3x3xf32>)
    -> (tensor<2x4x5x6x7xf32>, tensor<6x2x3x3x3xf32>, tensor<6xf32>,
        tensor<1x3x7x4x4xf32>) {
  // Depth (5 + 2 - 3) / 2 + 1 = 3, height 6 + 4 - 5 + 1 = 6, width
  // 7 + 1 - 3 + 1 = 6.
  %y = nn.conv3d %x, %w, %b {strides = array<i64: 2, 1, 1>,
      pads = array<i64: 1, 2, 1, 1, 2, 0>, dilations = array<i64: 1, 2, 1>,
      groups = 2}
      : (tensor<2x4x5x6x7xf32>, tensor<6x2x3x3x3xf32>, tensor<6xf32>)
      -> tensor<2x6x3x6x6xf32>
  %dx = nn.conv3d_grad_input %y, %w {strides = array<i64: 2, 1, 1>,
      pads = array<i64: 1, 2, 1, 1, 2, 0>, dilations = array<i64: 1, 2, 1>,
      groups = 2}
      : (tensor<2x6x3x6x6xf32>, tensor<6x2x3x3x3xf32>) -> tensor<2x4x5x6x7xf32>
  %dw = nn.conv3d_grad_filter %y, %x {strides = array<i64: 2, 1, 1>,
      pads = array<i64: 1, 2, 1, 1, 2, 0>, dilations = array<i64: 1, 2, 1>,
      groups = 2}
      : (tensor<2x6x3x6x6xf32>, tensor<2x4x5x6x7xf32>) -> tensor<6x2x3x3x3xf32>
  %db = nn.conv2d_grad_bias %y : (tensor<2x6x3x6x6xf32>) -> tensor<6xf32>
  // Depth (3 - 1) * 2 + 2 + 1 = 7, height and width 3 - 2 + 3 = 4.
  %u = nn.conv_transpose3d %t, %f {strides = array<i64: 2, 1, 1>,
      pads = array<i64: 0, 1, 1, 0, 1, 1>, output_padding = array<i64: 1, 0, 0>}
      : (tensor<1x2x3x4x4xf32>, tensor<2x3x2x3x3xf32>) -> tensor<1x3x7x4x4xf32>
  return %dx, %dw, %db, %u
      : tensor<2x4x5x6x7xf32>, tensor<6x2x3x3x3xf32>, tensor<6xf32>,
        tensor<1x3x7x4x4xf32>
}
