// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s
// RUN: sed 's/pipe.precision = "bf16"/pipe.precision = "fp32"/' %s | dpc-opt --dpc-lower-to-runtime | FileCheck %s --check-prefix=FP32
// RUN: sed 's/pipe.precision = "bf16"/pipe.precision = "fp16"/' %s | not dpc-opt --dpc-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=BAD

// A bf16 build (dpc compile --precision bf16): convolutions and matmuls call
// the _bf16 kernels, the manifest says so, and f32 transfers travel as bf16
// while other element types travel as they are. An fp32 module lowers to
// the f32 kernels with neither mark.
module attributes {pipe.num_stages = 2 : i64, pipe.precision = "bf16"} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<2x1x8x8xf32>
    %ids = pipe.input 1 : tensor<2x4xi64>
    %w = nn.param "conv.weight" : tensor<3x1x3x3xf32>
    %y = nn.conv2d %x, %w : (tensor<2x1x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<2x3x6x6xf32>
    pipe.stash %x key "x" : tensor<2x1x8x8xf32>
    %f = nn.reshape %y : (tensor<2x3x6x6xf32>) -> tensor<2x108xf32>
    %v = nn.param "fc.weight" : tensor<108x5xf32>
    %m = nn.matmul %f, %v : (tensor<2x108xf32>, tensor<108x5xf32>) -> tensor<2x5xf32>
    pipe.send %m to 1 tag 0 : tensor<2x5xf32>
    pipe.send %ids to 1 tag 1 : tensor<2x4xi64>
    return
  }
  func.func @stage0_backward() attributes {pipe.segment = "backward", pipe.stage = 0 : i64} {
    %w = nn.param "conv.weight" : tensor<3x1x3x3xf32>
    %x = pipe.restore key "x" : tensor<2x1x8x8xf32>
    %dy = pipe.recv from 1 tag 2 : tensor<2x3x6x6xf32>
    %dx = nn.conv2d_grad_input %dy, %w : (tensor<2x3x6x6xf32>, tensor<3x1x3x3xf32>) -> tensor<2x1x8x8xf32>
    %dw = nn.conv2d_grad_filter %dy, %x : (tensor<2x3x6x6xf32>, tensor<2x1x8x8xf32>) -> tensor<3x1x3x3xf32>
    pipe.accumulate_grad %w, %dw : tensor<3x1x3x3xf32>
    return
  }
}

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: llvm.call @dpc_conv2d_bf16(
// CHECK: llvm.call @dpc_matmul_bf16(
// CHECK-LABEL: llvm.func @dpc_segment_backward(
// CHECK: llvm.call @dpc_conv2d_grad_input_bf16(
// CHECK: llvm.call @dpc_conv2d_grad_filter_bf16(
// CHECK: llvm.mlir.global external constant @dpc_rank_manifest(
// 2 x 5 f32 (40 bytes) as bf16; 2 x 4 i64 as they are; the 2x3x6x6
// gradient (864 bytes) as bf16.
// CHECK-SAME: \22precision\22:\22bf16\22
// CHECK-SAME: \22recvs\22:[{\22bytes\22:864,\22peer_stage\22:1,\22stage\22:0,\22tag\22:2,\22what\22:\22grad\22,\22wire\22:\22bf16\22}]
// CHECK-SAME: \22sends\22:[{\22bytes\22:40,\22peer_stage\22:1,\22stage\22:0,\22tag\22:0,\22what\22:\22act\22,\22wire\22:\22bf16\22},{\22bytes\22:64,\22peer_stage\22:1,\22stage\22:0,\22tag\22:1,\22what\22:\22act\22}]

// FP32-NOT: _bf16
// FP32-NOT: \22precision\22
// FP32-NOT: wire
// FP32: llvm.call @dpc_conv2d(
// FP32: llvm.call @dpc_matmul(
// FP32: llvm.call @dpc_conv2d_grad_input(
// FP32: llvm.call @dpc_conv2d_grad_filter(
// FP32-NOT: _bf16
// FP32-NOT: wire

// BAD: error: expects 'pipe.precision' to be "fp32" or "bf16" on a module
