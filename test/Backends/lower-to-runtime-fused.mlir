// RUN: dpc-opt %s --dpc-lower-to-runtime | FileCheck %s

// An nn.fused region becomes one call of a kernel generated in the rank
// object: a loop over the result's elements whose body loads each input once,
// computes the region's ops in registers (tanh by a polynomial, no call) and
// stores the result; nothing is allocated for the values inside the region.
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<4x20xf32>
    %b = nn.param "b" : tensor<20xf32>
    %y = nn.fused %x, %b : (tensor<4x20xf32>, tensor<20xf32>) -> tensor<4x20xf32> {
    ^bb0(%a: tensor<4x20xf32>, %c: tensor<20xf32>):
      %s = nn.add %a, %c : (tensor<4x20xf32>, tensor<20xf32>) -> tensor<4x20xf32>
      %t = nn.tanh %s : tensor<4x20xf32>
      nn.yield %t : tensor<4x20xf32>
    }
    pipe.stash %y key "y" : tensor<4x20xf32>
    %k = nn.param "k" : tensor<f32>
    %z = nn.fused %x, %k : (tensor<4x20xf32>, tensor<f32>) -> tensor<4x20xf32> {
    ^bb0(%a: tensor<4x20xf32>, %c: tensor<f32>):
      %m = nn.mul %a, %c : (tensor<4x20xf32>, tensor<f32>) -> tensor<4x20xf32>
      %r = nn.relu %m : tensor<4x20xf32>
      nn.yield %r : tensor<4x20xf32>
    }
    pipe.stash %z key "z" : tensor<4x20xf32>
    return
  }
}

// The segment calls each kernel with its inputs' pointers and the result's
// buffer, which is the only one allocated per region.
// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: %[[Y:.*]] = llvm.call @dpc_alloc(%{{.*}}, %{{.*}})
// CHECK: llvm.call @dpc_fused_0(%{{.*}}, %{{.*}}, %[[Y]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: llvm.mlir.constant
// CHECK-NEXT: llvm.call @dpc_stash
// CHECK: %[[Z:.*]] = llvm.call @dpc_alloc(%{{.*}}, %{{.*}})
// CHECK: llvm.call @dpc_fused_1(%{{.*}}, %{{.*}}, %[[Z]])
// CHECK-NOT: llvm.call @dpc_unary
// CHECK-NOT: llvm.call @dpc_binary
// CHECK: llvm.return

// The bias (20 floats a row) cannot be read as vectors of 8 at i % 20, so
// the first kernel is one scalar loop over the 80 elements: a load of x at
// i, of the bias at i % 20, the add, tanh's rational polynomial (no call),
// and a store at i. (The loop's constants follow the polynomial's.)
// CHECK-LABEL: llvm.func internal @dpc_fused_0(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr)
// CHECK: llvm.mlir.constant(-7.99881172 : f32)
// CHECK: %[[ROW:.*]] = llvm.mlir.constant(20 : index) : i64
// CHECK-NEXT: llvm.mlir.constant(1 : index) : i64
// CHECK-NEXT: %[[N:.*]] = llvm.mlir.constant(80 : index) : i64
// CHECK-NEXT: llvm.mlir.constant(0 : index) : i64
// CHECK-NEXT: llvm.br ^bb1
// CHECK-NEXT: ^bb1(%[[I:.*]]: i64):
// CHECK-NEXT: llvm.icmp "slt" %[[I]], %[[N]]
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.urem %[[I]], %[[ROW]]
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK-NOT: llvm.call
// CHECK: llvm.fdiv
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK-NOT: vector

// The scalar k broadcasts to every lane: 80 elements are 10 vectors of 8,
// with no scalar remainder loop.
// CHECK-LABEL: llvm.func internal @dpc_fused_1(
// CHECK-DAG: llvm.mlir.constant(80 : index) : i64
// CHECK-DAG: llvm.mlir.constant(8 : index) : i64
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<8xf32>
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.shufflevector
// CHECK: llvm.fmul %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: llvm.fcmp "olt" %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: llvm.select
// CHECK: llvm.store %{{.*}}, %{{.*}} : vector<8xf32>, !llvm.ptr
// CHECK-NOT: f32, !llvm.ptr
// CHECK: llvm.return
