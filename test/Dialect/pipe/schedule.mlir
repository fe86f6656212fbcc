// RUN: dpc-opt %s -split-input-file | FileCheck %s
// RUN: dpc-opt %s -split-input-file | dpc-opt -split-input-file | FileCheck %s
// RUN: dpc-opt %s -split-input-file --mlir-print-op-generic | dpc-opt -split-input-file | FileCheck %s

// A gpipe step of two ranks and one microbatch, with the sizes of each
// stage and of every stash and message.

// CHECK-LABEL: pipe.schedule "gpipe" ranks 2 microbatches 1
// CHECK-SAME: stages [#pipe.stage<forward_ms = 2.000000e+00, backward_input_ms = 5.000000e-01, param_bytes = 4096, activation_bytes = 512, output_bytes = 256>, #pipe.stage<>]
// CHECK-NEXT: pipe.program rank 0 {
// CHECK-NEXT:   pipe.inst load mb 0
// CHECK-NEXT:   pipe.inst forward mb 0
// CHECK-NEXT:   pipe.inst stash mb 0 bytes 512
// CHECK-NEXT:   pipe.inst send_start act mb 0 peer 1 tag 0 bytes 256
// CHECK-NEXT:   pipe.inst recv_start grad mb 0 peer 1 tag 1 bytes 256
// CHECK-NEXT:   pipe.inst send_finish act mb 0 peer 1 tag 0 bytes 256
// CHECK-NEXT:   pipe.inst recv_finish grad mb 0 peer 1 tag 1 bytes 256
// CHECK-NEXT:   pipe.inst restore mb 0
// CHECK-NEXT:   pipe.inst backward mb 0
// CHECK-NEXT:   pipe.inst free mb 0
// CHECK-NEXT:   pipe.inst optimizer_step
// CHECK-NEXT: }
// CHECK-NEXT: pipe.program rank 1 {
// CHECK:        pipe.inst send_start grad mb 0 peer 0 tag 1 bytes 256
pipe.schedule "gpipe" ranks 2 microbatches 1
    stages [#pipe.stage<forward_ms = 2.0, backward_input_ms = 0.5, param_bytes = 4096,
                        activation_bytes = 512, output_bytes = 256>,
            #pipe.stage<>] {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0 bytes 512
    pipe.inst send_start act mb 0 peer 1 tag 0 bytes 256
    pipe.inst recv_start grad mb 0 peer 1 tag 1 bytes 256
    pipe.inst send_finish act mb 0 peer 1 tag 0 bytes 256
    pipe.inst recv_finish grad mb 0 peer 1 tag 1 bytes 256
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    pipe.inst recv_start act mb 0 peer 0 tag 0 bytes 256
    pipe.inst recv_finish act mb 0 peer 0 tag 0 bytes 256
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst send_start grad mb 0 peer 0 tag 1 bytes 256
    pipe.inst send_finish grad mb 0 peer 0 tag 1 bytes 256
    pipe.inst optimizer_step
  }
}

// -----

// Every opcode and optional field: chunks, vertical sync, weight
// versions, zero bubble's split backward. (Well-formed, not a safe stream.)

// CHECK-LABEL: pipe.schedule "pipedream" ranks 1 microbatches 2 chunks 2 vertical_sync {
// CHECK-NEXT: pipe.program rank 0 {
// CHECK-NEXT:   pipe.inst load mb 1 chunk 1
// CHECK-NEXT:   pipe.inst forward mb 1 chunk 1 version 2
// CHECK-NEXT:   pipe.inst backward mb 1 version 0
// CHECK-NEXT:   pipe.inst backward_input mb 0 chunk 1
// CHECK-NEXT:   pipe.inst backward_weight mb 0
// CHECK-NEXT:   pipe.inst allreduce chunk 1
// CHECK-NEXT:   pipe.inst allreduce
// CHECK-NEXT:   pipe.inst stash_weights version 1 bytes 4096
// CHECK-NEXT:   pipe.inst restore_weights chunk 1 version 1
// CHECK-NEXT:   pipe.inst free_weights version 1
// CHECK-NEXT:   pipe.inst recv_start act mb 1 chunk 1 peer 3 tag 9
// CHECK-NEXT:   pipe.inst recv_finish act mb 1 chunk 1 peer 3 tag 9
// CHECK-NEXT: }
pipe.schedule "pipedream" ranks 1 microbatches 2 chunks 2 vertical_sync {
  pipe.program rank 0 {
    pipe.inst load mb 1 chunk 1
    pipe.inst forward mb 1 chunk 1 version 2
    pipe.inst backward mb 1 version 0
    pipe.inst backward_input mb 0 chunk 1
    pipe.inst backward_weight mb 0
    pipe.inst allreduce chunk 1
    pipe.inst allreduce
    pipe.inst stash_weights version 1 bytes 4096
    pipe.inst restore_weights chunk 1 version 1
    pipe.inst free_weights version 1
    pipe.inst recv_start act mb 1 chunk 1 peer 3 tag 9
    pipe.inst recv_finish act mb 1 chunk 1 peer 3 tag 9
  }
}

// -----

// Defaults are elided; programs may come in any rank order and be empty.

// CHECK-LABEL: pipe.schedule "custom" ranks 2 microbatches 3 {
// CHECK-NEXT: pipe.program rank 1 {
// CHECK-NEXT: }
// CHECK-NEXT: pipe.program rank 0 {
// CHECK-NEXT: }
pipe.schedule "custom" ranks 2 microbatches 3 chunks 1 {
  pipe.program rank 1 {
  }
  pipe.program rank 0 {
  }
}

// -----

// Replicas: stage 0 on ranks 0 and 1, stage 1 on rank 2; one #pipe.stage
// per stage, not per rank.

// CHECK-LABEL: pipe.schedule "gpipe" ranks 3 microbatches 2 replicas [2, 1] stages [#pipe.stage<>, #pipe.stage<>] {
// CHECK:         pipe.inst allreduce bytes 1024
pipe.schedule "gpipe" ranks 3 microbatches 2 replicas [2, 1] stages [#pipe.stage<>, #pipe.stage<>] {
  pipe.program rank 0 {
    pipe.inst allreduce bytes 1024
  }
  pipe.program rank 1 {
  }
  pipe.program rank 2 {
  }
}
