// RUN: dpc-opt %s -split-input-file --dpc-verify-schedule -verify-diagnostics

// Where verify-schedule reports what lib/schedule's verifier finds in a
// hand-made pipe.schedule: at the pipe.inst a violation blames, with notes at
// the instructions of other ranks it involves, or at the rank's pipe.program
// when no instruction is to blame. The verifier's checks themselves are
// GoogleTests (test/unittests/schedule/VerifierTest.cpp); a violation whose
// message those assert is here only where it adds such a place.

// Each rank waits for a receive whose send the other rank posts only after
// its own wait: rank 0 wants mb 0's gradient before sending mb 1's
// activation, rank 1 wants mb 1's activation before sending mb 0's
// gradient. A deadlock even when Starts never block.
pipe.schedule "gpipe" ranks 2 microbatches 2 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst send_start act mb 0 peer 1 tag 0
    pipe.inst send_finish act mb 0 peer 1 tag 0
    // expected-error @+1 {{rank 0: instruction 5 (RecvStart grad mb 0 from rank 1): deadlock with blocking transfers: waits for rank 1 to reach instruction 13 (SendStart grad mb 0 to rank 0), but rank 1 is blocked at instruction 5 (RecvStart act mb 1 from rank 0)}}
    pipe.inst recv_start grad mb 0 peer 1 tag 1
    // expected-error @+1 {{rank 0: instruction 6 (RecvFinish grad mb 0 from rank 1): deadlock with non-blocking transfers: waits for rank 1 to reach instruction 13 (SendStart grad mb 0 to rank 0), but rank 1 is blocked at instruction 6 (RecvFinish act mb 1 from rank 0)}}
    pipe.inst recv_finish grad mb 0 peer 1 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst load mb 1
    pipe.inst forward mb 1
    pipe.inst stash mb 1
    pipe.inst send_start act mb 1 peer 1 tag 4
    pipe.inst send_finish act mb 1 peer 1 tag 4
    pipe.inst recv_start grad mb 1 peer 1 tag 5
    pipe.inst recv_finish grad mb 1 peer 1 tag 5
    pipe.inst restore mb 1
    pipe.inst backward mb 1
    pipe.inst free mb 1
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    pipe.inst recv_start act mb 0 peer 0 tag 0
    pipe.inst recv_finish act mb 0 peer 0 tag 0
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    // expected-note @+1 {{rank 1 is blocked here}}
    pipe.inst recv_start act mb 1 peer 0 tag 4
    // expected-note @+1 {{rank 1 is blocked here}}
    pipe.inst recv_finish act mb 1 peer 0 tag 4
    pipe.inst load mb 1
    pipe.inst forward mb 1
    pipe.inst stash mb 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    // Both deadlocks wait for this send (one expectation matches both notes).
    // expected-note @+1 {{the matching send on rank 1}}
    pipe.inst send_start grad mb 0 peer 0 tag 1
    pipe.inst send_finish grad mb 0 peer 0 tag 1
    pipe.inst restore mb 1
    pipe.inst backward mb 1
    pipe.inst free mb 1
    pipe.inst send_start grad mb 1 peer 0 tag 5
    pipe.inst send_finish grad mb 1 peer 0 tag 5
    pipe.inst optimizer_step
  }
}

// -----

// Rank 1 receives the activation with the wrong tag: neither side is
// matched, and both models deadlock on the unmatched transfers.
pipe.schedule "gpipe" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    // expected-error @+2 {{rank 0: instruction 3 (SendStart act mb 0 to rank 1): rank 1 never receives it (no RecvStart act mb 0 from rank 0 with tag 0)}}
    // expected-error @+1 {{rank 0: instruction 3 (SendStart act mb 0 to rank 1): deadlock with blocking transfers: rank 1 has no matching receive}}
    pipe.inst send_start act mb 0 peer 1 tag 0
    pipe.inst recv_start grad mb 0 peer 1 tag 1
    // expected-error @+1 {{rank 0: instruction 5 (SendFinish act mb 0 to rank 1): deadlock with non-blocking transfers: rank 1 has no matching receive}}
    pipe.inst send_finish act mb 0 peer 1 tag 0
    pipe.inst recv_finish grad mb 0 peer 1 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    // expected-error @+1 {{rank 1: instruction 0 (RecvStart act mb 0 from rank 0): rank 0 never sends it (no SendStart act mb 0 to rank 1 with tag 2)}}
    pipe.inst recv_start act mb 0 peer 0 tag 2
    pipe.inst recv_finish act mb 0 peer 0 tag 2
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst send_start grad mb 0 peer 0 tag 1
    pipe.inst send_finish grad mb 0 peer 0 tag 1
    pipe.inst optimizer_step
  }
}

