// RUN: dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 microbatches=4' --dpc-autodiff | FileCheck %s

// After partitioning, each gradient op runs on the stage of the forward op it
// differentiates, the loss on the last stage, each update with its parameter.

// CHECK: nn.softmax_cross_entropy {{.*}}pipe.stage = 1 : i64
// CHECK: nn.softmax_cross_entropy_grad {{.*}}pipe.stage = 1 : i64
// CHECK: nn.relu_grad {{.*}}pipe.stage = 1 : i64
// CHECK: nn.matmul_grad_lhs {{.*}}pipe.stage = 1 : i64
// CHECK: nn.matmul_grad_rhs {{.*}}pipe.stage = 1 : i64
// CHECK: nn.relu_grad {{.*}}pipe.stage = 0 : i64
// CHECK-NOT: nn.matmul_grad_lhs
// CHECK: nn.matmul_grad_rhs {{.*}}pipe.stage = 0 : i64
// CHECK: nn.sgd_update %{{.*}}, %{{.*}} {{{.*}}pipe.stage = 0 : i64}
// CHECK: nn.sgd_update %{{.*}}, %{{.*}} {{{.*}}pipe.stage = 1 : i64}
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %w0 = nn.param "w0" : tensor<256x256xf32>
  %m0 = nn.matmul %x, %w0 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %r0 = nn.relu %m0 : tensor<64x256xf32>
  %w1 = nn.param "w1" : tensor<256x256xf32>
  %m1 = nn.matmul %r0, %w1 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %r1 = nn.relu %m1 : tensor<64x256xf32>
  return %r1 : tensor<64x256xf32>
}
