// RUN: dpc-opt %s -split-input-file --dpc-verify-schedule=memory-limit=65536 -verify-diagnostics

// Hand-made broken programs, one per violation the verifier knows, each
// reported at the instruction it blames. Most are the valid two-rank step
// of the first case with one thing changed. The memory limit only binds in
// the case whose first stage holds more parameters than it.

// A valid gpipe step: two ranks, one microbatch.
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

// The classic 1F1B clash: rank 0 sends mb 1's activation while rank 1 sends
// mb 0's gradient, each before receiving. Safe when Starts do not block, a
// deadlock with rendezvous transfers.
pipe.schedule "1f1b" ranks 2 microbatches 2 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst send_start act mb 0 peer 1 tag 0
    pipe.inst send_finish act mb 0 peer 1 tag 0
    pipe.inst load mb 1
    pipe.inst forward mb 1
    pipe.inst stash mb 1
    // expected-error @+1 {{rank 0: instruction 8 (SendStart act mb 1 to rank 1): deadlock with blocking transfers: waits for rank 1 to reach instruction 9 (RecvStart act mb 1 from rank 0), but rank 1 is blocked at instruction 8 (SendStart grad mb 0 to rank 0)}}
    pipe.inst send_start act mb 1 peer 1 tag 4
    pipe.inst recv_start grad mb 0 peer 1 tag 1
    pipe.inst send_finish act mb 1 peer 1 tag 4
    pipe.inst recv_finish grad mb 0 peer 1 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
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
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    // expected-note @+1 {{rank 1 is blocked here}}
    pipe.inst send_start grad mb 0 peer 0 tag 1
    // expected-note @+1 {{the matching receive on rank 1}}
    pipe.inst recv_start act mb 1 peer 0 tag 4
    pipe.inst send_finish grad mb 0 peer 0 tag 1
    pipe.inst recv_finish act mb 1 peer 0 tag 4
    pipe.inst load mb 1
    pipe.inst forward mb 1
    pipe.inst stash mb 1
    pipe.inst restore mb 1
    pipe.inst backward mb 1
    pipe.inst free mb 1
    pipe.inst send_start grad mb 1 peer 0 tag 5
    pipe.inst send_finish grad mb 1 peer 0 tag 5
    pipe.inst optimizer_step
  }
}

// -----

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

// The two sides of a message disagree on its size.
pipe.schedule "gpipe" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    // expected-error @+1 {{rank 0: instruction 3 (SendStart act mb 0 to rank 1): matches instruction 0 (RecvStart act mb 0 from rank 0) of rank 1, which expects act of mb 0 and 128 bytes, not act of mb 0 and 256 bytes}}
    pipe.inst send_start act mb 0 peer 1 tag 0 bytes 256
    pipe.inst recv_start grad mb 0 peer 1 tag 1
    pipe.inst send_finish act mb 0 peer 1 tag 0 bytes 256
    pipe.inst recv_finish grad mb 0 peer 1 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    // expected-note @+1 {{the matching receive on rank 1}}
    pipe.inst recv_start act mb 0 peer 0 tag 0 bytes 128
    pipe.inst recv_finish act mb 0 peer 0 tag 0 bytes 128
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

// Rank 1 never stashes what its backward restores.
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
    pipe.inst recv_finish act mb 0 peer 0 tag 0
    pipe.inst load mb 0
    pipe.inst forward mb 0
    // expected-error @+1 {{rank 1: instruction 4 (Restore mb 0): restore of mb 0 without a live stash}}
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst send_start grad mb 0 peer 0 tag 1
    pipe.inst send_finish grad mb 0 peer 0 tag 1
    pipe.inst optimizer_step
  }
}

// -----

// Rank 0 never frees its stash.
pipe.schedule "gpipe" ranks 2 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    // expected-error @+1 {{rank 0: instruction 2 (Stash mb 0): stash of mb 0 is never freed}}
    pipe.inst stash mb 0
    pipe.inst send_start act mb 0 peer 1 tag 0
    pipe.inst recv_start grad mb 0 peer 1 tag 1
    pipe.inst send_finish act mb 0 peer 1 tag 0
    pipe.inst recv_finish grad mb 0 peer 1 tag 1
    pipe.inst restore mb 0
    pipe.inst backward mb 0
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

