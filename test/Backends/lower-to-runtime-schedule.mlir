// RUN: dpc-opt %s --dpc-verify-schedule --dpc-plan-memory --dpc-lower-to-runtime | FileCheck %s --implicit-check-not=pipe.schedule --implicit-check-not=pipe.program --implicit-check-not=pipe.inst

// A schedule program verified at compile time leaves nothing in the lowered
// module: only the LLVM dialect goes on to translation.
// CHECK: llvm.func @dpc_segment_forward
module attributes {pipe.num_stages = 1 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<4xf32>
    %y = nn.relu %x : tensor<4xf32>
    return
  }
  pipe.schedule "custom" ranks 1 microbatches 1 {
    pipe.program rank 0 {
      pipe.inst load mb 0
      pipe.inst forward mb 0
      pipe.inst stash mb 0
      pipe.inst restore mb 0
      pipe.inst backward mb 0
      pipe.inst free mb 0
    }
  }
}
