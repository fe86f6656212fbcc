// RUN: dpc-opt %s --dpc-annotate-costs | FileCheck %s

// A bf16 build (pipe.precision) computes its convolutions and matmuls in
// bf16: annotate-costs divides their compute bound by kBf16Speedup (1.85,
// measured on ResNet-18's convolutions) and adds converting their f32
// operands to bf16 (6 bytes an element read and written) at the memory
// rate. LeNet-5's conv1 on 16 samples (annotate-costs.mlir: 3838464 flops
// on 6 of a block's 16 channels, 0.103159 ms in f32): 3838464 x 16/6 /
// 185 GFLOP/s = 0.0553292 ms, above its 351856 bytes at 20 GB/s (0.0175928
// ms), plus 1.5 x (50176 + 600 + 24) operand bytes at 20 GB/s (0.00381 ms)
// and the 0.0008 ms of a oneDNN call: 0.0599392 ms. Its gradients: 2 x the
// flops (0.1095735 ms), twice the conversion and two calls (the input is
// the model's, so no input gradient): 0.1187935 ms.

module attributes {pipe.precision = "bf16"} {
  // CHECK-LABEL: func.func @lenet_head
  func.func @lenet_head(%x: tensor<16x1x28x28xf32>) -> tensor<16x6x28x28xf32> {
    %w = nn.param "conv1.weight" : tensor<6x1x5x5xf32>
    %b = nn.param "conv1.bias" : tensor<6xf32>
    // CHECK: nn.conv2d
    // CHECK-SAME: grad_time_ms = 0.1187935{{[0-9]*}} : f64
    // CHECK-SAME: time_ms = 0.0599392{{[0-9]*}} : f64
    %c = nn.conv2d %x, %w, %b {pads = array<i64: 2, 2, 2, 2>}
        : (tensor<16x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>) -> tensor<16x6x28x28xf32>
    // Elementwise ops stay f32: relu as in annotate-costs.mlir.
    // CHECK: nn.relu
    // CHECK-SAME: grad_time_ms = 3.130560e-02 : f64, parameter_bytes = 0 : i64, time_ms = 3.130560e-02 : f64
    %r = nn.relu %c : tensor<16x6x28x28xf32>
    return %r : tensor<16x6x28x28xf32>
  }
}
