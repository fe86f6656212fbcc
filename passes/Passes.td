//===- Passes.td - dpc compiler passes ---------------------*- tablegen -*-===//
//
// Every pass of the pipeline in DESIGN.md, one file each, named alike:
// AnnotateCosts.cpp <-> AnnotateCostsPass <-> --dpc-annotate-costs <->
// test/Transforms/annotate-costs.mlir.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_PASSES_TD
#define DPC_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"dpc-autodiff", "::mlir::ModuleOp"> {
  let summary = "build the training step: loss, backward and optimizer";
  let description = [{
    Turns the forward function `@main` into one microbatch of a training
    step. It appends a label argument and the loss to the model's output,
    builds the backward pass from each op's gradient rule
    (`GradientOpInterface`), and ends with one optimizer update per
    parameter. `@main` then returns the loss followed by the model's output.

    Only values that depend on a parameter get gradients, so no gradient is
    built for the model's input. Input and weight gradients stay separate
    ops: zero-bubble schedules run the weight gradients later.

    With `microbatches = M` the loss of a microbatch of N samples is scaled
    by 1/(M N): the microbatches of a minibatch then sum to its mean loss, as
    `torch.nn.CrossEntropyLoss()` over the whole minibatch gives, and so do
    their gradients. PipeDream updates after every microbatch, so `dpc
    compile --schedule pipedream` passes `microbatches = 1`.

    `optimizer` is `sgd`, `adam` or `adamw` (`nn.adam_update` with
    `decoupled`: torch.optim.AdamW's weight decay). Parameters whose name
    matches one of `no-decay`'s glob patterns update with weight decay 0, as
    GPT and BERT recipes leave out biases and norms.

    `loss` is `softmax-cross-entropy` (`nn.softmax_cross_entropy` on logits
    with an integer class per row) or `mse` (`nn.mse_loss` against a float
    target of the output's shape, whose mean runs over every element, as
    `torch.nn.MSELoss()`; N is then the microbatch's elements).

    `class-axis` names the logits' class dimension for softmax-cross-entropy
    when it is not the last: logits [N, C, d1, ...] with labels [N, d1,
    ...], as `torch.nn.CrossEntropyLoss` takes per-pixel logits (class axis
    1). The logits are transposed to put the classes last before the loss,
    and that transposed tensor is the step's output (the predictions a
    training build writes); its gradient goes back through the transpose.

    With `has-ignore-index`, rows labelled `ignore-index` are left out of the
    loss and its gradient, as `torch.nn.CrossEntropyLoss(ignore_index=N)`
    does, and the mean runs over the minibatch's other rows: a count of the
    data, not of the shapes, so the loss ops carry `ignore_index` and take
    their scale from the run time instead of a constant.
  }];
  let dependentDialects = ["::mlir::dpc::nn::NNDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"softmax-cross-entropy\"",
           "Loss appended to the model's output: softmax-cross-entropy or "
           "mse">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Microbatches per minibatch (the loss is their mean)">,
    Option<"classAxis", "class-axis", "int64_t", /*default=*/"-1",
           "The logits' class dimension for softmax-cross-entropy (-1: the "
           "last)">,
    Option<"hasIgnoreIndex", "has-ignore-index", "bool", /*default=*/"false",
           "Whether rows labelled ignore-index are left out of the loss">,
    Option<"ignoreIndex", "ignore-index", "int64_t", /*default=*/"-100",
           "The label of rows the loss leaves out (with has-ignore-index)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "Optimizer whose update ends the step">,
    Option<"lr", "lr", "double", /*default=*/"0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9",
           "Adam's decay of the first moment">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999",
           "Adam's decay of the second moment">,
    Option<"eps", "eps", "double", /*default=*/"1e-8",
           "Adam's denominator term">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Weight decay (L2 penalty added to the gradient; adamw: decoupled)">,
    Option<"labelSmoothing", "label-smoothing", "double", /*default=*/"0.0",
           "softmax-cross-entropy's label smoothing in [0, 1), as torch's "
           "CrossEntropyLoss(label_smoothing)">,
    Option<"noDecay", "no-decay", "std::string", /*default=*/"\"\"",
           "Comma-separated glob patterns (fnmatch) of parameter names that "
           "get no weight decay, e.g. '*.bias,*norm*'">,
  ];
}

