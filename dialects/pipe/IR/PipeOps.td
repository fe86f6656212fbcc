//===- PipeOps.td - pipe dialect operations ----------------*- tablegen -*-===//

#ifndef DPC_DIALECTS_PIPE_IR_PIPEOPS_TD
#define DPC_DIALECTS_PIPE_IR_PIPEOPS_TD

include "dialects/pipe/IR/PipeAttrs.td"
include "dialects/pipe/IR/PipeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Pipe_Tensor : StaticShapeTensorOf<[AnyType]>;

def Pipe_SendOp : Pipe_Op<"send", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "sends a value to another pipeline stage";
  let description = [{
    Sends `value` for the current microbatch to stage `peer`. `tag`
    distinguishes the transfers between one pair of stages; the matching
    `pipe.recv` on `peer` has the same tag, type and this op's stage as its
    peer. The runtime starts the transfer without blocking; the schedule
    decides when it must have finished.

    ```mlir
    pipe.send %act to 1 tag 0 : tensor<16x6x14x14xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$value, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = "$value `to` $peer `tag` $tag attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Pipe_RecvOp : Pipe_Op<"recv", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "receives a value from another pipeline stage";
  let description = [{
    Yields the value that stage `peer` sent with `tag` for the current
    microbatch.

    ```mlir
    %act = pipe.recv from 0 tag 0 : tensor<16x6x14x14xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = "`from` $peer `tag` $tag attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Pipe_StashOp : Pipe_Op<"stash", [MemoryEffects<[MemWrite]>]> {
  let summary = "keeps a forward value until the microbatch's backward";
  let description = [{
    Stores `value` under `key` for the current microbatch. The backward of
    the same microbatch takes it back with `pipe.restore` of the same key,
    which frees the slot. A stage holds one slot per key for each microbatch
    in flight, which is what bounds a schedule's activation memory. For the
    PipeDream schedule the weight versions a microbatch's forward used are
    stashed the same way.

    ```mlir
    pipe.stash %x key "conv1.input" : tensor<16x1x28x28xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$value, StrAttr:$key);
  let assemblyFormat = "$value `key` $key attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Pipe_RestoreOp : Pipe_Op<"restore", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "takes back a value stashed by the microbatch's forward";
  let description = [{
    Yields the value stashed under `key` for the current microbatch and
    releases its slot.

    ```mlir
    %x = pipe.restore key "conv1.input" : tensor<16x1x28x28xf32>
    ```
  }];
  let arguments = (ins StrAttr:$key);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = "`key` $key attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Pipe_AllReduceOp : Pipe_Op<"allreduce",
    [MemoryEffects<[MemRead, MemWrite]>, SameOperandsAndResultType]> {
  let summary = "sums or averages a gradient over the replicas of a stage";
  let description = [{
    Reduces `value` over the ranks that replicate the current stage
    (hybrid data parallelism). `reduction` is "sum" or "mean".

    ```mlir
    %g = pipe.allreduce %gw mean : tensor<120x400xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$value,
                       DefaultValuedAttr<StrAttr, "\"sum\"">:$reduction);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = "$value $reduction attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Segment interface: what outlined segment functions read and report
//===----------------------------------------------------------------------===//

def Pipe_InputOp : Pipe_Op<"input", [MemoryEffects<[MemRead]>]> {
  let summary = "the current microbatch's data input";
  let description = [{
    In an outlined segment, yields data input `index` of the microbatch the
    segment runs on. The stages that need data read it themselves with the
    same sampler, so data never travels through the pipeline.

    ```mlir
    %x = pipe.input 0 : tensor<16x1x28x28xf32>
    ```
  }];
  let arguments = (ins I64Attr:$index);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = "$index attr-dict `:` type($result)";
}

def Pipe_LabelsOp : Pipe_Op<"labels", [MemoryEffects<[MemRead]>]> {
  let summary = "the current microbatch's labels";
  let description = [{
    Class ids (i64) for softmax cross-entropy, or float targets of the
    output's shape (f32) for mse.

    ```mlir
    %y = pipe.labels : tensor<16xi64>
    %t = pipe.labels : tensor<16x8xf32>
    ```
  }];
  let results = (outs StaticShapeTensorOf<[I64, F32]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Pipe_ReportLossOp : Pipe_Op<"report_loss", [MemoryEffects<[MemWrite]>]> {
  let summary = "hands the microbatch's loss to the runtime";
  let description = [{
    The last stage reports each microbatch's (scaled) loss; the runtime sums
    them into the step's loss for the progress line and metrics.
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$loss);
  let assemblyFormat = "$loss attr-dict `:` type($loss)";
  let hasVerifier = 1;
}

def Pipe_ReportOutputOp : Pipe_Op<"report_output", [MemoryEffects<[MemWrite]>]> {
  let summary = "hands the model's output to the runtime";
  let description = [{
    The last stage reports the model's output (the logits) so that the
    runtime can measure accuracy during evaluation.
  }];
  let arguments = (ins Pipe_Tensor:$output);
  let assemblyFormat = "$output attr-dict `:` type($output)";
}

def Pipe_AccumulateGradOp : Pipe_Op<"accumulate_grad",
    [MemoryEffects<[MemRead, MemWrite]>, AllTypesMatch<["param", "grad"]>]> {
  let summary = "adds a microbatch's gradient to a parameter's accumulator";
  let description = [{
    The backward segment of each microbatch adds its weight gradient to the
    accumulator of the parameter that `param` (an `nn.param`) names; the
    optimizer segment consumes the sum once per minibatch.
  }];
  let arguments = (ins Pipe_Tensor:$param, Pipe_Tensor:$grad);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
  let hasVerifier = 1;
}

def Pipe_AccumulatedGradOp : Pipe_Op<"accumulated_grad",
    [MemoryEffects<[MemRead]>, AllTypesMatch<["param", "result"]>]> {
  let summary = "the gradient accumulated over a minibatch's microbatches";
  let description = [{
    In the optimizer segment, the sum of the gradients `pipe.accumulate_grad`
    added for the parameter that `param` names.

    ```mlir
    %w = nn.param "fc.weight" : tensor<10x84xf32>
    %g = pipe.accumulated_grad %w : tensor<10x84xf32>
    nn.sgd_update %w, %g {lr = 0.05 : f32} : tensor<10x84xf32>
    ```
  }];
  let arguments = (ins Pipe_Tensor:$param);
  let results = (outs Pipe_Tensor:$result);
  let assemblyFormat = "$param attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Schedule programs: the per-rank instruction streams of lib/schedule
//===----------------------------------------------------------------------===//

def Pipe_Index : ConfinedAttr<I32Attr, [IntNonNegative]>;
def Pipe_Count : ConfinedAttr<I32Attr, [IntPositive]>;
def Pipe_Bytes : ConfinedAttr<I64Attr, [IntNonNegative]>;

def Pipe_ScheduleOp : Pipe_Op<"schedule", [
    HasParent<"::mlir::ModuleOp">, IsolatedFromAbove, NoTerminator,
    NoRegionArguments, SingleBlock]> {
  let summary = "the instruction streams of one training step, one per rank";
  let description = [{
    A pipeline schedule (schedule::Schedule) in the IR: the header of
    schedule.json as attributes and one `pipe.program` per rank. `kind` is
    "gpipe", "1f1b", "pipedream", "interleaved", "zb-h1" or "custom" (a
    hand-written program: every check of `verify-schedule` but the per-kind
    update counts). `chunks` (model chunks per rank, default 1), `replicas`
    (ranks per pipeline stage, absent when every stage has one) and
    `vertical_sync` follow the builder's options. `stages` holds one
    `#pipe.stage` per virtual stage (`chunk * stages + stage`); when it is
    absent every stage costs 1 ms per pass and holds no bytes.

    `build-schedule` emits this op with `emit-program`; `verify-schedule`
    proves it and reports each violation at the `pipe.inst` it blames. The
    op is compile-time data: the runtime reads schedule.json, and
    `lower-to-runtime` drops it.

    ```mlir
    pipe.schedule "gpipe" ranks 2 microbatches 1
        stages [#pipe.stage<param_bytes = 4096>, #pipe.stage<>] {
      pipe.program rank 0 {
        pipe.inst load mb 0
        pipe.inst forward mb 0
        ...
      }
      pipe.program rank 1 {
        ...
      }
    }
    ```
  }];
  let arguments = (ins
    StrAttr:$kind,
    Pipe_Count:$ranks,
    Pipe_Count:$microbatches,
    DefaultValuedAttr<Pipe_Count, "1">:$chunks,
    OptionalAttr<DenseI64ArrayAttr>:$replicas,
    UnitAttr:$vertical_sync,
    OptionalAttr<TypedArrayAttrBase<Pipe_StageAttr, "stage array">>:$stages
  );
  let regions = (region SizedRegion<1>:$bodyRegion);
  let assemblyFormat = [{
    $kind `ranks` $ranks `microbatches` $microbatches
    (`chunks` $chunks^)? (`replicas` $replicas^)?
    (`vertical_sync` $vertical_sync^)? (`stages` $stages^)?
    attr-dict-with-keyword $bodyRegion
  }];
  let builders = [
    // Materialises the streams: one pipe.program per rank, one pipe.inst
    // per instruction.
    OpBuilder<(ins "const ::dpc::schedule::Schedule &":$schedule)>,
  ];
  let extraClassDeclaration = [{
    auto getPrograms() { return getBody()->getOps<ProgramOp>(); }
    /// The plain streams, for lib/schedule's verifier and simulator.
    ::dpc::schedule::Schedule toSchedule();
    /// The op a finding at (`rank`, instruction `index`) points at: that
    /// pipe.inst, the rank's pipe.program when `index` < 0, or this op when
    /// `rank` < 0 (schedule::Violation's convention).
    ::mlir::Operation *lookupInstruction(int rank, int index);
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Pipe_ProgramOp : Pipe_Op<"program", [
    HasParent<"ScheduleOp">, NoTerminator, NoRegionArguments, SingleBlock]> {
  let summary = "the instruction stream of one rank";
  let description = [{
    The instructions rank `rank` runs in one step, in order: the region
    holds only `pipe.inst` ops. A schedule has exactly one program per rank.

    ```mlir
    pipe.program rank 1 {
      pipe.inst recv_start act mb 0 peer 0 tag 0 bytes 1024
      ...
    }
    ```
  }];
  let arguments = (ins Pipe_Index:$rank);
  let regions = (region SizedRegion<1>:$bodyRegion);
  let assemblyFormat = "`rank` $rank attr-dict-with-keyword $bodyRegion";
  let extraClassDeclaration = [{
    auto getInstructions() { return getBody()->getOps<InstOp>(); }
  }];
  let hasVerifier = 1;
}

def Pipe_InstOp : Pipe_Op<"inst", [HasParent<"ProgramOp">]> {
  let summary = "one schedule instruction";
  let description = [{
    One schedule::Instruction of its rank's stream (docs/SCHEDULES.md,
    "Instruction set"). The opcode is the instruction's schedule.json name,
    and the instruction carries exactly the fields its opcode uses:

    | opcode | needs | may have |
    |---|---|---|
    | `load`, `backward_input`, `backward_weight` | mb | chunk |
    | `forward`, `backward` | mb | chunk, version |
    | `send_start`, `send_finish`, `recv_start`, `recv_finish` | payload (`act` or `grad`), mb, peer, tag | chunk, bytes |
    | `allreduce` | | chunk, bytes |
    | `optimizer_step` | | |
    | `stash`, `restore`, `free` | mb | chunk, bytes |
    | `stash_weights`, `restore_weights`, `free_weights` | version | chunk, bytes |

    An absent chunk or size is 0. Whether the numbers fit the schedule
    (microbatch and chunk in range, the peer another rank) and whether the
    streams are safe together is `verify-schedule`'s proof, not this op's.

    ```mlir
    pipe.inst forward mb 0
    pipe.inst send_start act mb 0 peer 1 tag 0 bytes 1024
    pipe.inst stash_weights version 1 bytes 4096
    ```
  }];
  let arguments = (ins
    Pipe_OpcodeAttr:$opcode,
    OptionalAttr<Pipe_PayloadAttr>:$what,
    OptionalAttr<Pipe_Index>:$mb,
    OptionalAttr<Pipe_Index>:$chunk,
    OptionalAttr<Pipe_Index>:$version,
    OptionalAttr<Pipe_Index>:$peer,
    OptionalAttr<Pipe_Index>:$tag,
    OptionalAttr<Pipe_Bytes>:$bytes
  );
  let assemblyFormat = [{
    custom<Opcode>($opcode, $what) (`mb` $mb^)? (`chunk` $chunk^)? (`version` $version^)?
    (`peer` $peer^)? (`tag` $tag^)? (`bytes` $bytes^)? attr-dict
  }];
  let hasVerifier = 1;
}

#endif // DPC_DIALECTS_PIPE_IR_PIPEOPS_TD
