// RUN: dpc-opt %s -split-input-file -verify-diagnostics

// What the ops check on their own: fields per opcode, where programs and
// instructions may live, one program per rank. Whether the streams are safe
// together is verify-schedule's (test/Transforms/verify-schedule-invalid.mlir).

pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op forward expects 'mb'}}
    pipe.inst forward
  }
}

// -----

pipe.schedule "custom" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op send_start expects a payload (act or grad)}}
    pipe.inst send_start mb 0 peer 1 tag 0
  }
  pipe.program rank 1 {
  }
}

// -----

pipe.schedule "custom" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op recv_finish expects 'peer'}}
    pipe.inst recv_finish grad mb 0 tag 1
  }
  pipe.program rank 1 {
  }
}

// -----

pipe.schedule "custom" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op send_finish expects 'tag'}}
    pipe.inst send_finish act mb 0 peer 1
  }
  pipe.program rank 1 {
  }
}

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op restore_weights expects 'version'}}
    pipe.inst restore_weights
  }
}

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op forward does not take 'peer'}}
    pipe.inst forward mb 0 peer 1
  }
}

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op optimizer_step does not take 'mb'}}
    pipe.inst optimizer_step mb 0
  }
}

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op stash does not take 'what'}}
    pipe.inst stash act mb 0
  }
}

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op backward_weight does not take 'version'}}
    pipe.inst backward_weight mb 0 version 1
  }
}

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op attribute 'mb' failed to satisfy constraint: 32-bit signless integer attribute whose value is non-negative}}
    pipe.inst forward mb -1
  }
}

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{'pipe.inst' op attribute 'bytes' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    pipe.inst stash mb 0 bytes -8
  }
}

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{unknown opcode 'sideways'}}
    pipe.inst sideways mb 0
  }
}

// -----

// expected-error @+1 {{'pipe.inst' op expects parent op 'pipe.program'}}
pipe.inst optimizer_step

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  // expected-error @+1 {{'pipe.inst' op expects parent op 'pipe.program'}}
  pipe.inst optimizer_step
}

// -----

func.func @program_outside_schedule() {
  // expected-error @+1 {{'pipe.program' op expects parent op 'pipe.schedule'}}
  pipe.program rank 0 {
  }
  return
}

// -----

func.func @schedule_in_function() {
  // expected-error @+1 {{'pipe.schedule' op expects parent op 'builtin.module'}}
  pipe.schedule "custom" ranks 1 microbatches 1 {
    pipe.program rank 0 {
    }
  }
  return
}

// -----

pipe.schedule "custom" ranks 2 microbatches 1 {
  pipe.program rank 0 {
  }
  // expected-error @+1 {{'pipe.program' op expects a rank below the schedule's 2, got 2}}
  pipe.program rank 2 {
  }
}

// -----

pipe.schedule "custom" ranks 2 microbatches 1 {
  // expected-note @+1 {{the first one}}
  pipe.program rank 0 {
  }
  // expected-error @+1 {{'pipe.program' op duplicates the program of rank 0}}
  pipe.program rank 0 {
  }
}

// -----

// expected-error @+1 {{'pipe.schedule' op expects a pipe.program for each of its 3 ranks, rank 1 has none}}
pipe.schedule "custom" ranks 3 microbatches 1 {
  pipe.program rank 0 {
  }
  pipe.program rank 2 {
  }
}

// -----

// expected-error @+1 {{'pipe.schedule' op expects only pipe.program ops, found 'arith.constant'}}
pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
  }
  %stray = arith.constant 0 : i32
}

// -----

pipe.schedule "custom" ranks 1 microbatches 1 {
  // expected-error @+1 {{'pipe.program' op expects only pipe.inst ops, found 'arith.constant'}}
  pipe.program rank 0 {
    %stray = arith.constant 0 : i32
  }
}

// -----

// expected-error @+1 {{'pipe.schedule' op expects kind gpipe, 1f1b, pipedream, interleaved, zb-h1 or custom, got 'fifo'}}
pipe.schedule "fifo" ranks 1 microbatches 1 {
  pipe.program rank 0 {
  }
}

// -----

// expected-error @+1 {{'pipe.schedule' op attribute 'ranks' failed to satisfy constraint: 32-bit signless integer attribute whose value is positive}}
pipe.schedule "custom" ranks 0 microbatches 1 {
}

// -----

// expected-error @+1 {{'pipe.schedule' op expects one #pipe.stage per virtual stage (4), got 2}}
pipe.schedule "interleaved" ranks 2 microbatches 2 chunks 2 stages [#pipe.stage<>, #pipe.stage<>] {
  pipe.program rank 0 {
  }
  pipe.program rank 1 {
  }
}

// -----

// expected-error @+1 {{expects finite non-negative stage times}}
pipe.schedule "custom" ranks 1 microbatches 1 stages [#pipe.stage<forward_ms = -1.0>] {
  pipe.program rank 0 {
  }
}

// -----

// expected-error @+1 {{expects non-negative stage sizes}}
pipe.schedule "custom" ranks 1 microbatches 1 stages [#pipe.stage<param_bytes = -4096>] {
  pipe.program rank 0 {
  }
}

// -----

// expected-error @+1 {{duplicate or unknown struct parameter name: flops}}
pipe.schedule "custom" ranks 1 microbatches 1 stages [#pipe.stage<flops = 1>] {
  pipe.program rank 0 {
  }
}

// -----

// expected-error @+1 {{the replicas per stage add up to 3 ranks, not 2}}
pipe.schedule "custom" ranks 2 microbatches 1 replicas [2, 1] {
  pipe.program rank 0 {
  }
  pipe.program rank 1 {
  }
}

// -----

// expected-error @+1 {{replicated stages cannot also hold several model chunks}}
pipe.schedule "custom" ranks 2 microbatches 2 chunks 2 replicas [2] {
  pipe.program rank 0 {
  }
  pipe.program rank 1 {
  }
}
