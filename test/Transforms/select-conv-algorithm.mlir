// RUN: dpc-opt %s --dpc-select-conv-algorithm | FileCheck %s --check-prefix=AUTO
// RUN: dpc-opt %s --dpc-select-conv-algorithm=algorithm=winograd | FileCheck %s --check-prefix=WINO
// RUN: dpc-opt %s --dpc-select-conv-algorithm=algorithm=direct | FileCheck %s --check-prefix=DIRECT
// RUN: not dpc-opt %s --dpc-select-conv-algorithm=algorithm=fft 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// Auto takes Winograd for the 3x3, stride-1 layers with enough channels and
// output positions: 64 channels at 28x28 and 7x7, 16 channels at 16x16;
// not for 16 channels at 14x14, 32 at 4x4, a strided, grouped or 5x5 layer,
// nor pads of 2 (which the backend's Winograd kernels do not take).
// Forcing it reaches every layer it applies to; direct reaches none.

// AUTO-LABEL: func.func @main
// AUTO: nn.conv2d {{.*}}algorithm = "winograd"{{.*}} -> tensor<16x64x28x28xf32>
// AUTO: nn.conv2d {{.*}}algorithm = "winograd"{{.*}} -> tensor<16x64x7x7xf32>
// AUTO: nn.conv2d {{.*}}algorithm = "winograd"{{.*}} -> tensor<16x16x16x16xf32>
// AUTO: nn.conv2d
// AUTO-NOT: winograd
// AUTO-SAME: -> tensor<16x16x14x14xf32>
// AUTO: nn.conv2d
// AUTO-NOT: winograd
// AUTO-SAME: -> tensor<16x32x4x4xf32>
// AUTO: nn.conv2d
// AUTO-NOT: winograd
// AUTO-SAME: -> tensor<16x64x14x14xf32>
// AUTO: nn.conv2d
// AUTO-NOT: winograd
// AUTO-SAME: -> tensor<16x64x28x28xf32>
// AUTO: nn.conv2d
// AUTO-NOT: winograd
// AUTO-SAME: -> tensor<16x64x24x24xf32>
// AUTO: nn.conv2d
// AUTO-NOT: winograd
// AUTO-SAME: -> tensor<16x64x30x30xf32>

// WINO-LABEL: func.func @main
// WINO-COUNT-5: algorithm = "winograd"
// WINO-NOT: algorithm = "winograd"
// WINO: return

// DIRECT-LABEL: func.func @main
// DIRECT-NOT: winograd
// DIRECT: return
func.func @main(%x28: tensor<16x64x28x28xf32>, %x7: tensor<16x64x7x7xf32>,
                %x16: tensor<16x16x16x16xf32>, %x14: tensor<16x16x14x14xf32>,
                %x4: tensor<16x32x4x4xf32>) -> tensor<16x64x24x24xf32> {
  %w64 = nn.param "w64" : tensor<64x64x3x3xf32>
  %w16 = nn.param "w16" : tensor<16x16x3x3xf32>
  %w32 = nn.param "w32" : tensor<32x32x3x3xf32>
  %wg = nn.param "wg" : tensor<64x16x3x3xf32>
  %w5 = nn.param "w5" : tensor<64x64x5x5xf32>
  %a = nn.conv2d %x28, %w64 {pads = array<i64: 1, 1, 1, 1>} : (tensor<16x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x28x28xf32>
  %b = nn.conv2d %x7, %w64 {pads = array<i64: 1, 1, 1, 1>} : (tensor<16x64x7x7xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x7x7xf32>
  %c = nn.conv2d %x16, %w16 {pads = array<i64: 1, 1, 1, 1>} : (tensor<16x16x16x16xf32>, tensor<16x16x3x3xf32>) -> tensor<16x16x16x16xf32>
  %d = nn.conv2d %x14, %w16 {pads = array<i64: 1, 1, 1, 1>} : (tensor<16x16x14x14xf32>, tensor<16x16x3x3xf32>) -> tensor<16x16x14x14xf32>
  %e = nn.conv2d %x4, %w32 {pads = array<i64: 1, 1, 1, 1>} : (tensor<16x32x4x4xf32>, tensor<32x32x3x3xf32>) -> tensor<16x32x4x4xf32>
  %f = nn.conv2d %a, %w64 {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<16x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x14x14xf32>
  %g = nn.conv2d %a, %wg {pads = array<i64: 1, 1, 1, 1>, groups = 4} : (tensor<16x64x28x28xf32>, tensor<64x16x3x3xf32>) -> tensor<16x64x28x28xf32>
  %h = nn.conv2d %g, %w5 : (tensor<16x64x28x28xf32>, tensor<64x64x5x5xf32>) -> tensor<16x64x24x24xf32>
  %p = nn.conv2d %x28, %w64 {pads = array<i64: 2, 2, 2, 2>} : (tensor<16x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x30x30xf32>
  return %h : tensor<16x64x24x24xf32>
}

// UNKNOWN: unknown algorithm 'fft'; expected auto, winograd or direct
