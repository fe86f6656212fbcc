// RUN: dpc-opt %s --dpc-plan-memory --dpc-lower-to-runtime | FileCheck %s

// With a planned arena, a segment allocates once and addresses its buffers
// at their offsets.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<32x32xf32>
    %a = nn.relu %x : tensor<32x32xf32>
    %b = nn.relu %a : tensor<32x32xf32>
    %c = nn.relu %b : tensor<32x32xf32>
    pipe.stash %c key "c" : tensor<32x32xf32>
    return
  }
}

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(8192 : i64)
// CHECK: %[[ARENA:.*]] = llvm.call @dpc_alloc(%{{.*}}, %[[BYTES]])
// CHECK: %[[A:.*]] = llvm.getelementptr %[[ARENA]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.call @dpc_relu(%{{.*}}, %[[A]], %{{.*}})
// CHECK: %[[B:.*]] = llvm.getelementptr %[[ARENA]][4096] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.call @dpc_relu(%[[A]], %[[B]], %{{.*}})
// CHECK: %[[C:.*]] = llvm.getelementptr %[[ARENA]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.call @dpc_relu(%[[B]], %[[C]], %{{.*}})
// CHECK-NOT: llvm.call @dpc_alloc
// CHECK: llvm.call @dpc_stash(%{{.*}}, %{{.*}}, %[[C]])
