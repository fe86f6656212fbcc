// RUN: dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 microbatches=4' | FileCheck %s
// RUN: dpc-opt %s --dpc-annotate-costs --dpc-partition-stages='stages=2 microbatches=4' --dpc-autodiff='microbatches=4' --dpc-insert-send-recv | FileCheck %s --check-prefix=TRANSFER

// A parameter read on two stages (a tied weight) is owned by the first
// stage that reads it; a frozen one (a constant of the model) is copied
// onto every stage that reads it.
// CHECK-DAG: nn.param "tied" {pipe.stage = 0 : i64}
// CHECK-DAG: nn.param "half" {frozen, pipe.stage = 0 : i64}
// CHECK-DAG: nn.param "half" {frozen, pipe.stage = 1 : i64}
// CHECK-NOT: nn.param "tied"

// The owner sends the weight downstream with the forward pass and receives
// the gradient of the other read upstream; the two gradients are summed on
// the owner before its one update.
// TRANSFER: %[[W:.*]] = nn.param "tied" {pipe.stage = 0 : i64}
// TRANSFER-NEXT: pipe.send %[[W]] to 1 tag [[WTAG:[0-9]+]] {pipe.stage = 0 : i64} : tensor<256x256xf32>
// TRANSFER-NEXT: %[[WREMOTE:.*]] = pipe.recv from 0 tag [[WTAG]] {pipe.stage = 1 : i64} : tensor<256x256xf32>
// TRANSFER: nn.matmul %{{.*}}, %[[WREMOTE]] {{.*}}pipe.stage = 1
// TRANSFER: %[[GREMOTE:.*]] = nn.matmul_grad_rhs {{.*}}pipe.stage = 1 : i64} : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<256x256xf32>
// TRANSFER-NEXT: pipe.send %[[GREMOTE]] to 0 tag [[GTAG:[0-9]+]] {pipe.stage = 1 : i64}
// TRANSFER-NEXT: %[[GRECV:.*]] = pipe.recv from 1 tag [[GTAG]] {pipe.stage = 0 : i64} : tensor<256x256xf32>
// TRANSFER: %[[GLOCAL:.*]] = nn.matmul_grad_rhs {{.*}}pipe.stage = 0 : i64} : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<256x256xf32>
// TRANSFER-NEXT: %[[SUM:.*]] = nn.add %[[GRECV]], %[[GLOCAL]] {pipe.stage = 0 : i64}
// TRANSFER-NEXT: nn.sgd_update %[[W]], %[[SUM]] {{.*}}pipe.stage = 0 : i64
// TRANSFER-NOT: nn.sgd_update %[[WREMOTE]],
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x10xf32> {
  %w = nn.param "tied" : tensor<256x256xf32>
  %c = nn.param "half" {frozen} : tensor<f32>
  %m0 = nn.matmul %x, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %r0 = nn.relu %m0 : tensor<64x256xf32>
  %s0 = nn.mul %r0, %c : (tensor<64x256xf32>, tensor<f32>) -> tensor<64x256xf32>
  %m1 = nn.matmul %s0, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %r1 = nn.relu %m1 : tensor<64x256xf32>
  %s1 = nn.mul %r1, %c : (tensor<64x256xf32>, tensor<f32>) -> tensor<64x256xf32>
  %wo = nn.param "out" : tensor<256x10xf32>
  %o = nn.matmul %s1, %wo : (tensor<64x256xf32>, tensor<256x10xf32>) -> tensor<64x10xf32>
  return %o : tensor<64x10xf32>
}
