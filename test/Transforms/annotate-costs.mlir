// RUN: dpc-opt %s --dpc-annotate-costs | FileCheck %s
// RUN: dpc-opt %s --dpc-annotate-costs='peak-gflops=1000 memory-gbps=1' | FileCheck %s --check-prefix=MEMBOUND
// RUN: not dpc-opt %s --dpc-annotate-costs='peak-gflops=0' 2>&1 | FileCheck %s --check-prefix=BADRATE

// conv1 of LeNet-5 on 16 samples: 16*6*28*28 outputs of 25 multiply-adds
// each, plus the bias: 2*1881600 + 75264 = 3838464 flops, 7601664 for the
// input and filter gradients. It reads 50176 + 600 + 24 bytes and writes
// 301056. At 100 GFLOP/s and 20 GB/s it is compute bound, on 6 of oneDNN's
// 16-channel block (x 16/6): 0.1023590 ms, plus 0.0008 ms for the call:
// 0.1031590 ms. Its gradients (the input is the model's: no input
// gradient, so both halves write the filter's 6 channels): 0.2027110 ms
// and two calls, 0.2043110 ms.

// CHECK-LABEL: func.func @lenet_head
func.func @lenet_head(%x: tensor<16x1x28x28xf32>) -> tensor<16x6x14x14xf32> {
  // Parameter reads do no work: no cost.
  // CHECK: nn.param "conv1.weight" : tensor<6x1x5x5xf32>
  %w = nn.param "conv1.weight" : tensor<6x1x5x5xf32>
  %b = nn.param "conv1.bias" : tensor<6xf32>
  // CHECK: nn.conv2d
  // CHECK-SAME: nn.cost = {activation_bytes = 301056 : i64, bytes = 351856 : i64, call_ms = 8.000000e-04 : f64, flops = 3838464 : i64, grad_time_ms = 0.2043110{{[0-9]*}} : f64, parameter_bytes = 624 : i64, time_ms = 0.1031590{{[0-9]*}} : f64}
  // MEMBOUND: nn.conv2d
  // MEMBOUND-SAME: time_ms = 3.526560e-01 : f64
  %c = nn.conv2d %x, %w, %b {pads = array<i64: 2, 2, 2, 2>}
      : (tensor<16x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>) -> tensor<16x6x28x28xf32>
  // relu: 75264 elements, one flop each; memory bound at 20 GB/s:
  // 602112 bytes -> 0.0301056 ms, plus 0.0012 ms for the runtime's call.
  // CHECK: nn.relu
  // CHECK-SAME: nn.cost = {activation_bytes = 301056 : i64, bytes = 602112 : i64, call_ms = 1.200000e-03 : f64, flops = 75264 : i64, grad_time_ms = 3.130560e-02 : f64, parameter_bytes = 0 : i64, time_ms = 3.130560e-02 : f64}
  %r = nn.relu %c : tensor<16x6x28x28xf32>
  // 2x2 windows over 16*6*14*14 outputs: 75264 comparisons, which the
  // pooling loop takes 2.43 ns each for (0.1828915 ms, far above the
  // roofline's 0.0188 ms), forward and backward, plus the call.
  // CHECK: nn.max_pool2d
  // CHECK-SAME: flops = 75264 : i64, grad_time_ms = 0.1840915{{[0-9]*}} : f64, parameter_bytes = 0 : i64, time_ms = 0.1840915{{[0-9]*}} : f64
  %p = nn.max_pool2d %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<16x6x28x28xf32>) -> tensor<16x6x14x14xf32>
  // A reshape is a view: free in both directions, no call.
  // CHECK: nn.reshape
  // CHECK-SAME: bytes = 0 : i64, call_ms = 0.000000e+00 : f64, flops = 0 : i64, grad_time_ms = 0.000000e+00 : f64, parameter_bytes = 0 : i64, time_ms = 0.000000e+00 : f64
  %f = nn.reshape %p : (tensor<16x6x14x14xf32>) -> tensor<16x1176xf32>
  %u = nn.reshape %f : (tensor<16x1176xf32>) -> tensor<16x6x14x14xf32>
  return %u : tensor<16x6x14x14xf32>
}

