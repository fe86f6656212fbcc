// RUN: dpc-opt %s -split-input-file -verify-diagnostics --dpc-lower-to-runtime | FileCheck %s

// Rank 0 of an interleaved pipeline of 2 ranks x 2 chunks holds virtual
// stages 0 and 2. Each chunk's segments become private functions and the
// ABI's segment functions dispatch on dpc_chunk; the manifest says which
// stage every transfer and stash belongs to.
module attributes {pipe.num_stages = 4 : i64, pipe.chunks = 2 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<4x8xf32>
    %r = nn.relu %x : tensor<4x8xf32>
    pipe.send %r to 1 tag 0 : tensor<4x8xf32>
    return
  }
  func.func @stage2_forward() attributes {pipe.segment = "forward", pipe.stage = 2 : i64} {
    %h = pipe.recv from 1 tag 1 : tensor<4x8xf32>
    pipe.stash %h key "h" : tensor<4x8xf32>
    %r = nn.relu %h : tensor<4x8xf32>
    pipe.send %r to 3 tag 2 : tensor<4x8xf32>
    return
  }
  func.func @stage2_backward() attributes {pipe.segment = "backward", pipe.stage = 2 : i64} {
    %h = pipe.restore key "h" : tensor<4x8xf32>
    %dy = pipe.recv from 3 tag 3 : tensor<4x8xf32>
    %dx = nn.relu_grad %dy, %h : tensor<4x8xf32>
    pipe.send %dx to 1 tag 4 : tensor<4x8xf32>
    return
  }
}

// CHECK: llvm.func internal @dpc_chunk0_forward(
// CHECK: llvm.func internal @dpc_chunk1_forward(
// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr)
// CHECK: %[[CHUNK:.*]] = llvm.call @dpc_chunk(%[[CTX]]) : (!llvm.ptr) -> i64
// CHECK: llvm.switch %[[CHUNK]] : i64, ^[[DONE:.*]] [
// CHECK-NEXT: 0: ^[[C0:[a-z0-9]+]],
// CHECK-NEXT: 1: ^[[C1:[a-z0-9]+]]
// CHECK: ^[[C0]]:
// CHECK-NEXT: llvm.call @dpc_chunk0_forward(%[[CTX]])
// CHECK: ^[[C1]]:
// CHECK-NEXT: llvm.call @dpc_chunk1_forward(%[[CTX]])
// CHECK: llvm.func internal @dpc_chunk0_backward(
// CHECK: llvm.func internal @dpc_chunk1_backward(
// CHECK: llvm.call @dpc_relu_grad
// CHECK-LABEL: llvm.func @dpc_segment_backward(
// CHECK-LABEL: llvm.func @dpc_segment_optimizer(
// CHECK: llvm.mlir.global external constant @dpc_rank_manifest
// CHECK-SAME: \22chunks\22:2
// CHECK-SAME: \22rank\22:0
// CHECK-SAME: \22recvs\22:[{\22bytes\22:128,\22peer_stage\22:1,\22stage\22:2,\22tag\22:1,\22what\22:\22act\22},{\22bytes\22:128,\22peer_stage\22:3,\22stage\22:2,\22tag\22:3,\22what\22:\22grad\22}]
// CHECK-SAME: \22sends\22:[{\22bytes\22:128,\22peer_stage\22:1,\22stage\22:0,\22tag\22:0,\22what\22:\22act\22},{\22bytes\22:128,\22peer_stage\22:3,\22stage\22:2,\22tag\22:2,\22what\22:\22act\22},{\22bytes\22:128,\22peer_stage\22:1,\22stage\22:2,\22tag\22:4,\22what\22:\22grad\22}]
// CHECK-SAME: \22stage\22:0,\22stages\22:2
// CHECK-SAME: \22stashes\22:[{\22bytes\22:128,\22key\22:0,\22name\22:\22h\22,\22stage\22:2}]

// -----

// A rank's chunks are r, r + ranks, ...: stage 1 is not rank 0's second
// chunk.
// expected-error @+1 {{expects chunk 1 of rank 0 to be stage 2, found stage 1}}
module attributes {pipe.num_stages = 4 : i64, pipe.chunks = 2 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    return
  }
  func.func @stage1_forward() attributes {pipe.segment = "forward", pipe.stage = 1 : i64} {
    return
  }
}

// -----

// expected-error @+1 {{expects the segments of one rank: 2 chunk(s) of a 4-stage pipeline, found 1 stage(s)}}
module attributes {pipe.num_stages = 4 : i64, pipe.chunks = 2 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    return
  }
}
