// RUN: dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 microbatches=4' | FileCheck %s

// A residual block: the skip connection crosses any cut inside the block,
// so the planner cuts between blocks, where one tensor crosses.

// CHECK: nn.matmul %arg0, {{.*}}pipe.stage = 0 : i64
// CHECK: nn.relu {{.*}}pipe.stage = 0 : i64
// CHECK: nn.matmul {{.*}}pipe.stage = 0 : i64
// CHECK: nn.add {{.*}}pipe.stage = 0 : i64
// CHECK: nn.matmul {{.*}}pipe.stage = 1 : i64
// CHECK: nn.relu {{.*}}pipe.stage = 1 : i64
// CHECK: nn.matmul {{.*}}pipe.stage = 1 : i64
// CHECK: nn.add {{.*}}pipe.stage = 1 : i64
func.func @main(%x: tensor<64x512xf32>) -> tensor<64x512xf32> {
  %w0 = nn.param "a0" : tensor<512x512xf32>
  %h0 = nn.matmul %x, %w0 : (tensor<64x512xf32>, tensor<512x512xf32>) -> tensor<64x512xf32>
  %r0 = nn.relu %h0 : tensor<64x512xf32>
  %w1 = nn.param "a1" : tensor<512x512xf32>
  %h1 = nn.matmul %r0, %w1 : (tensor<64x512xf32>, tensor<512x512xf32>) -> tensor<64x512xf32>
  %y0 = nn.add %h1, %x : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
  %w2 = nn.param "b0" : tensor<512x512xf32>
  %h2 = nn.matmul %y0, %w2 : (tensor<64x512xf32>, tensor<512x512xf32>) -> tensor<64x512xf32>
  %r2 = nn.relu %h2 : tensor<64x512xf32>
  %w3 = nn.param "b1" : tensor<512x512xf32>
  %h3 = nn.matmul %r2, %w3 : (tensor<64x512xf32>, tensor<512x512xf32>) -> tensor<64x512xf32>
  %y1 = nn.add %h3, %y0 : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
  return %y1 : tensor<64x512xf32>
}