// conv2 of LeNet-5 on a computed input: 16 output channels fill oneDNN's
// block, 7705600 flops at 100 GFLOP/s: 0.077056 ms, plus the call:
// 0.077856 ms. Its gradients, 4 x 3840000 + 25600 flops: the input
// gradient writes 6 channels (x 16/6), the filter gradient 16 (x 1), half
// the flops each (x 11/6 in all): 0.2820693 ms, and three calls (input,
// filter, bias): 0.2844693 ms.
// CHECK-LABEL: func.func @lenet_conv2
func.func @lenet_conv2(%x: tensor<16x6x14x14xf32>) -> tensor<16x16x10x10xf32> {
  %w = nn.param "conv2.weight" : tensor<16x6x5x5xf32>
  %b = nn.param "conv2.bias" : tensor<16xf32>
  %r = nn.relu %x : tensor<16x6x14x14xf32>
  // CHECK: nn.conv2d
  // CHECK-SAME: call_ms = 8.000000e-04 : f64, flops = 7705600 : i64, grad_time_ms = 0.2844693{{[0-9]*}} : f64, parameter_bytes = 9664 : i64, time_ms = 0.0778559{{[0-9]*}} : f64
  %c = nn.conv2d %r, %w, %b
      : (tensor<16x6x14x14xf32>, tensor<16x6x5x5xf32>, tensor<16xf32>) -> tensor<16x16x10x10xf32>
  return %c : tensor<16x16x10x10xf32>
}

// The gradient ops autodiff builds pay the same terms: conv1's filter
// gradient writes 6 channels (3763200 flops x 16/6 at 100 GFLOP/s:
// 0.100352 ms, plus the call), the input gradient of its pooling loops over the
// 75264 window elements (0.1828915 ms, plus the call).
// CHECK-LABEL: func.func @lenet_gradients
func.func @lenet_gradients(%dy: tensor<16x6x28x28xf32>, %x: tensor<16x1x28x28xf32>,
                           %dp: tensor<16x6x14x14xf32>, %r: tensor<16x6x28x28xf32>)
    -> (tensor<6x1x5x5xf32>, tensor<16x6x28x28xf32>) {
  // CHECK: nn.conv2d_grad_filter
  // CHECK-SAME: call_ms = 8.000000e-04 : f64, flops = 3763200 : i64, grad_time_ms = 0.000000e+00 : f64, parameter_bytes = 0 : i64, time_ms = 1.011520e-01 : f64
  %dw = nn.conv2d_grad_filter %dy, %x {pads = array<i64: 2, 2, 2, 2>}
      : (tensor<16x6x28x28xf32>, tensor<16x1x28x28xf32>) -> tensor<6x1x5x5xf32>
  // CHECK: nn.max_pool2d_grad
  // CHECK-SAME: call_ms = 1.200000e-03 : f64, flops = 18816 : i64, grad_time_ms = 0.000000e+00 : f64, parameter_bytes = 0 : i64, time_ms = 0.1840915{{[0-9]*}} : f64
  %dr = nn.max_pool2d_grad %dp, %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<16x6x14x14xf32>, tensor<16x6x28x28xf32>) -> tensor<16x6x28x28xf32>
  return %dw, %dr : tensor<6x1x5x5xf32>, tensor<16x6x28x28xf32>
}

// Ops of other dialects get no cost.
// CHECK-LABEL: func.func @other
func.func @other(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: tensor.empty() : tensor<4xf32>
  // CHECK-NOT: nn.cost
  %e = tensor.empty() : tensor<4xf32>
  return %e : tensor<4xf32>
}

// BADRATE: error: expects positive peak-gflops and memory-gbps pass options