def SelectConvAlgorithmPass
    : Pass<"dpc-select-conv-algorithm", "::mlir::ModuleOp"> {
  let summary = "choose how each convolution is computed: direct or Winograd";
  let description = [{
    Sets `algorithm` on every `nn.conv2d`. Winograd's F(4x4, 3x3) computes a
    3x3, stride-1, undilated, ungrouped f32 convolution padded by 0 or 1 on
    every side from 4x4 output tiles with fewer multiplications than the
    direct kernel, at the cost of transforming each tile in and out; it
    pays once a layer has enough channels and output positions.
    `algorithm` is

    - `auto`: Winograd where it applies and pays (at least 64 input and
      output channels and an output of at least 7x7, 32 and 8x8, or 16 and
      16x16; the rule and the measurements behind it are in
      docs/ARCHITECTURE.md), direct elsewhere and in a bf16 build (the
      Winograd kernels are f32);
    - `winograd`: Winograd wherever it applies (an error in a bf16 build);
    - `direct`: direct everywhere.

    Runs before annotate-costs, which prices each convolution by its
    algorithm, and before autodiff, which gives a convolution's gradients
    its algorithm.

    ```mlir
    %y = nn.conv2d %x, %w {algorithm = "winograd", pads = array<i64: 1, 1, 1, 1>}
        : (tensor<16x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x28x28xf32>
    ```
  }];
  let dependentDialects = ["::mlir::dpc::nn::NNDialect"];
  let options = [
    Option<"algorithm", "algorithm", "std::string", /*default=*/"\"auto\"",
           "auto, winograd or direct">,
  ];
}

def AnnotateCostsPass : Pass<"dpc-annotate-costs", "::mlir::ModuleOp"> {
  let summary = "attach analytic forward/backward costs to every nn op";
  let description = [{
    Estimates, for each forward `nn` op, the floating-point operations and
    bytes moved by the op and by its gradient ops, and converts them to
    milliseconds with a roofline model of the target: time is the larger of
    flops / peak compute rate and bytes / memory bandwidth. The result is the
    discardable attribute `nn.cost`:

    ```mlir
    %y = nn.relu %x {nn.cost = {forward_ms = 1.2e-3 : f64, backward_ms = ...,
                                flops = 4704 : i64, bytes = 37632 : i64,
                                activation_bytes = 18816 : i64,
                                parameter_bytes = 0 : i64}} : tensor<...>
    ```

    Each costed op also gets `nn.node`, the unique name by which plans,
    profiles and traces refer to it: its location's name (for an imported
    model, the ONNX node; the second op of one node gets ".1") or its op
    name and position. Ops that already have one keep it: `autodiff` gives
    each gradient op the node of the forward op it differentiates.

    `partition-stages` and `dpc plan` read these costs; a measured profile
    (`dpc profile`) replaces them when given.
  }];
  let dependentDialects = ["::mlir::dpc::nn::NNDialect"];
  let options = [
    Option<"peakGflops", "peak-gflops", "double", /*default=*/"100.0",
           "Peak compute rate of one device in GFLOP/s">,
    Option<"memoryGBps", "memory-gbps", "double", /*default=*/"20.0",
           "Memory bandwidth of one device in GB/s">,
  ];
}

def ApplyProfilePass : Pass<"dpc-apply-profile", "::mlir::ModuleOp"> {
  let summary = "price the outlined segments' ops with measured times";
  let description = [{
    Replaces the analytic `time_ms` in the `nn.cost` of every op of the
    outlined segments by the times `dpc profile` measured for its model node
    (`nn.node`): a node's forward time is shared among its ops in forward
    segments, its backward time among its ops in the backward segments, in
    the proportions of their analytic times. Ops of nodes the profile does
    not have (and ops of no node) keep their analytic time scaled by the
    ratio of measured to analytic time over the measured nodes. Runs after
    `outline-stages`, so that `build-schedule`, the simulator and the
    manifest's stage costs use what was measured.

    With `batch` and `length`, the model is priced at that microbatch shape
    from a profile of several shapes (`dpc profile --seq-buckets`): the
    shape's own times when it was measured, the fit over the measured
    shapes otherwise.
  }];
  let options = [
    Option<"profile", "profile", "std::string", /*default=*/"\"\"",
           "profile.json written by dpc profile">,
    Option<"batch", "batch", "int64_t", /*default=*/"0",
           "Microbatch size to price at (a profile of several shapes)">,
    Option<"length", "length", "int64_t", /*default=*/"0",
           "Sequence length to price at (a profile of several shapes)">,
  ];
}

