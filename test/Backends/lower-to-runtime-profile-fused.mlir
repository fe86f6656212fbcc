// RUN: dpc-opt %s --dpc-lower-to-runtime=profile=true | FileCheck %s

// A timing build times a fused region as the one call it is, for each node
// of its ops: an entry per node, all begun before the call and ended after
// it, with the node's share of the time by the analytic costs of its ops
// (bias 1 ms, act 3 ms: a quarter and three quarters).
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<4x20xf32>
    %b = nn.param "b" : tensor<20xf32>
    %y = nn.fused %x, %b {nn.node = "act"} : (tensor<4x20xf32>, tensor<20xf32>) -> tensor<4x20xf32> {
    ^bb0(%a: tensor<4x20xf32>, %c: tensor<20xf32>):
      %s = nn.add %a, %c {nn.cost = {time_ms = 1.0 : f64}, nn.node = "bias"} : (tensor<4x20xf32>, tensor<20xf32>) -> tensor<4x20xf32>
      %t = nn.tanh %s {nn.cost = {time_ms = 3.0 : f64}, nn.node = "act"} : tensor<4x20xf32>
      nn.yield %t : tensor<4x20xf32>
    }
    pipe.stash %y key "y" : tensor<4x20xf32>
    return
  }
}

// CHECK-LABEL: llvm.func @dpc_segment_forward(
// CHECK: llvm.call @dpc_profile_begin
// CHECK: llvm.call @dpc_profile_begin
// CHECK-NOT: dpc_profile_end
// CHECK: llvm.call @dpc_fused
// CHECK: llvm.call @dpc_profile_end
// CHECK: llvm.call @dpc_profile_end
// CHECK: llvm.mlir.global external constant @dpc_rank_manifest
// CHECK-SAME: \22profile\22:[{\22id\22:0,\22node\22:\22bias\22,\22phase\22:\22forward\22,\22share\22:0.25},{\22id\22:1,\22node\22:\22act\22,\22phase\22:\22forward\22,\22share\22:0.75}]