// -----

// Rank 0 frees its stash twice.
pipe.schedule "gpipe" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst send_start act mb 0 peer 1 tag 0
    pipe.inst recv_start grad mb 0 peer 1 tag 1
    pipe.inst send_finish act mb 0 peer 1 tag 0
    pipe.inst recv_finish grad mb 0 peer 1 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    // expected-error @+1 {{rank 0: instruction 10 (Free mb 0): free of mb 0 without a live stash}}
    pipe.inst free mb 0
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    pipe.inst recv_start act mb 0 peer 0 tag 0
    pipe.inst recv_finish act mb 0 peer 0 tag 0
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst send_start grad mb 0 peer 0 tag 1
    pipe.inst send_finish grad mb 0 peer 0 tag 1
    pipe.inst optimizer_step
  }
}

// -----

// A weight version stashed and never freed.
pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0 version 0
    pipe.inst stash mb 0
    // expected-error @+1 {{rank 0: instruction 3 (StashWeights version 0): weight version 0 is never freed}}
    pipe.inst stash_weights version 0 bytes 4096
    pipe.inst optimizer_step
    pipe.inst restore_weights version 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0 version 0
    pipe.inst free mb 0
  }
}

// -----

// A backward with an old weight version that it never restored.
pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0 version 0
    pipe.inst stash mb 0
    pipe.inst stash_weights version 0
    pipe.inst optimizer_step
    pipe.inst restore mb 0
    // expected-error @+1 {{rank 0: instruction 6 (Backward mb 0 weights v0): uses old weight version 0 without a RestoreWeights of it}}
    pipe.inst backward mb 0 version 0
    pipe.inst free mb 0
    pipe.inst free_weights version 0
  }
}

// -----

// A synchronous kind updates once per minibatch, after every backward. The
// count is blamed on the program.
pipe.schedule "gpipe" ranks 1 microbatches 1 {
  // expected-error @+1 {{rank 0: gpipe updates once per minibatch, but the stream has 2 optimizer steps}}
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst optimizer_step
    pipe.inst optimizer_step
  }
}

// -----

// PipeDream updates after every backward.
pipe.schedule "pipedream" ranks 1 microbatches 2 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst load mb 1
    pipe.inst forward mb 1
    pipe.inst stash mb 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst restore mb 1
    pipe.inst backward mb 1
    pipe.inst free mb 1
    // expected-error @+1 {{rank 0: instruction 12 (OptimizerStep): pipedream updates after every backward, but 2 backwards ran since the last update}}
    pipe.inst optimizer_step
  }
}

// -----

// Dataflow: rank 1 runs its forward before the activation has arrived.
pipe.schedule "gpipe" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst send_start act mb 0 peer 1 tag 0
    pipe.inst recv_start grad mb 0 peer 1 tag 1
    pipe.inst send_finish act mb 0 peer 1 tag 0
    pipe.inst recv_finish grad mb 0 peer 1 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    pipe.inst recv_start act mb 0 peer 0 tag 0
    pipe.inst load mb 0
    // expected-error @+1 {{rank 1: instruction 2 (Forward mb 0): forward of mb 0 before its input activation arrived from rank 0}}
    pipe.inst forward mb 0
    pipe.inst recv_finish act mb 0 peer 0 tag 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst send_start grad mb 0 peer 0 tag 1
    pipe.inst send_finish grad mb 0 peer 0 tag 1
    pipe.inst optimizer_step
  }
}

// -----

// Dataflow: the first stage computes without reading its microbatch.
pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{rank 0: instruction 0 (Forward mb 0): forward of mb 0 before its LoadMicrobatch (the first and last stages read the data)}}
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
  }
}

// -----

// Dataflow: rank 0 sends an activation before the forward that computes it.
pipe.schedule "gpipe" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    // expected-error @+1 {{rank 0: instruction 1 (SendStart act mb 0 to rank 1): sends the activation of mb 0 before its forward}}
    pipe.inst send_start act mb 0 peer 1 tag 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst recv_start grad mb 0 peer 1 tag 1
    pipe.inst send_finish act mb 0 peer 1 tag 0
    pipe.inst recv_finish grad mb 0 peer 1 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    pipe.inst recv_start act mb 0 peer 0 tag 0
    pipe.inst recv_finish act mb 0 peer 0 tag 0
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst send_start grad mb 0 peer 0 tag 1
    pipe.inst send_finish grad mb 0 peer 0 tag 1
    pipe.inst optimizer_step
  }
}

// -----