def PartitionStagesPass : Pass<"dpc-partition-stages", "::mlir::ModuleOp"> {
  let summary = "assign the forward ops of @main to pipeline stages";
  let description = [{
    Builds the planner's graph from the forward pass of `@main` (one node per
    op with an `nn.cost`, edges along the values, the function's arguments as
    data inputs), runs the planner (lib/planner: exact contiguous splits of
    several topological orders, replicas, memory limit, any DAG) and writes
    the answer back: every op gets `pipe.stage`, a parameter read gets the
    stage of the op that uses it, and the module gets `pipe.num_stages` and
    `pipe.replicas` (replicas per stage).

    With `cluster` the planner plans on a cluster file's devices (their
    speeds, memory and links) instead of `devices` equal ones, choosing the
    stages, replicas and which device runs each stage; with `stages` too it
    plans that many straight stages on them. plan.json names each stage's
    devices.

    It runs before `autodiff`, which gives each gradient op the stage of the
    forward op it differentiates; see docs/ARCHITECTURE.md. With `stages`
    set the pipeline is straight (one device per stage); with `devices` the
    planner also chooses the stage count and replicas. `replicas` pins the
    replicas of each of `stages` stages instead (hybrid data parallelism the
    user chose): the cuts are planned straight, the plan is then evaluated
    with the replicas. For the synchronous
    schedules the planner minimises the predicted step time; for
    `pipedream`, the bottleneck stage.

    With `virtual-stages = v` (interleaved schedules) the model is cut into
    `stages * v` virtual stages, one device each for planning; the module
    gets `pipe.num_stages = stages * v` and `pipe.chunks = v`, and virtual
    stage `c * stages + r` becomes chunk c of rank r.

    With `fixed-stages` the planner does not run: the list gives the stage
    of every op of `@main` except `nn.param`, in order, as the planner put
    them on another specialisation of the same model (a shape bucket of
    `dpc compile --seq-buckets`), and the rest (parameters, module
    attributes, `replicas`) follows as for a planned partition.
  }];
  let dependentDialects = ["::mlir::dpc::pipe::PipeDialect"];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Number of stages, one device each">,
    Option<"devices", "devices", "int64_t", /*default=*/"0",
           "Devices to plan over; the planner picks stages and replicas">,
    ListOption<"replicas", "replicas", "int64_t",
               "Ranks per stage (with stages): the cuts are planned as for "
               "one rank each, then stage s runs on replicas[s] ranks">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "Pipeline schedule the plan is for">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Microbatches per minibatch">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Model chunks per rank (interleaved schedules)">,
    Option<"bandwidth", "bandwidth", "double", /*default=*/"1e9",
           "Bytes per second between devices">,
    Option<"memoryLimit", "memory-limit", "double", /*default=*/"0",
           "Bytes per device the plan must fit (0: no limit)">,
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "Cluster description (JSON, docs/PLANNER.md) to plan on instead "
           "of devices: each device's speed and memory, and the links">,
    Option<"planOutput", "plan-output", "std::string", /*default=*/"\"\"",
           "Write the plan as JSON (plan.json) to this file">,
    Option<"graphOutput", "graph-output", "std::string", /*default=*/"\"\"",
           "Write the planner's graph (profile.json format) to this file">,
    Option<"profile", "profile", "std::string", /*default=*/"\"\"",
           "Measured costs (dpc profile's profile.json) to plan with">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "Optimizer the step will use (sgd, adam): its state per "
           "parameter counts against the memory limit">,
    Option<"shardOptimizer", "shard-optimizer", "bool", /*default=*/"false",
           "Each of a stage's R replicas keeps 1/R of its optimizer state "
           "(ZeRO stage 1), which the memory model counts">,
    ListOption<"fixedStages", "fixed-stages", "int64_t",
               "The stage of each op of @main but nn.param, in order, "
               "instead of planning">,
  ];
}

