// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s
// RUN: sed 's/algorithm = "winograd", //' %s | dpc-opt --dpc-lower-to-runtime | FileCheck %s --check-prefix=DIRECT
// RUN: sed 's/pipe.num_stages = 1 : i64/&, pipe.precision = "bf16"/' %s | dpc-opt --dpc-lower-to-runtime | FileCheck %s
// RUN: sed -e 's/pipe.num_stages = 1 : i64/&, pipe.precision = "bf16"/' -e 's/algorithm = "winograd", //' %s | dpc-opt --dpc-lower-to-runtime | FileCheck %s --check-prefix=BF16

// Convolutions that select-conv-algorithm gave Winograd call the _winograd
// kernels, forward, input gradient and filter gradient; the same module
// without the attribute calls the direct ones. In a bf16 build too a
// Winograd layer calls the (f32) _winograd kernels, and a direct one the
// _bf16 kernels.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<2x32x8x8xf32>
    %w = nn.param "conv.weight" : tensor<32x32x3x3xf32>
    %b = nn.param "conv.bias" : tensor<32xf32>
    %y = nn.conv2d %x, %w, %b {algorithm = "winograd", pads = array<i64: 1, 1, 1, 1>} : (tensor<2x32x8x8xf32>, tensor<32x32x3x3xf32>, tensor<32xf32>) -> tensor<2x32x8x8xf32>
    pipe.stash %x key "x" : tensor<2x32x8x8xf32>
    pipe.stash %y key "y" : tensor<2x32x8x8xf32>
    return
  }
  func.func @stage0_backward() attributes {pipe.segment = "backward", pipe.stage = 0 : i64} {
    %w = nn.param "conv.weight" : tensor<32x32x3x3xf32>
    %x = pipe.restore key "x" : tensor<2x32x8x8xf32>
    %dy = pipe.restore key "y" : tensor<2x32x8x8xf32>
    %dx = nn.conv2d_grad_input %dy, %w {algorithm = "winograd", pads = array<i64: 1, 1, 1, 1>} : (tensor<2x32x8x8xf32>, tensor<32x32x3x3xf32>) -> tensor<2x32x8x8xf32>
    %dw = nn.conv2d_grad_filter %dy, %x {algorithm = "winograd", pads = array<i64: 1, 1, 1, 1>} : (tensor<2x32x8x8xf32>, tensor<2x32x8x8xf32>) -> tensor<32x32x3x3xf32>
    pipe.accumulate_grad %w, %dw : tensor<32x32x3x3xf32>
    pipe.stash %dx key "dx" : tensor<2x32x8x8xf32>
    return
  }
}

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: llvm.call @dpc_conv2d_winograd(
// CHECK-LABEL: llvm.func @dpc_segment_backward(
// CHECK: llvm.call @dpc_conv2d_grad_input_winograd(
// CHECK: llvm.call @dpc_conv2d_grad_filter_winograd(

// DIRECT-NOT: winograd
// DIRECT: llvm.call @dpc_conv2d(
// DIRECT: llvm.call @dpc_conv2d_grad_input(
// DIRECT: llvm.call @dpc_conv2d_grad_filter(

// BF16-NOT: winograd
// BF16: llvm.call @dpc_conv2d_bf16(
// BF16: llvm.call @dpc_conv2d_grad_input_bf16(
// BF16: llvm.call @dpc_conv2d_grad_filter_bf16(
