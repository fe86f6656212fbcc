//===- CompileCommand.cpp - dpc compile: options --------------------------===//
//
// Parses and checks every `dpc compile` option of DESIGN.md: the parser's
// declarations, the checks of options against each other and against what
// the runtime can run, the defaults that depend on the target, and the
// options recorded for compile.json. compileModel (Compile.cpp) then does
// the work.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Compile.h"

#include "dpc/schedule/Choose.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/ScheduleOptions.h"
#include "dpc/support/CommandLine.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;

namespace dpc::tools {
namespace {

using cli::oneOf;

// The largest microbatch size a build accepts. The runtime moves a
// microbatch's activations between stages as one MPI message, whose size is
// an int count of bytes: this many samples of a single float each fill it.
constexpr int64_t kMaxMicrobatchSize = schedule::kMaxMessageBytes / 4;

// Refuses microbatch counts and sizes the runtime cannot run, before any
// work. The exact checks (the stage count the planner picks for --devices,
// the bytes each boundary sends) follow in build-schedule.
std::string checkRuntimeLimits(const CompileOptions &o,
                               const cli::ArgParser &p) {
  // --devices lets the planner pick the stages, at least one.
  int64_t stages = p.given("stages")     ? o.stages
                   : p.given("replicas") ? int64_t(o.replicas.size())
                                         : 1;
  int64_t virtualStages =
      std::min<int64_t>(stages, schedule::kScheduleTagLimit) *
      std::min<int64_t>(o.virtualStages, schedule::kScheduleTagLimit);
  if (virtualStages <= schedule::kScheduleTagLimit / 2) {
    int64_t most = schedule::maxMicrobatches(int(virtualStages));
    if (o.microbatches > most)
      return "--microbatches " + std::to_string(o.microbatches) +
             " is more than the " + std::to_string(most) + " that " +
             std::to_string(virtualStages) +
             (virtualStages == 1     ? " stage"
              : o.virtualStages == 1 ? " stages"
                                     : " virtual stages") +
             " can run: every message of a step has its own MPI tag (2 per "
             "microbatch and stage), and the runtime's stop at " +
             std::to_string(schedule::kScheduleTagLimit) +
             " (MPI guarantees 32767; the runtime keeps the rest)";
  }
  if (p.given("microbatch-size") && o.microbatchSize > kMaxMicrobatchSize)
    return "--microbatch-size " + std::to_string(o.microbatchSize) +
           " is more than " + std::to_string(kMaxMicrobatchSize) +
           ": a microbatch's activations travel between stages as one MPI "
           "message of at most " +
           std::to_string(schedule::kMaxMessageBytes) +
           " bytes (an int), 4 bytes a sample at the least";
  return "";
}

// --shard-optimizer needs optimizer state to split and replicas to split
// it among (with --devices or --cluster, build-schedule checks the plan).
std::string checkShardOptimizer(const CompileOptions &o,
                                const cli::ArgParser &p) {
  if (!o.shardOptimizer || o.inference)
    return "";
  if (o.optimizer == "sgd" && !(o.momentum > 0))
    return "--shard-optimizer splits the optimizer's state, and SGD without "
           "--momentum keeps none: give --momentum or --optimizer adam";
  if (o.reduce == "preduce")
    return "--shard-optimizer cannot be combined with --reduce preduce, whose "
           "replicas adopt replica 0's weights instead of updating their "
           "own shares";
  bool replicated = std::any_of(o.replicas.begin(), o.replicas.end(),
                                [](int64_t r) { return r > 1; });
  if (!replicated && !p.given("devices") && !p.given("cluster"))
    return "--shard-optimizer splits a replicated stage's optimizer state, "
           "but no stage has replicas: give --replicas with a count above "
           "1, or --devices";
  return "";
}

// Checks relations between options that the parser cannot see one at a time.
std::string checkOptions(const CompileOptions &o, const cli::ArgParser &p) {
  if (p.given("stages") && p.given("devices"))
    return "give --stages or --devices, not both";
  if (p.given("stages") && o.stages < 1)
    return "--stages expects a positive count, got " + std::to_string(o.stages);
  if (p.given("devices") && o.devices < 1)
    return "--devices expects a positive count, got " +
           std::to_string(o.devices);
  if (o.microbatches < 1)
    return "--microbatches expects a positive count, got " +
           std::to_string(o.microbatches);
  if (p.given("microbatch-size") && o.microbatchSize < 1)
    return "--microbatch-size expects a positive size, got " +
           std::to_string(o.microbatchSize);
  if (o.virtualStages < 1)
    return "--virtual-stages expects a positive count";
  if (std::string problem = checkRuntimeLimits(o, p); !problem.empty())
    return problem;
  if (o.verticalSync && o.schedule != "pipedream")
    return "--vertical-sync applies only to --schedule pipedream";
  if (o.virtualStages > 1 && o.schedule != "interleaved")
    return "--virtual-stages applies only to --schedule interleaved";
  if (p.given("replicas")) {
    if (p.given("devices"))
      return "give --replicas or --devices, not both";
    if (p.given("stages") && int64_t(o.replicas.size()) != o.stages)
      return "--replicas lists " + std::to_string(o.replicas.size()) +
             " stages but --stages is " + std::to_string(o.stages);
    if (o.schedule == "pipedream" || o.schedule == "interleaved")
      return "--replicas needs a synchronous schedule with one model chunk "
             "per rank (gpipe, 1f1b, zb-h1, zb-2p), not " +
             o.schedule;
  }
  if (o.reduce == "preduce" &&
      (o.replicas.size() != 1 || o.replicas.front() < 2))
    return "--reduce preduce needs one replicated stage (--replicas R with "
           "R > 1): a replica that falls behind skips steps, which other "
           "stages cannot";
  if (std::string problem = checkShardOptimizer(o, p); !problem.empty())
    return problem;
  if (o.schedule == "interleaved" && p.given("devices"))
    return "--schedule interleaved needs --stages (ranks), not --devices";
  if (p.given("cluster")) {
    for (const char *other : {"devices", "bandwidth"})
      if (p.given(other))
        return std::string("--cluster gives the devices and their links; "
                           "drop --") +
               other;
    if (p.given("replicas") || o.schedule == "interleaved")
      return "--cluster lets the planner pick the replicas, one model chunk "
             "per rank: drop --replicas and --schedule interleaved";
  }
  if (!(o.bandwidth > 0))
    return "--bandwidth expects a positive rate";
  if (!(o.lr > 0))
    return "--lr expects a positive learning rate";
  if (!(o.momentum >= 0 && o.momentum < 1))
    return "--momentum expects a value in [0, 1)";
  if (!(o.weightDecay >= 0))
    return "--weight-decay expects a non-negative value";
  if (!(o.eps > 0))
    return "--eps expects a positive value";
  if (o.optimizer != "sgd" && p.given("momentum"))
    return "--momentum applies to --optimizer sgd; Adam takes --betas";
  if (o.optimizer == "sgd")
    for (const char *adam : {"betas", "eps"})
      if (p.given(adam))
        return std::string("--") + adam +
               " applies to --optimizer adam or adamw";
  if (p.given("no-decay") && !p.given("weight-decay"))
    return "--no-decay names parameters left out of --weight-decay; give "
           "--weight-decay too";
  if (p.given("class-axis") && o.loss != "softmax-cross-entropy")
    return "--class-axis applies to --loss softmax-cross-entropy";
  if (p.given("class-axis") && o.classAxis < 1 && o.classAxis != -1)
    return "--class-axis expects a dimension of the logits after the batch "
           "(1 for [N, C, H, W]) or -1 (the last)";
  if (o.ignoreIndex && o.loss != "softmax-cross-entropy")
    return "--ignore-index applies to --loss softmax-cross-entropy";
  if (!(o.labelSmoothing >= 0 && o.labelSmoothing < 1))
    return "--label-smoothing expects a value in [0, 1)";
  if (p.given("label-smoothing") && o.loss != "softmax-cross-entropy")
    return "--label-smoothing applies to --loss softmax-cross-entropy";
  if (o.inference) {
    for (const char *training :
         {"devices", "replicas", "reduce", "shard-optimizer", "schedule",
          "virtual-stages", "vertical-sync", "loss", "class-axis",
          "ignore-index", "label-smoothing", "optimizer", "lr", "momentum",
          "betas", "eps", "weight-decay", "no-decay"})
      if (p.given(training))
        return std::string("--inference builds a forward pass only; --") +
               training + " applies to training";
  }
  if (p.given("bucket-tokens") && !p.given("seq-buckets"))
    return "--bucket-tokens applies to --seq-buckets";
  if (p.given("seq-buckets")) {
    const std::vector<int64_t> &lengths = o.seqBuckets;
    for (size_t i = 1; i < lengths.size(); ++i)
      if (lengths[i] <= lengths[i - 1])
        return "--seq-buckets expects ascending lengths, got " +
               std::to_string(lengths[i]) + " after " +
               std::to_string(lengths[i - 1]);
    if (!o.ignoreIndex)
      return "--seq-buckets needs --ignore-index P: samples shorter than "
             "their bucket are padded, and the loss must leave out the "
             "padding's labels";
    if (p.given("bucket-tokens") && o.bucketTokens < lengths.back())
      return "--bucket-tokens " + std::to_string(o.bucketTokens) +
             " is less than the longest bucket length " +
             std::to_string(lengths.back()) +
             ": no microbatch of that length fits";
    if (fs::path(o.model).extension() != ".onnx")
      return "--seq-buckets binds an ONNX model's input dimensions; give "
             "the model as .onnx";
  }
  if (o.cores < 0 || o.cores > (1 << 20))
    return "--cores expects a count from 0 to 1048576, got " +
           std::to_string(o.cores);
  if (o.precision == "bf16" && o.target != "cpu")
    return "--precision bf16 needs --target cpu (the CUDA kernels are f32)";
  if (o.recompute != "none" && o.inference)
    return "--recompute applies to training builds, not --inference";
  if (o.recompute != "none" && !o.seqBuckets.empty())
    return "--recompute does not combine with --seq-buckets yet";
  if (o.recompute == "auto" && !(o.memoryLimit > 0))
    return "--recompute auto needs --memory-limit: it recomputes the stages "
           "that would not fit without";
  if (o.fusion == "on" && o.target != "cpu")
    return "--fusion on needs --target cpu (the fused loops run on the host)";
  if (o.activationLayout == "blocked" && o.target != "cpu")
    return "--activation-layout blocked needs --target cpu (the CUDA kernels "
           "read NCHW)";
  if (o.convAlgorithm == "winograd" && o.target != "cpu")
    return "--conv-algorithm winograd needs --target cpu (the CUDA "
           "convolutions are cuDNN's)";
  if (o.convAlgorithm == "winograd" && o.precision == "bf16")
    return "--conv-algorithm winograd computes in f32; --precision bf16 "
           "takes it only where auto finds it faster than bf16";
  if (!p.given("o"))
    return "missing output directory: give -o DIR";
  return "";
}

// Declares every option of dpc compile on `p`, writing into `o` (and
// --ignore-index into `ignoreIndex`, which `o` holds only when given).
void addCompileOptions(cli::ArgParser &p, CompileOptions &o,
                       int64_t &ignoreIndex) {
  p.addPositional("MODEL", &o.model, "the model (.onnx, or nn-dialect .mlir)");
  p.addOption("o", &o.outDir, "DIR", "output directory (required)");
  p.addOption("stages", &o.stages, "N", "number of pipeline stages");
  p.addOption("devices", &o.devices, "N",
              "number of devices; the planner picks stages and replicas");
  p.addCountListOption("replicas", &o.replicas, "R0,R1,...",
                       "ranks of each stage (hybrid data parallelism): "
                       "stage s splits the microbatches over R_s ranks");
  p.addOption("microbatches", &o.microbatches, "M",
              "microbatches per minibatch (default 4)");
  p.addOption("microbatch-size", &o.microbatchSize, "B",
              "re-specialise the batch dimension to B samples");
  schedule::addScheduleOption(
      p, &o.schedule,
      {schedule::KindUse::Build,
       {"auto"},
       "auto: " + schedule::joinKindNames(schedule::autoScheduleKinds()) +
           ", whichever the simulator predicts faster within the memory "
           "limit (default 1f1b)"});
  p.addOption("virtual-stages", &o.virtualStages, "V",
              "model chunks per rank for --schedule interleaved "
              "(default 2)");
  p.addFlag("vertical-sync", &o.verticalSync,
            "pipedream: every stage uses stage 0's weight version of a "
            "microbatch");
  p.addOption("reduce", oneOf(&o.reduce, {"allreduce", "preduce"}),
              "allreduce|preduce",
              "how replicas sum gradients: allreduce waits for every one; "
              "preduce (one replicated stage) lets a late replica join a "
              "later round, see docs/RUNTIME.md (default allreduce)");
  p.addFlag("shard-optimizer", &o.shardOptimizer,
            "a replicated stage's R replicas each keep and update 1/R of "
            "its optimizer state, then all-gather the weights (ZeRO stage "
            "1; needs --replicas or --devices, and Adam or SGD with "
            "momentum)");
  p.addOption("target", oneOf(&o.target, {"cpu", "cuda"}), "cpu|cuda",
              "backend (default cpu)");
  p.addOption("precision", oneOf(&o.precision, {"fp32", "bf16"}), "fp32|bf16",
              "bf16: convolutions and matmuls in bf16 with f32 accumulation "
              "and f32 master weights, transfers between stages in bf16 "
              "(default fp32)");
  p.addOption("fusion", oneOf(&o.fusion, {"on", "off"}), "on|off",
              "on: chains of elementwise ops become one loop generated in "
              "the rank object instead of a runtime call each (default "
              "on for --target cpu; cuda: off)");
  p.addOption("activation-layout",
              oneOf(&o.activationLayout, {"blocked", "plain"}), "blocked|plain",
              "blocked: activations stay in oneDNN's channel-blocked layout "
              "from one convolution to the next, through batch norms and "
              "elementwise ops, instead of being reordered by every "
              "convolution (default blocked for --target cpu; cuda: plain)");
  p.addOption("conv-algorithm",
              oneOf(&o.convAlgorithm, {"auto", "winograd", "direct"}),
              "auto|winograd|direct",
              "how convolutions run: winograd computes 3x3, stride-1 f32 "
              "layers from 4x4 tiles with fewer multiplications; auto picks "
              "it where it pays, in a bf16 build where it beats bf16 "
              "(default auto for --target cpu; direct for cuda)");
  p.addOption("loss", oneOf(&o.loss, {"softmax-cross-entropy", "mse", "none"}),
              "KIND", "loss appended to the model's output");
  p.addOption("class-axis", &o.classAxis, "D",
              "softmax-cross-entropy's class dimension of the logits: 1 for "
              "per-pixel logits [N, C, H, W] with labels [N, H, W], as "
              "torch's CrossEntropyLoss takes them (default -1, the last)");
  ignoreIndex = -100;
  p.addOption("ignore-index", &ignoreIndex, "N",
              "softmax-cross-entropy leaves out positions labelled N, "
              "averaging over the minibatch's others (torch's ignore_index)");
  p.addOption("label-smoothing", &o.labelSmoothing, "E",
              "softmax-cross-entropy's label smoothing in [0, 1) (torch's "
              "CrossEntropyLoss(label_smoothing=E); default 0)");
  p.addOption("optimizer", oneOf(&o.optimizer, {"sgd", "adam", "adamw"}),
              "sgd|adam|adamw",
              "optimizer (default sgd; adamw: Adam with decoupled weight "
              "decay, as torch.optim.AdamW)");
  p.addOption("lr", &o.lr, "X", "learning rate (default 0.01)");
  p.addOption("momentum", &o.momentum, "X", "SGD momentum (default 0)");
  p.addOption(
      "betas",
      [&o](const std::string &value) -> std::string {
        double b1 = 0, b2 = 0;
        char tail = 0;
        if (std::sscanf(value.c_str(), "%lf,%lf%c", &b1, &b2, &tail) != 2 ||
            !(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
          return "expects two decays in [0, 1) as B1,B2, got '" + value + "'";
        o.beta1 = b1;
        o.beta2 = b2;
        return "";
      },
      "B1,B2", "Adam's moment decays (default 0.9,0.999)");
  p.addOption("eps", &o.eps, "X", "Adam's denominator term (default 1e-8)");
  p.addOption("weight-decay", &o.weightDecay, "X", "weight decay (default 0)");
  p.addOption("no-decay", &o.noDecay, "GLOBS",
              "parameters without weight decay, by name: comma-separated "
              "glob patterns, e.g. '*.bias,*norm*'");
  p.addByteCountOption("memory-limit", &o.memoryLimit,
                       "memory per device the plan must fit");
  p.addOption("recompute", oneOf(&o.recompute, {"none", "all", "auto"}),
              "none|all|auto",
              "activation recomputation: all stages keep only their inputs "
              "per microbatch in flight and recompute their forward in the "
              "backward; auto recomputes the stages whose rank would exceed "
              "--memory-limit without it (default none)");
  p.addOption("bandwidth", &o.bandwidth, "BYTES/S",
              "bandwidth between devices for planning (default 1e9)");
  p.addOption("cores", &o.cores, "N",
              "cores the ranks share on the machine they run on: the "
              "predicted step shares them among the ranks computing at a "
              "moment when there are fewer than the ranks (default this "
              "machine's count for --target cpu without --cluster; 0: a "
              "core per rank)");
  p.addOption("cluster", &o.cluster, "FILE",
              "plan on these devices of their own speed and memory "
              "(docs/PLANNER.md) instead of --devices");
  p.addOption("profile", &o.profile, "FILE",
              "measured op costs from 'dpc profile'");
  p.addOption("emit", oneOf(&o.emit, {"mlir", "plan", "exe"}), "mlir|plan|exe",
              "stop after that stage (default exe)");
  p.addCountListOption(
      "seq-buckets", &o.seqBuckets, "L1,L2,...",
      "compile shape buckets for token models of variable length: the "
      "input's dimension 1 bound to each length (ascending), dimension 0 to "
      "each batch that fits --bucket-tokens; needs --ignore-index");
  p.addOption("bucket-tokens", &o.bucketTokens, "N",
              "tokens per microbatch of the buckets (default the microbatch "
              "size x the longest length)");
  p.addFlag("inference", &o.inference,
            "forward pass only: the ranks predict (dpc run --predictions) "
            "instead of training");
}

} // namespace

int runCompileCommand(const Args &args) {
  CompileOptions o;
  cli::ArgParser p("dpc compile",
                   "compile an ONNX model into per-rank pipeline executables",
                   "dpc compile MODEL -o DIR [--stages N | --devices N | "
                   "--cluster FILE] "
                   "[options]");
  int64_t ignoreIndex = -100;
  addCompileOptions(p, o, ignoreIndex);

  if (std::optional<int> exit = p.parseOrExit(args))
    return *exit;
  if (o.schedule == "interleaved" && !p.given("virtual-stages"))
    o.virtualStages = 2;
  if (p.given("replicas") && !p.given("stages"))
    o.stages = int64_t(o.replicas.size());
  if (p.given("ignore-index"))
    o.ignoreIndex = ignoreIndex;
  // The options as given, less the model and the output directory.
  bool modelSeen = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "-o" || a == "--o") {
      ++i;
      continue;
    }
    if (a.rfind("-o=", 0) == 0 || a.rfind("--o=", 0) == 0)
      continue;
    if (!modelSeen && a == o.model) {
      modelSeen = true;
      continue;
    }
    o.recordedOptions.push_back(a);
  }
  if (std::string problem = checkOptions(o, p); !problem.empty()) {
    std::cerr << "dpc compile: " << problem << "\n";
    return cli::kUsageError;
  }
  // An inference run is GPipe's forward phase: microbatch after microbatch
  // through the stages (the ranks run it as Executor::evaluate).
  if (o.inference)
    o.schedule = "gpipe";
  // Fusion by default where the generated loops run: on the host
  // (bench/training/README.md measures it).
  if (!p.given("fusion"))
    o.fusion = o.target == "cpu" ? "on" : "off";
  // Winograd where it pays, on the CPU in f32 (select-conv-algorithm
  // leaves a bf16 build direct).
  // Channel-blocked activations where oneDNN's kernels read them.
  if (!p.given("activation-layout"))
    o.activationLayout = o.target == "cpu" ? "blocked" : "plain";
  if (!p.given("conv-algorithm") || o.target != "cpu")
    o.convAlgorithm = o.target == "cpu" ? "auto" : "direct";
  // CPU ranks on this machine share its cores (GPUs and a cluster's
  // devices are each a rank's own).
  if (!p.given("cores"))
    o.cores = o.target == "cpu" && o.cluster.empty() ? machineCores() : 0;
  return compileModel(o);
}

} // namespace dpc::tools