// A layer norm over 16 x 28 rows of 32: 7 flops an element forward (two
// passes for the moments, normalize, scale, shift), 18 for its gradients,
// on oneDNN's kernels (0.8 us a call). Memory bound at 20 GB/s: 114944
// bytes -> 0.0057472 ms; its gradients read three times as much, and make
// a call for the scale and one for the bias (the input is the model's).
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<16x28x32xf32>, %dy: tensor<16x28x32xf32>)
    -> (tensor<16x28x32xf32>, tensor<16x28x32xf32>, tensor<32xf32>) {
  %g = nn.param "ln.scale" : tensor<32xf32>
  %b = nn.param "ln.bias" : tensor<32xf32>
  // CHECK: nn.layer_norm
  // CHECK-SAME: nn.cost = {activation_bytes = 57344 : i64, bytes = 114944 : i64, call_ms = 8.000000e-04 : f64, flops = 100352 : i64, grad_time_ms = 0.0188416{{[0-9]*}} : f64, parameter_bytes = 256 : i64, time_ms = 6.547200e-03 : f64}
  %y = nn.layer_norm %x scale %g bias %b
      : (tensor<16x28x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<16x28x32xf32>
  // The input gradient recomputes the moments and takes two sums: 11 flops
  // an element; the scale gradient 6. Gradient ops have no gradient cost.
  // CHECK: nn.layer_norm_grad_input
  // CHECK-SAME: nn.cost = {activation_bytes = 57344 : i64, bytes = 172160 : i64, call_ms = 8.000000e-04 : f64, flops = 157696 : i64, grad_time_ms = 0.000000e+00 : f64, parameter_bytes = 128 : i64, time_ms = 9.408000e-03 : f64}
  %dx = nn.layer_norm_grad_input %dy, %x scale %g
      : (tensor<16x28x32xf32>, tensor<16x28x32xf32>, tensor<32xf32>) -> tensor<16x28x32xf32>
  // CHECK: nn.layer_norm_grad_scale
  // CHECK-SAME: nn.cost = {activation_bytes = 128 : i64, bytes = 114816 : i64, call_ms = 8.000000e-04 : f64, flops = 86016 : i64, grad_time_ms = 0.000000e+00 : f64, parameter_bytes = 0 : i64, time_ms = 6.540800e-03 : f64}
  %dg = nn.layer_norm_grad_scale %dy, %x
      : (tensor<16x28x32xf32>, tensor<16x28x32xf32>) -> tensor<32xf32>
  return %y, %dx, %dg : tensor<16x28x32xf32>, tensor<16x28x32xf32>, tensor<32xf32>
}

// An LSTM layer of 16 units over 7 steps of 4 samples of 8 inputs: 448
// cells, 448 x 4 x (8 + 16) = 43008 multiply-adds and 30 flops a cell for
// the gates, 99456 flops. Its gradients: the products again twice, the
// recurrence backwards (2 x 448 x 64) and 40 flops a cell, 247296 flops,
// memory bound on three times its 18816 bytes (0.0028224 ms), and a call
// for each weight (w, r, bias): 0.0052224 ms.
// CHECK-LABEL: func.func @lstm
func.func @lstm(%x: tensor<7x4x8xf32>, %h0: tensor<4x16xf32>,
                %c0: tensor<4x16xf32>, %ds: tensor<7x4x96xf32>)
    -> (tensor<7x4x96xf32>, tensor<7x4x80xf32>) {
  %w = nn.param "lstm.w" : tensor<64x8xf32>
  %r = nn.param "lstm.r" : tensor<64x16xf32>
  %b = nn.param "lstm.b" : tensor<128xf32>
  // CHECK: nn.lstm
  // CHECK-SAME: nn.cost = {activation_bytes = 10752 : i64, bytes = 18816 : i64, call_ms = 8.000000e-04 : f64, flops = 99456 : i64, grad_time_ms = 5.222400e-03 : f64, parameter_bytes = 6656 : i64, time_ms = 0.00179456{{[0-9]*}} : f64}
  %s = nn.lstm %x, %w, %r bias %b initial %h0, %c0
      : (tensor<7x4x8xf32>, tensor<64x8xf32>, tensor<64x16xf32>,
         tensor<128xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
      -> tensor<7x4x96xf32>
  // The backward recurrence: dh[t-1] = z_grad[t] r per step (2 x 448 x 64
  // flops) and 40 flops a cell for the gate derivatives, 75264 flops.
  // CHECK: nn.lstm_grad
  // CHECK-SAME: nn.cost = {activation_bytes = 8960 : i64, bytes = 34816 : i64, call_ms = 8.000000e-04 : f64, flops = 75264 : i64, grad_time_ms = 0.000000e+00 : f64, parameter_bytes = 4096 : i64, time_ms = 0.00254079{{[0-9]*}} : f64}
  %g = nn.lstm_grad %ds, %s, %r, %c0
      : (tensor<7x4x96xf32>, tensor<7x4x96xf32>, tensor<64x16xf32>,
         tensor<4x16xf32>) -> tensor<7x4x80xf32>
  return %s, %g : tensor<7x4x96xf32>, tensor<7x4x80xf32>
}

// A linear resize of 4 x 8 x 14 x 14 by 2 reads the 4 neighbours of each of
// its 25088 outputs, 2 flops each: 200704 flops, and its gradient as many
// (on the model input: no call); a nearest one reads one.
// CHECK-LABEL: func.func @resize
func.func @resize(%x: tensor<4x8x14x14xf32>, %dy: tensor<4x8x28x28xf32>)
    -> (tensor<4x8x28x28xf32>, tensor<4x8x14x14xf32>) {
  // CHECK: nn.resize
  // CHECK-SAME: nn.cost = {activation_bytes = 100352 : i64, bytes = 125440 : i64, call_ms = 1.200000e-03 : f64, flops = 200704 : i64, grad_time_ms = 0.006272{{[0-9]*}} : f64, parameter_bytes = 0 : i64, time_ms = 7.472000e-03 : f64}
  %y = nn.resize %x {coordinates = "half_pixel", mode = "linear",
                     scales = array<f64: 2.0, 2.0>}
      : (tensor<4x8x14x14xf32>) -> tensor<4x8x28x28xf32>
  // CHECK: nn.resize_grad
  // CHECK-SAME: flops = 50176 : i64
  %dx = nn.resize_grad %dy {mode = "nearest", scales = array<f64: 2.0, 2.0>}
      : (tensor<4x8x28x28xf32>) -> tensor<4x8x14x14xf32>
  return %y, %dx : tensor<4x8x28x28xf32>, tensor<4x8x14x14xf32>
}