// Weight versions (PipeDream) on one rank: a version restored that was
// never stashed.
pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    // expected-error @+1 {{rank 0: instruction 4 (RestoreWeights version 0): restore of weight version 0 without a stash}}
    pipe.inst restore_weights version 0
    pipe.inst backward mb 0 version 0
    pipe.inst free mb 0
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

pipe.schedule "1f1b" ranks 1 microbatches 2 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    // expected-error @+1 {{rank 0: instruction 6 (OptimizerStep): 1f1b updates once per minibatch, but this update comes before the backward of mb 1}}
    pipe.inst optimizer_step
    pipe.inst load mb 1
    pipe.inst forward mb 1
    pipe.inst stash mb 1
    pipe.inst restore mb 1
    pipe.inst backward mb 1
    pipe.inst free mb 1
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

// The first stage holds 64 KiB of parameters; its stash crosses the limit.
pipe.schedule "gpipe" ranks 2 microbatches 1
    stages [#pipe.stage<param_bytes = 65536>, #pipe.stage<>] {
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    // expected-error @+1 {{rank 0: instruction 2 (Stash mb 0): memory reaches 68.00 KiB (peak 70.00 KiB, parameters 64.00 KiB), over the limit of 64.00 KiB}}
    pipe.inst stash mb 0 bytes 4096
    pipe.inst send_start act mb 0 peer 1 tag 0 bytes 1024
    pipe.inst recv_start grad mb 0 peer 1 tag 1 bytes 1024
    pipe.inst send_finish act mb 0 peer 1 tag 0 bytes 1024
    pipe.inst recv_finish grad mb 0 peer 1 tag 1 bytes 1024
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst optimizer_step
  }
  pipe.program rank 1 {
    pipe.inst recv_start act mb 0 peer 0 tag 0 bytes 1024
    pipe.inst recv_finish act mb 0 peer 0 tag 0 bytes 1024
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0 bytes 4096
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst send_start grad mb 0 peer 0 tag 1 bytes 1024
    pipe.inst send_finish grad mb 0 peer 0 tag 1 bytes 1024
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

// Work never done: blamed on the rank's program, not on an instruction.
pipe.schedule "custom" ranks 1 microbatches 2 {
  // expected-error @+1 {{rank 0: the stream never runs the backward of mb 1}}
  pipe.program rank 0 {
    pipe.inst load mb 0
    pipe.inst forward mb 0
    pipe.inst stash mb 0
    pipe.inst restore mb 0
    pipe.inst backward mb 0
    pipe.inst free mb 0
    pipe.inst load mb 1
    pipe.inst forward mb 1
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

// Numbers outside the schedule: a microbatch it does not have.
pipe.schedule "custom" ranks 1 microbatches 1 {
  pipe.program rank 0 {
    pipe.inst load mb 0
    // expected-error @+1 {{rank 0: instruction 1 (Forward mb 1): microbatch 1 out of range [0, 1)}}
    pipe.inst forward mb 1
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
// each), stage 1 on rank 2; the replicas all-reduce before the update.
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

// -----

// Rank 1 updates without summing its gradients with rank 0, whose
// all-reduce then waits forever.
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
    // expected-error @+2 {{rank 0: instruction 10 (AllReduce): deadlock with non-blocking transfers: the all-reduce of stage 0 waits for its replica on rank 1, which has finished}}
    // expected-error @+1 {{rank 0: instruction 10 (AllReduce): deadlock with blocking transfers: the all-reduce of stage 0 waits for its replica on rank 1, which has finished}}
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
    // expected-error @+1 {{rank 1: instruction 10 (OptimizerStep): stage 0 has 2 replicas, but this update comes before the all-reduce of their gradients}}
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

// -----

// The unreplicated last stage has nobody to all-reduce with.
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
    // expected-error @+1 {{rank 2: instruction 20 (AllReduce): all-reduce on stage 1, which has no replicas}}
    pipe.inst allreduce
    pipe.inst optimizer_step
  }
}

// -----

// Rank 0 loads a microbatch of its replica, rank 1.
pipe.schedule "gpipe" ranks 3 microbatches 2 replicas [2, 1] {
  pipe.program rank 0 {
    pipe.inst load mb 0
    // expected-error @+1 {{rank 0: instruction 1 (LoadMicrobatch mb 1): mb 1 belongs to rank 1, another replica of stage 0}}
    pipe.inst load mb 1
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
