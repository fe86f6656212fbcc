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
