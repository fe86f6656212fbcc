// RUN: dpc-opt %s -split-input-file --dpc-plan-memory --dpc-lower-to-runtime | FileCheck %s

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
// CHECK: llvm.call @dpc_input
// CHECK-NEXT: %[[OA:.*]] = llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[A:.*]] = llvm.getelementptr %[[ARENA]][%[[OA]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.call @dpc_relu(%{{.*}}, %[[A]], %{{.*}})
// CHECK: %[[OB:.*]] = llvm.mlir.constant(4096 : i64)
// CHECK-NEXT: %[[B:.*]] = llvm.getelementptr %[[ARENA]][%[[OB]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.call @dpc_relu(%[[A]], %[[B]], %{{.*}})
// CHECK: %[[C:.*]] = llvm.getelementptr %[[ARENA]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.call @dpc_relu(%[[B]], %[[C]], %{{.*}})
// CHECK-NOT: llvm.call @dpc_alloc
// CHECK: llvm.call @dpc_stash(%{{.*}}, %{{.*}}, %[[C]])

// -----

// Offsets past 2 GiB stay exact: two 4 GiB buffers live at once.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<1024x1024x1024xf32>
    %a = nn.relu %x : tensor<1024x1024x1024xf32>
    %b = nn.relu %a : tensor<1024x1024x1024xf32>
    pipe.stash %b key "b" : tensor<1024x1024x1024xf32>
    return
  }
}

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: llvm.mlir.constant(8589934592 : i64)
// CHECK: %[[FAR:.*]] = llvm.mlir.constant(4294967296 : i64)
// CHECK-NEXT: llvm.getelementptr %{{.*}}[%[[FAR]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
