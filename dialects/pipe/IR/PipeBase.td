//===- PipeBase.td - pipe dialect definition ---------------*- tablegen -*-===//

#ifndef DPC_DIALECTS_PIPE_IR_PIPEBASE_TD
#define DPC_DIALECTS_PIPE_IR_PIPEBASE_TD

include "mlir/IR/OpBase.td"

def Pipe_Dialect : Dialect {
  let name = "pipe";
  let cppNamespace = "::mlir::dpc::pipe";
  let summary = "Pipeline-parallel structure: stages, transfers, stashes";
  let description = [{
    The `pipe` dialect expresses how a training step is spread over pipeline
    stages. `partition-stages` marks every op with the discardable attribute
    `pipe.stage` (a non-negative integer); `insert-send-recv` puts a
    `pipe.send`/`pipe.recv` pair on every value that crosses a stage
    boundary; `insert-stash` keeps the values that a microbatch's backward
    needs from its forward with `pipe.stash`/`pipe.restore`; replicated stages
    sum their gradients with `pipe.allreduce`.

    Transfers and stashes are keyed per microbatch at run time: the IR
    describes one microbatch, and the schedule says which microbatch each
    segment runs on. That schedule can itself live in the module as a
    `pipe.schedule` op: one `pipe.program` of `pipe.inst` instructions per
    rank, which `verify-schedule` proves safe.
  }];
  let hasOperationAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// The discardable attribute that assigns an op to a pipeline stage.
    static constexpr ::llvm::StringLiteral kStageAttrName = "pipe.stage";
    /// On the module: how many stages the plan has. With model chunks these
    /// are virtual stages, `chunks` per rank.
    static constexpr ::llvm::StringLiteral kNumStagesAttrName =
        "pipe.num_stages";
    /// On the module: model chunks per rank (interleaved schedules); virtual
    /// stage `c * ranks + r` is chunk c of rank r. Absent means 1.
    static constexpr ::llvm::StringLiteral kChunksAttrName = "pipe.chunks";
    /// On a segment function: which segment it is ("forward", "backward",
    /// "backward_input", "backward_weight", "optimizer").
    static constexpr ::llvm::StringLiteral kSegmentAttrName = "pipe.segment";
    /// On the module: samples per microbatch.
    static constexpr ::llvm::StringLiteral kMicrobatchSizeAttrName =
        "pipe.microbatch_size";
    /// On the module: replicas (data-parallel ranks) of each stage.
    static constexpr ::llvm::StringLiteral kReplicasAttrName = "pipe.replicas";
    /// On the module of a build planned on a cluster (dpc compile --cluster):
    /// each stage's speed, its slowest replica's device's relative to the
    /// costs' device. The schedule divides the stage's compute costs by it;
    /// absent means 1.
    static constexpr ::llvm::StringLiteral kStageSpeedsAttrName =
        "pipe.stage_speeds";
    /// On the module of a build planned on a cluster: each rank's device
    /// memory in bytes (0: no limit), to which verify-schedule holds the
    /// rank's peak.
    static constexpr ::llvm::StringLiteral kRankMemoryAttrName =
        "pipe.rank_memory_bytes";
    /// On the module (a unit attribute): a forward-only build. @main returns
    /// the model's outputs, with no loss first, and nothing is trained.
    static constexpr ::llvm::StringLiteral kInferenceAttrName =
        "pipe.inference";
    /// On the module: "bf16" for a mixed-precision build (convolutions and
    /// matmuls read bf16 inputs, f32 tensors cross stages as bf16); absent
    /// or "fp32" otherwise.
    static constexpr ::llvm::StringLiteral kPrecisionAttrName =
        "pipe.precision";
    /// On the module of a build priced by a profile that measured messages
    /// (apply-profile): milliseconds a message between ranks takes once both
    /// sides started it, which build-schedule charges every transfer.
    static constexpr ::llvm::StringLiteral kMessageLatencyAttrName =
        "pipe.message_latency_ms";
    /// On the module of a build priced by a profile whose message run shared
    /// the cores (apply-profile): milliseconds from a transfer's start until
    /// a rank waiting for it resumes on the shared cores, which
    /// build-schedule's simulation charges such a rank (docs/SCHEDULES.md).
    static constexpr ::llvm::StringLiteral kWakeLatencyAttrName =
        "pipe.wake_latency_ms";
    /// On the module of a build priced by a profile whose run on several
    /// stages gave each rank a core (apply-profile): the factor by which
    /// those ranks computed longer than the profiled times, which every
    /// cost of the build carries.
    static constexpr ::llvm::StringLiteral kComputeFactorAttrName =
        "pipe.compute_factor";
    /// On the module: the stages whose backward recomputes their forward
    /// (dpc compile --recompute), in increasing order.
    static constexpr ::llvm::StringLiteral kRecomputeAttrName =
        "pipe.recompute";
    /// On a forward op cloned into a backward by the recompute pass (a unit
    /// attribute).
    static constexpr ::llvm::StringLiteral kRecomputedAttrName =
        "pipe.recomputed";
    /// On an argument of @main (a unit attribute): the labels, which the
    /// last stage reads. Every other argument is a data input of the first
    /// stage, of any element type (images, token ids).
    static constexpr ::llvm::StringLiteral kLabelsAttrName = "pipe.labels";

    /// Adds the attributes of PipeAttrs.td (PipeAttrs.cpp).
    void registerAttributes();
  }];
}

class Pipe_Op<string mnemonic, list<Trait> traits = []>
    : Op<Pipe_Dialect, mnemonic, traits>;

#endif // DPC_DIALECTS_PIPE_IR_PIPEBASE_TD