def InsertSendRecvPass : Pass<"dpc-insert-send-recv", "::mlir::ModuleOp"> {
  let summary = "put a send/recv pair on every value that crosses stages";
  let description = [{
    For every value computed on one stage and used on another, inserts
    `pipe.send` on the producing stage right after the value is computed and
    `pipe.recv` on the consuming stage, and rewires that stage's uses to the
    received value. Forward activations and backward gradients are handled
    alike. Pairs are deduplicated: one per value and destination stage, even
    when several ops there use it; a skip connection to a stage further on
    gets its own direct pair. Function arguments (the microbatch's data and
    labels) never travel: every stage that needs data reads it itself.

    Tags number the pairs in program order, so sender and receiver agree on
    them without coordination.
  }];
  let dependentDialects = ["::mlir::dpc::pipe::PipeDialect"];
}

def InsertStashPass : Pass<"dpc-insert-stash", "::mlir::ModuleOp"> {
  let summary = "stash forward values that the backward pass needs";
  let description = [{
    A stage runs a microbatch's forward and, later, its backward, with other
    microbatches in between; every forward value the backward reads must be
    kept per microbatch until then. For each such value on each stage this
    pass inserts `pipe.stash` after the value is available and `pipe.restore`
    before its first backward use, and rewires the backward uses to the
    restored value. The forward pass is everything up to and including the
    loss (`nn.softmax_cross_entropy` or `nn.mse_loss`) that `autodiff`
    appended; the rest is backward and optimizer. Keys name the value (its
    op's location and result number) so that lit tests and traces stay
    readable.
  }];
  let dependentDialects = ["::mlir::dpc::pipe::PipeDialect"];
}

def RecomputePass : Pass<"dpc-recompute", "::mlir::ModuleOp"> {
  let summary = "recompute a stage's forward in its backward instead of "
                "keeping its activations";
  let description = [{
    Activation recomputation: on each chosen stage, the forward values its
    backward reads are computed again at the start of the stage's backward,
    from the stage's inputs (received activations, the data, parameters),
    instead of being kept per microbatch in flight. The pass clones the
    forward ops those values depend on right before the stage's first
    backward op and rewires the backward reads to the clones; run before
    `insert-stash`, which then stashes only what the clones and the
    gradients read from the forward: the stage's inputs and the results of
    ops that are not recomputed.

    Recomputed are the `nn` ops without memory effects of the stage's
    forward, losses excepted. `nn.dropout` is among them: its mask is drawn
    from the seed, step, microbatch and `mask_id`, so the clone draws the
    forward's mask. `nn.batch_norm_stats` is not: it updates the running
    statistics, which must happen once, so its small result is stashed.
    Clones carry `pipe.recomputed`, so that costs and traces can tell them
    from the gradient ops. The module gets `pipe.recompute`, the stages
    recomputed. An inference module is left as it is.
  }];
  let dependentDialects = ["::mlir::dpc::pipe::PipeDialect"];
  let options = [
    Option<"all", "all", "bool", /*default=*/"false",
           "Recompute every stage">,
    ListOption<"stages", "stages", "int64_t",
               "The stages to recompute (with all unset)">,
  ];
}

def OutlineStagesPass : Pass<"dpc-outline-stages", "::mlir::ModuleOp"> {
  let summary = "split @main into per-stage segment functions";
  let description = [{
    Replaces `@main` (partitioned, with transfers and stashes inserted) by
    the segment functions the runtime's executor calls, for every stage `s`:
    `@stage<s>_forward`, `@stage<s>_backward` (the whole backward of a
    microbatch), `@stage<s>_backward_input` and `@stage<s>_backward_weight`
    (its two halves, for zero-bubble schedules) and `@stage<s>_optimizer`.
    Each is a function without arguments or results tagged with
    `pipe.stage` and `pipe.segment`.

    Function arguments become `pipe.input` / `pipe.labels` reads; `@main`'s
    results (loss and output) become `pipe.report_loss` /
    `pipe.report_output` on the last stage. Each optimizer update
    (`nn.sgd_update`, `nn.adam_update`) becomes a `pipe.accumulate_grad` in
    the backward segments and, in the optimizer segment, an update from
    `pipe.accumulated_grad`. Parameter reads and
    restores are re-read in every segment that uses them. The backward-input
    half is what the stage's outgoing gradients depend on; values it computes
    that the weight half needs are stashed between the two.
  }];
  let dependentDialects = ["::mlir::dpc::pipe::PipeDialect",
                           "::mlir::func::FuncDialect"];
}

def LowerToRuntimePass : Pass<"dpc-lower-to-runtime", "::mlir::ModuleOp"> {
  let summary = "lower one stage's segments to calls into the runtime C ABI";
  let description = [{
    Takes a module holding the segment functions of exactly one stage (after
    `outline-stages`, with the other stages' functions removed) and rewrites
    it into the LLVM dialect: each segment becomes
    `llvm.func @dpc_segment_<segment>(%ctx: !llvm.ptr)`, every tensor a
    pointer, every op a call declared in include/dpc/runtime/Abi.h (kernels
    for compute, context functions for parameters, data, transfers, stashes
    and reports). Results get scratch memory from `dpc_alloc`; reshapes alias
    their input. Shapes and attributes become constant arrays.

    It also emits `dpc_rank_manifest`, the JSON the runtime reads to size
    its buffers: parameter ids, transfer tags and sizes, stash keys, data
    inputs, labels and the output. Missing segments are defined empty, so
    every rank object defines the whole ABI.

    In a bf16 build (`pipe.precision = "bf16"` on the module) convolutions
    and matmuls call the `_bf16` kernels, the manifest says
    `"precision": "bf16"`, and every f32 transfer is marked
    `"wire": "bf16"`: the runtime sends it as bf16.

    With `profile`, every kernel call of the forward and backward segments
    is bracketed by `dpc_profile_begin`/`dpc_profile_end`, and the manifest
    lists each profiled op with its model node (`nn.node`) and phase: the
    build `dpc profile` measures.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"profile", "profile", "bool", /*default=*/"false",
           "Time every kernel call (for dpc profile)">,
  ];
}

def BuildSchedulePass : Pass<"dpc-build-schedule", "::mlir::ModuleOp"> {
  let summary = "build the per-rank instruction streams";
  let description = [{
    From the outlined segments (their `nn.cost` times, parameter, stash and
    transfer sizes) builds the instruction stream of every rank for the
    chosen schedule with lib/schedule, simulates it, and writes it as
    schedule.json to `schedule-output`; `verify-schedule` then checks it.
    With `schedule=auto` it builds and simulates 1f1b, zb-h1 and zb-2p and
    keeps a later one only when its step is more than 2% shorter than the
    kept one's and every rank fits `memory-limit` (and a cluster's per-rank
    memory). Steps are simulated back to back, as the runtime runs them.
    The simulation charges every transfer the module's
    `pipe.message_latency_ms` and, with fewer `cores` than ranks, shares
    the cores among the ranks computing at a moment and lets a rank that
    waits for a message resume no sooner than `pipe.wake_latency_ms` after
    the transfer starts; schedule.json records the cores and latencies.
    The simulated step time (a step of a long run: the period of
    back-to-back steps) and the bubble fraction are attached to the module
    as `pipe.predicted_step_ms` and `pipe.predicted_bubble`, and with
    `trace-output` the predicted timeline is written as a Chrome trace (one
    track per rank).

    With `emit-program` the streams also go into the module as a
    `pipe.schedule` op (one `pipe.program` of `pipe.inst` ops per rank),
    replacing any earlier one, so that `verify-schedule` needs no file and
    the program can be read, edited and re-verified as IR.
  }];
  let dependentDialects = ["::mlir::dpc::pipe::PipeDialect"];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe, 1f1b, pipedream, interleaved, zb-h1, zb-2p, or auto "
           "(1f1b, zb-h1 or zb-2p, whichever simulates the shorter step "
           "within the memory limit)">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Microbatches per minibatch">,
    Option<"verticalSync", "vertical-sync", "bool", /*default=*/"false",
           "PipeDream: every stage uses the weight version stage 0 used">,
    Option<"memoryLimit", "memory-limit", "double", /*default=*/"0",
           "auto: bytes per rank the chosen kind must fit (0: no limit)">,
    Option<"reduce", "reduce", "std::string", /*default=*/"\"allreduce\"",
           "How replicas reduce their gradients: allreduce or preduce">,
    Option<"shardOptimizer", "shard-optimizer", "bool", /*default=*/"false",
           "ZeRO stage 1: the replicas of a replicated stage split its "
           "optimizer state and update (schedule.json's shard_optimizer; "
           "each rank's resident bytes count its share); an error without "
           "a replicated stage">,
    Option<"cores", "cores", "int64_t", /*default=*/"0",
           "Cores the ranks share on one machine (0: a core per rank); with "
           "fewer than the ranks the simulation shares them">,
    Option<"scheduleOutput", "schedule-output", "std::string",
           /*default=*/"\"\"", "Write schedule.json to this file">,
    Option<"traceOutput", "trace-output", "std::string", /*default=*/"\"\"",
           "Write the predicted timeline as a Chrome trace to this file">,
    Option<"emitProgram", "emit-program", "bool", /*default=*/"false",
           "Also put the streams into the module as a pipe.schedule op">,
  ];
}

def FuseElementwisePass : Pass<"dpc-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "group chains of elementwise ops into nn.fused regions";
  let description = [{
    Within each segment function, groups chains of elementwise ops on f32
    tensors (nn.add, nn.sub, nn.mul and nn.div with operands of the result's
    shape or broadcast over a run of its dimensions, such as a bias over the
    last one or a scalar; nn.relu; the functions of UnaryFunctions.def that
    lowering's loop computes; and their gradients) into `nn.fused` ops of one
    result, which lower-to-runtime turns into one generated loop instead of
    one runtime call and one buffer per op. An op joins the group of the op
    that reads its result only if nothing else reads it: a value that is
    stashed for the backward pass, sent to another stage, returned or read by
    any other op stays a buffer of its own. Runs before plan-memory, so the
    values inside a group get no place in the arena. CPU targets only: the
    loop runs on the host.
  }];
  let dependentDialects = ["::mlir::dpc::nn::NNDialect"];
}

def PropagateLayoutsPass
    : Pass<"dpc-propagate-layouts", "::mlir::ModuleOp"> {
  let summary = "keep CPU activations channel-blocked between convolutions";
  let description = [{
    oneDNN's convolutions compute on channel-blocked activations (nChw16c:
    N, C/16, H, W, 16 in memory); handed plain NCHW buffers, a convolution
    reorders its inputs into that layout and its output back on every call.
    Within each segment function this pass makes the result of every
    convolution and convolution input gradient with a multiple of 16
    channels blocked (`nn.layout = "nChw16c"` on the op), and so the result
    of every batch normalization, batch-norm input gradient and same-shape
    elementwise op (nn.fused included) one of whose activation operands is
    blocked. Convolutions, their filter and bias gradients, batch-norm
    statistics and gradients and `pipe.stash` read either layout; a
    `pipe.restore` yields the layout its key was stashed in. Every other op
    reads plain values: where it reads a blocked one, and where a follower's
    operands disagree, an `nn.relayout` converts the value once for all its
    later readers in the function. Values are unchanged; lower-to-runtime
    tells each kernel its operands' layouts. CPU targets only; runs after
    fuse-elementwise and before plan-memory.

    ```mlir
    %y = nn.conv2d %x, %w {nn.layout = "nChw16c", pads = array<i64: 1, 1, 1, 1>}
        : (tensor<16x64x28x28xf32>, tensor<64x64x3x3xf32>) -> tensor<16x64x28x28xf32>
    %p = nn.relayout %y : tensor<16x64x28x28xf32>
    ```
  }];
  let dependentDialects = ["::mlir::dpc::nn::NNDialect"];
}

