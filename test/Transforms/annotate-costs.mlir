// RUN: dpc-opt %s --dpc-annotate-costs | FileCheck %s
// RUN: dpc-opt %s --dpc-annotate-costs='peak-gflops=1000 memory-gbps=1' | FileCheck %s --check-prefix=MEMBOUND
// RUN: not dpc-opt %s --dpc-annotate-costs='peak-gflops=0' 2>&1 | FileCheck %s --check-prefix=BADRATE

// conv1 of LeNet-5 on 16 samples: 16*6*28*28 outputs of 25 multiply-adds
// each, plus the bias: 2*1881600 + 75264 = 3838464 flops, 7601664 for the
// input and filter gradients. It reads 50176 + 600 + 24 bytes and writes
// 301056. At 100 GFLOP/s and 20 GB/s it is compute bound: 0.0384 ms.

// CHECK-LABEL: func.func @lenet_head
func.func @lenet_head(%x: tensor<16x1x28x28xf32>) -> tensor<16x6x14x14xf32> {
  // Parameter reads do no work: no cost.
  // CHECK: nn.param "conv1.weight" : tensor<6x1x5x5xf32>
  %w = nn.param "conv1.weight" : tensor<6x1x5x5xf32>
  %b = nn.param "conv1.bias" : tensor<6xf32>
  // CHECK: nn.conv2d
  // CHECK-SAME: nn.cost = {activation_bytes = 301056 : i64, bytes = 351856 : i64, flops = 3838464 : i64, grad_time_ms = 0.0760166{{[0-9]*}} : f64, parameter_bytes = 624 : i64, time_ms = 0.0383846{{[0-9]*}} : f64}
  // MEMBOUND: nn.conv2d
  // MEMBOUND-SAME: time_ms = 3.518560e-01 : f64
  %c = nn.conv2d %x, %w, %b {pads = array<i64: 2, 2, 2, 2>}
      : (tensor<16x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>) -> tensor<16x6x28x28xf32>
  // relu: 75264 elements, one flop each; memory bound at 20 GB/s:
  // 602112 bytes -> 0.0301056 ms.
  // CHECK: nn.relu
  // CHECK-SAME: nn.cost = {activation_bytes = 301056 : i64, bytes = 602112 : i64, flops = 75264 : i64, grad_time_ms = 3.010560e-02 : f64, parameter_bytes = 0 : i64, time_ms = 3.010560e-02 : f64}
  %r = nn.relu %c : tensor<16x6x28x28xf32>
  // 2x2 windows over 16*6*14*14 outputs: 75264 comparisons.
  // CHECK: nn.max_pool2d
  // CHECK-SAME: flops = 75264 : i64
  %p = nn.max_pool2d %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<16x6x28x28xf32>) -> tensor<16x6x14x14xf32>
  // A reshape is a view: free in both directions.
  // CHECK: nn.reshape
  // CHECK-SAME: bytes = 0 : i64, flops = 0 : i64, grad_time_ms = 0.000000e+00 : f64
  %f = nn.reshape %p : (tensor<16x6x14x14xf32>) -> tensor<16x1176xf32>
  %u = nn.reshape %f : (tensor<16x1176xf32>) -> tensor<16x6x14x14xf32>
  return %u : tensor<16x6x14x14xf32>
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