// Work done twice.
pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    // expected-error @+1 {{rank 0: instruction 2 (Forward mb 0): forward runs twice}}
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
  }
}

// -----

// A send that is never finished.
pipe.schedule "gpipe" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    // expected-error @+1 {{rank 0: instruction 3 (SendStart act mb 0 to rank 1): never finished (no SendFinish)}}
    pipe.inst send_start act mb 0 peer 1 tag 0
    pipe.inst recv_start grad mb 0 peer 1 tag 1
    pipe.inst recv_finish grad mb 0 peer 1 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    pipe.inst recv_start act mb 0 peer 0 tag 0
    pipe.inst recv_finish act mb 0 peer 0 tag 0
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst send_start grad mb 0 peer 0 tag 1
    pipe.inst send_finish grad mb 0 peer 0 tag 1
    pipe.inst optimizer_step
  }
}

// -----

// A transfer to its own rank.
pipe.schedule "custom" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    // expected-error @+1 {{rank 0: instruction 0 (SendStart act mb 0 to rank 0): peer rank 0 is not another rank of the 2}}
    pipe.inst send_start act mb 0 peer 0 tag 0
  }
  pipe.program rank 1 {
  }
}

// -----

// Messages routed to ranks that do not hold the neighbouring stage: the
// last stage sends an activation back to the first.
pipe.schedule "custom" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst send_start act mb 0 peer 1 tag 0
    pipe.inst send_finish act mb 0 peer 1 tag 0
    // expected-error @+1 {{rank 0: instruction 5 (RecvStart act mb 0 from rank 1): receives act of mb 0 from rank 1, which does not hold the previous stage}}
    pipe.inst recv_start act mb 0 peer 1 tag 2
    pipe.inst recv_finish act mb 0 peer 1 tag 2
  }
  pipe.program rank 1 {
    pipe.inst recv_start act mb 0 peer 0 tag 0
    pipe.inst recv_finish act mb 0 peer 0 tag 0
    pipe.inst load mb 0
    pipe.inst forward mb 0
    // expected-error @+1 {{rank 1: instruction 4 (SendStart act mb 0 to rank 0): sends act of mb 0 to rank 0, which does not hold the next stage}}
    pipe.inst send_start act mb 0 peer 0 tag 2
    pipe.inst send_finish act mb 0 peer 0 tag 2
  }
}

// -----

// One schedule per module.
pipe.schedule "custom" ranks 1 microbatches 1 {
  // expected-note @-1 {{the first one}}
  pipe.program rank 0 {
  }
}
// expected-error @+1 {{'pipe.schedule' op expects one pipe.schedule per module}}
pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
  }
}

// -----

// A valid replicated gpipe step: stage 0 on ranks 0 and 1 (one microbatch
// each), stage 1 on rank 2; the replicas all-reduce before the update. The
// one case of replicas written as IR: without them reaching the verifier,
// its all-reduces would be reported.
pipe.schedule "gpipe" ranks 3 microbatches 2 replicas [2, 1] {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst send_start act mb 0 peer 2 tag 0
    pipe.inst recv_start grad mb 0 peer 2 tag 1
    pipe.inst send_finish act mb 0 peer 2 tag 0
    pipe.inst recv_finish grad mb 0 peer 2 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst allreduce
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    pipe.inst load mb 1
    pipe.inst forward mb 1
    pipe.inst stash mb 1
    pipe.inst send_start act mb 1 peer 2 tag 4
    pipe.inst recv_start grad mb 1 peer 2 tag 5
    pipe.inst send_finish act mb 1 peer 2 tag 4
    pipe.inst recv_finish grad mb 1 peer 2 tag 5
    pipe.inst restore mb 1
    pipe.inst backward mb 1
    pipe.inst free mb 1
    pipe.inst allreduce
    pipe.inst optimizer_step
  }
  pipe.program rank 2 {
    pipe.inst recv_start act mb 0 peer 0 tag 0
    pipe.inst recv_finish act mb 0 peer 0 tag 0
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst recv_start act mb 1 peer 1 tag 4
    pipe.inst recv_finish act mb 1 peer 1 tag 4
    pipe.inst load mb 1
    pipe.inst forward mb 1
    pipe.inst stash mb 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst send_start grad mb 0 peer 0 tag 1
    pipe.inst send_finish grad mb 0 peer 0 tag 1
    pipe.inst restore mb 1
    pipe.inst backward mb 1
    pipe.inst free mb 1
    pipe.inst send_start grad mb 1 peer 1 tag 5
    pipe.inst send_finish grad mb 1 peer 1 tag 5
    pipe.inst optimizer_step
  }
}