def PlanMemoryPass : Pass<"dpc-plan-memory", "::mlir::ModuleOp"> {
  let summary = "static arena offsets for every segment's tensors";
  let description = [{
    Gives every tensor a segment computes a fixed offset in one scratch arena
    per segment, from the tensors' lifetimes in the segment: a buffer is live
    from the op that writes it to its last reader (reshapes alias their input
    and extend its life), and buffers whose lifetimes do not overlap share
    memory (first fit, 64-byte aligned). Each allocating op gets
    `pipe.offset`, each segment `pipe.arena_bytes`; `lower-to-runtime` then
    allocates the arena once per segment call.

    With `schedule`, the rank's peak memory is the schedule verifier's peak
    (parameters with their gradient and optimizer state, weight versions,
    stash slots for the microbatches in flight, transfer buffers) with each
    compute instruction's segment arena counted while it runs; the module
    gets `pipe.peak_memory`, one entry per stage.

    With `memory-limit`, or devices of their own memory
    (`pipe.rank_memory_bytes`), this peak is the one held to the limits:
    verify-schedule's check counts no arena, and on a 0.5 B-parameter GPT
    the arenas are a sixth of a rank's peak. A rank over its limit fails the
    pass with verify-schedule's advice (by how much, and which lever would
    close the gap).
  }];
  let dependentDialects = ["::mlir::dpc::pipe::PipeDialect"];
  let options = [
    Option<"scheduleFile", "schedule", "std::string", /*default=*/"\"\"",
           "The rank's schedule.json, for stash slots and in-flight buffers">,
    Option<"memoryLimit", "memory-limit", "double", /*default=*/"0",
           "Bytes a rank may hold, arenas counted (0: the devices' own; "
           "< 0: none)">,
    Option<"recompute", "recompute", "bool", /*default=*/"false",
           "Whether the build recomputes already (for the advice)">,
  ];
}

