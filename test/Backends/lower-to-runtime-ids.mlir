// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s

// Slices, concats and transposes of int64 ids (#43) run the float kernels
// on the ids' 32-bit words: each shape gains a last dimension of 2 words,
// taken whole (offset 0, step 1, kept last by the permutation); buffers,
// stashes and transfers are sized by the element type (2 x 4 x 8 bytes).
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %ids = pipe.input 0 : tensor<2x8xi64>
    %src = nn.slice %ids {offsets = array<i64: 0, 2>, steps = array<i64: 1, 3>} : (tensor<2x8xi64>) -> tensor<2x2xi64>
    %both = nn.concat %src, %src {axis = 0 : i64} : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<4x2xi64>
    %t = nn.transpose %both {perm = array<i64: 1, 0>} : (tensor<4x2xi64>) -> tensor<2x4xi64>
    pipe.stash %t key "t" : tensor<2x4xi64>
    return
  }
}

// CHECK-DAG: @[[WHOLE:__dpc_const_[0-9]+]](dense<[2, 8, 2]> : tensor<3xi64>)
// CHECK-DAG: @[[BOX:__dpc_const_[0-9]+]](dense<2> : tensor<3xi64>)
// CHECK-DAG: @[[OFFSETS:__dpc_const_[0-9]+]](dense<[0, 2, 0]> : tensor<3xi64>)
// CHECK-DAG: @[[STEPS:__dpc_const_[0-9]+]](dense<[1, 3, 1]> : tensor<3xi64>)
// CHECK-DAG: @[[JOINED:__dpc_const_[0-9]+]](dense<[4, 2, 2]> : tensor<3xi64>)
// CHECK-DAG: @[[SECOND:__dpc_const_[0-9]+]](dense<[2, 0, 0]> : tensor<3xi64>)
// CHECK-DAG: @[[PERM:__dpc_const_[0-9]+]](dense<[1, 0, 2]> : tensor<3xi64>)
// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: llvm.mlir.addressof @[[WHOLE]]
// CHECK: llvm.mlir.addressof @[[BOX]]
// CHECK: %[[RANK:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK: llvm.mlir.addressof @[[OFFSETS]]
// CHECK: llvm.mlir.addressof @[[STEPS]]
// CHECK: llvm.call @dpc_slice(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[RANK]], %{{.*}}, %{{.*}})
// CHECK: llvm.mlir.addressof @[[JOINED]]
// CHECK: llvm.call @dpc_insert(
// CHECK: llvm.mlir.addressof @[[SECOND]]
// CHECK: llvm.call @dpc_insert(
// CHECK: llvm.mlir.addressof @[[JOINED]]
// CHECK: llvm.mlir.addressof @[[PERM]]
// CHECK: llvm.call @dpc_transpose(
// CHECK: \22stashes\22:[{\22bytes\22:64,