def VerifySchedulePass : Pass<"dpc-verify-schedule", "::mlir::ModuleOp"> {
  let summary = "prove a schedule deadlock-free, complete and within memory";
  let description = [{
    Checks a schedule's instruction streams against themselves and against
    the outlined IR, before anything runs. The streams are the file
    `schedule` (a schedule.json, as `build-schedule` writes it or as written
    by hand) when given, else the module's `pipe.schedule` op (from
    `build-schedule`'s `emit-program`, or written by hand). It proves that
    - simulating all ranks together, every send meets its receive in an
      order that cannot deadlock, with blocking (rendezvous) and with
      non-blocking transfers;
    - every restore has an earlier stash and every stash is freed; the
      optimizer runs as often as the schedule kind requires;
    - each rank's peak memory (parameters, weight versions, stashed
      activations, in-flight buffers) stays under `memory-limit`;
    - the schedule has one rank per stage, and every transfer the IR makes
      between two stages is carried by a message of the schedule.
    A violation fails compilation with the rank, the instruction and the
    microbatch; for a `pipe.schedule` op the error is reported at the
    `pipe.inst` it blames (at the `pipe.program` when it blames no one
    instruction, such as a missing optimizer step), with notes at the other
    instructions involved. The last check needs the outlined segment
    functions: a file schedule is always checked against them, a
    `pipe.schedule` op only when the module has them.
  }];
  let dependentDialects = ["::mlir::dpc::pipe::PipeDialect"];
  let options = [
    Option<"scheduleFile", "schedule", "std::string", /*default=*/"\"\"",
           "The schedule.json to verify (default: the pipe.schedule op)">,
    Option<"memoryLimit", "memory-limit", "double", /*default=*/"0",
           "Bytes per rank the schedule must fit (0: the devices' own; "
           "< 0: none)">,
    Option<"recompute", "recompute", "bool", /*default=*/"false",
           "The build recomputes activations (said when over the limit)">,
  ];
}

#endif // DPC_PASSES_PASSES_TD
