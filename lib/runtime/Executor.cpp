//===- Executor.cpp - Interpreting a rank's instruction stream ------------===//
//
// The orchestration: per training step the rank's program, instruction by
// instruction (data loading, segment calls, transfers, weight versions,
// optimizer updates, the replicas' gradient sum), and evaluation's forward
// pass. What each instruction touches lives in its own unit: Buffers.h
// (pooled device memory, dpc_alloc's scratch, stash slots), Transfers.h
// (packs and messages), ParamStore.h (parameters, optimizer state, weight
// versions, checkpoints), ScheduleChecks.h (the schedule against the
// manifest, and what a step leaves over), OpProfile.h; the C ABI functions
// are in AbiEntryPoints.cpp.
//
// Lifetimes, per microbatch: loaded inputs and labels, received buffers and
// stash slots live until the microbatch's backward (Backward, or
// BackwardWeight for zero-bubble schedules) has finished, so the backward can
// still read labels and received activations; a send pack lives from the
// first dpc_send into it until its SendFinish. The end of a step checks that
// nothing is left over.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Executor.h"

#include "ExecutorImpl.h"
#include "ScheduleChecks.h"

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Heartbeat.h"
#include "dpc/runtime/StepPlanner.h"
#include "dpc/schedule/Verifier.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>
#include <utility>

using dpc::schedule::Instruction;
using dpc::schedule::Op;
using dpc::schedule::Payload;

namespace dpc::runtime {

namespace {

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace

const char *phaseName(Phase p) {
  switch (p) {
  case Phase::Idle:
    return "outside any segment";
  case Phase::Forward:
    return "Forward";
  case Phase::Backward:
    return "Backward";
  case Phase::BackwardInput:
    return "BackwardInput";
  case Phase::BackwardWeight:
    return "BackwardWeight";
  case Phase::Optimizer:
    return "OptimizerStep";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Executor::Impl
//===----------------------------------------------------------------------===//

Executor::Impl::Impl(RankManifest m, schedule::Schedule s, Communicator &c,
                     SegmentFunctions f, Device *d)
    : manifest(std::move(m)), sched(std::move(s)), fixedSched(sched), comm(c),
      rank(c.rank()), segments(f),
      ownedDevice(d ? nullptr : createHostDevice()),
      device(d ? *d : *ownedDevice), host(createHostDevice()),
      shapes(bucketShapes(manifest)),
      topShapes(manifest.buckets.empty() ? 0 : size_t(manifest.topBucket)) {
  memory.peakWeightVersions = manifest.chunks;
}

void Executor::Impl::fatal(const std::string &function,
                           const std::string &message) {
  std::string where = phaseName(phase);
  if (currentMb >= 0)
    where += " mb " + std::to_string(currentMb);
  if (evaluating)
    where += " (evaluation)";
  std::string text = where + ": " + function + ": " + message;
  if (fatalHandler)
    fatalHandler(text);
  throw Error(text);
}

std::string Executor::Impl::shapeSuffix(int mb) const {
  if (!planned || manifest.buckets.empty() || mb < 0)
    return "";
  const Shapes &shape = shapesOf(mb);
  return " " + std::to_string(shape.batch) + "x" + std::to_string(shape.length);
}

bool Executor::Impl::loadsData(int chunk) const {
  int stage = manifest.virtualStage(chunk);
  return stage == 0 || (stage == lastStage() && manifest.labelsShape);
}

void Executor::Impl::trace(schedule::EventKind kind, std::string name,
                           double start, int mb, int chunk) {
  if (!tracing)
    return;
  schedule::TimelineEvent e;
  e.rank = rank;
  e.kind = kind;
  e.name = std::move(name);
  e.start = start - traceOrigin;
  e.end = nowMs() - traceOrigin;
  e.mb = mb;
  e.chunk = chunk;
  events.push_back(std::move(e));
}

void Executor::Impl::callSegment(Phase p, SegmentFn fn, int mb, int chunk) {
  phase = p;
  currentMb = mb;
  currentChunk = chunk;
  fn(this);
  scratch.reset();
  phase = Phase::Idle;
  currentMb = -1;
  currentChunk = 0;
}

void Executor::Impl::releaseMicrobatch(int mb, int chunk) {
  int stage = manifest.virtualStage(chunk);
  stashes.release(mb, stage);
  inFlight.erase({mb, chunk});
  transfers.releaseReceived(mb, stage);
  loaded.erase({mb, chunk});
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

/// The labels of `indices` as a microbatch of `shape` holds them: padded
/// to the shape's rows and length with the ignored label when the data's
/// sequences vary in length.
void Executor::Impl::gatherLabels(const std::vector<int64_t> &indices,
                                  const Shapes &shape, int64_t *out) const {
  if (currentData->variableLength())
    currentData->gatherLabelsPadded(indices, shape.batch, shape.length,
                                    manifest.ignoreIndex.value_or(-1), out);
  else
    currentData->gatherLabels(indices, out);
}

/// Loads microbatch `microbatch` of sampler step `step` for the chunk,
/// kept under `mb` (evaluation's sampler has one microbatch per step).
void Executor::Impl::load(int mb, int chunk, int64_t step, int microbatch) {
  Loaded &l = loaded[{mb, chunk}];
  const Shapes &shape = shapesOf(mb);
  std::vector<int64_t> indices =
      planned && !evaluating
          ? mbSamples.at(size_t(mb))
          : currentSampler->microbatchIndices(step, microbatch);
  // Every data input, in the manifest's order (the data's, checked at
  // load); a later stage that reads one gets it sent like an activation.
  if (manifest.virtualStage(chunk) == 0) {
    l.inputs.resize(shape.inputs->size());
    for (size_t k = 0; k < shape.inputs->size(); ++k) {
      const ManifestTensor &input = (*shape.inputs)[k];
      size_t bytes = size_t(input.bytes());
      if (!l.inputs[k])
        l.inputs[k] = Buffer(pool, bytes);
      uploadTo(device, l.inputs[k].data(), bytes, upStaging, [&](void *host) {
        const double start = nowMs();
        if (k == 0 && loader && !evaluating && !planned) {
          auto at =
              std::lower_bound(loaderMbs.begin(), loaderMbs.end(), microbatch);
          int64_t seq = step * int64_t(loaderMbs.size()) +
                        int64_t(at - loaderMbs.begin());
          stepTimes.loadMs += loader->take(seq, static_cast<float *>(host));
          return;
        }
        if (input.integer && currentData->variableLength())
          currentData->gatherIntInputsPadded(indices, shape.batch, shape.length,
                                             static_cast<int64_t *>(host));
        else
          currentData->gatherInput(
              k, indices, host, evaluating ? 0 : currentSampler->epochOf(step));
        if (!evaluating)
          stepTimes.loadMs += nowMs() - start;
      });
    }
  }
  if (manifest.virtualStage(chunk) == lastStage() && manifest.labelsShape) {
    // Class ids, or float targets of the output's shape (--loss mse).
    int64_t count = product(**shape.labels);
    size_t bytes = size_t(count) *
                   (manifest.floatLabels ? sizeof(float) : sizeof(int64_t));
    if (!l.labels)
      l.labels = Buffer(pool, bytes);
    uploadTo(device, l.labels.data(), bytes, upStaging, [&](void *host) {
      if (manifest.floatLabels) {
        currentData->gatherFloatLabels(indices, static_cast<float *>(host));
        return;
      }
      auto *labels = static_cast<int64_t *>(host);
      gatherLabels(indices, shape, labels);
      if (evaluating && manifest.ignoreIndex)
        evalLossScale = 1.0f / float(countKept(labels, count));
    });
  }
}

int64_t Executor::Impl::countKept(const int64_t *labels, int64_t n) const {
  return n - std::count(labels, labels + n, *manifest.ignoreIndex);
}

/// When a step starts, the last stage reads every label of it (the
/// Sampler's indices, without the device) to count those the loss keeps:
/// torch's mean over the minibatch's non-ignored positions.
void Executor::Impl::countStepLabels(int64_t step) {
  int mbs = sched.microbatches;
  std::vector<int64_t> labels, kept(static_cast<size_t>(mbs));
  for (int mb = 0; mb < mbs; ++mb) {
    const Shapes &shape = shapesOf(mb);
    int64_t perMb = product(**shape.labels);
    labels.resize(size_t(perMb));
    gatherLabels(planned ? mbSamples.at(size_t(mb))
                         : currentSampler->microbatchIndices(step, mb),
                 shape, labels.data());
    kept[size_t(mb)] = countKept(labels.data(), perMb);
  }
  int64_t total = std::accumulate(kept.begin(), kept.end(), int64_t(0));
  // Pipedream's updates each train on one microbatch, its own mean. A
  // step without a kept label gets inf: torch's loss is then NaN too.
  bool synchronous = schedule::isSynchronous(sched.kind);
  lossScales.assign(size_t(mbs), 0.0f);
  for (int mb = 0; mb < mbs; ++mb)
    lossScales[size_t(mb)] =
        1.0f / float(synchronous ? total : kept[size_t(mb)]);
}

//===----------------------------------------------------------------------===//
// Running instructions
//===----------------------------------------------------------------------===//

void Executor::Impl::sendStart(const Instruction &i, const std::string &at) {
  Boundary b = boundaryOf(i);
  transfers.sendStart(shapesOf(i.mb).sendLayouts.at(b), b, i.mb, i.tag, i.peer,
                      at);
}

void Executor::Impl::sendFinish(const Instruction &i, const std::string &at) {
  Transfers::Finished done = transfers.sendFinish(i.tag, i.mb, at);
  trace(schedule::EventKind::Send, std::move(done.name), done.startMs, i.mb,
        i.chunk);
}

void Executor::Impl::recvStart(const Instruction &i, const std::string &at) {
  Boundary b = boundaryOf(i);
  transfers.recvStart(shapesOf(i.mb).recvLayouts.at(b), b, i.mb, i.tag, i.peer,
                      at);
}

void Executor::Impl::recvFinish(const Instruction &i, const std::string &at) {
  Transfers::Finished done =
      transfers.recvFinish(shapesOf(i.mb).recvLayouts, i.tag, i.mb, at);
  trace(schedule::EventKind::Recv, std::move(done.name), done.startMs, i.mb,
        i.chunk);
}

void Executor::Impl::run(int64_t step, size_t index, const Instruction &i) {
  std::string at = instructionWhere(step, index, i, sched.chunks);
  double start = nowMs();
  auto compute = [&](schedule::EventKind kind, Phase p, SegmentFn fn) {
    if (p == Phase::Forward || p == Phase::Backward)
      params.selectVersion(i.version, at);
    if (p == Phase::Forward && forwardDelayMs > 0)
      std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(forwardDelayMs));
    callSegment(p, fn, i.mb, i.chunk);
    params.unselect();
    trace(kind,
          schedule::eventName(kind, i.mb, i.chunk, sched.chunks > 1) +
              shapeSuffix(i.mb),
          start, i.mb, i.chunk);
  };
  switch (i.op) {
  case Op::LoadMicrobatch:
    if (loadsData(i.chunk)) {
      load(i.mb, i.chunk, currentStep, i.mb);
      trace(schedule::EventKind::Load,
            "load mb" + std::to_string(i.mb) + shapeSuffix(i.mb), start, i.mb,
            i.chunk);
    }
    break;
  case Op::Forward:
    if (loadsData(i.chunk) && !loaded.count({i.mb, i.chunk}))
      throw Error(at + "microbatch " + std::to_string(i.mb) +
                  " was not loaded (no LoadMicrobatch before it)");
    compute(schedule::EventKind::Forward, Phase::Forward, segments.forward);
    transfers.releaseReceived(i.mb, manifest.virtualStage(i.chunk));
    if (manifest.virtualStage(i.chunk) == lastStage() && manifest.labelsShape &&
        !losses[size_t(i.mb)])
      throw Error(at + "the last stage's forward did not call "
                       "dpc_report_loss");
    inFlight[{i.mb, i.chunk}] = true;
    memory.peakStashes = std::max(memory.peakStashes, int(inFlight.size()));
    break;
  case Op::Backward:
    compute(schedule::EventKind::Backward, Phase::Backward, segments.backward);
    releaseMicrobatch(i.mb, i.chunk);
    break;
  case Op::BackwardInput:
    compute(schedule::EventKind::BackwardInput, Phase::BackwardInput,
            segments.backwardInput);
    break;
  case Op::BackwardWeight:
    compute(schedule::EventKind::BackwardWeight, Phase::BackwardWeight,
            segments.backwardWeight);
    releaseMicrobatch(i.mb, i.chunk);
    break;
  case Op::OptimizerStep:
    params.checkNoRestore(at);
    if (clipNorm > 0)
      clipGradients();
    // One step updates every chunk of the rank.
    params.beginUpdate();
    // A partial reduce's other replicas take replica 0's weights instead.
    if (!partialReduce || partialReduce->leads())
      for (int chunk = 0; chunk < manifest.chunks; ++chunk)
        callSegment(Phase::Optimizer, segments.optimizer, -1, chunk);
    if (partialReduce)
      partialReduceWeights(step);
    if (params.sharded())
      gatherShardedWeights();
    params.endUpdate();
    trace(schedule::EventKind::Optimizer, "opt", start, -1);
    break;
  case Op::AllReduce:
    if (sched.reduce == schedule::ReduceMode::PartialReduce) {
      partialReduceGradients(step);
      trace(schedule::EventKind::AllReduce, "preduce", start, -1);
    } else {
      allReduceGradients();
      trace(schedule::EventKind::AllReduce, "allreduce", start, -1);
    }
    break;
  case Op::StashWeights:
    memory.peakWeightVersions =
        std::max(memory.peakWeightVersions,
                 int(params.stashVersion(i.version, at)) + manifest.chunks);
    break;
  case Op::RestoreWeights:
    params.restoreVersion(i.version, at);
    break;
  case Op::FreeWeights:
    params.freeVersion(i.version, at);
    break;
  case Op::SendStart:
    sendStart(i, at);
    break;
  case Op::SendFinish:
    sendFinish(i, at);
    break;
  case Op::RecvStart:
    recvStart(i, at);
    break;
  case Op::RecvFinish:
    recvFinish(i, at);
    break;
  // The generated code stashes and restores by itself (dpc_stash and
  // dpc_restore); the schedule's stash instructions are the verifier's
  // memory bookkeeping, and slots go when the backward is done.
  case Op::Stash:
  case Op::Restore:
  case Op::Free:
    break;
  default:
    throw Error(at + "not supported by the executor");
  }
  // Compute is what the schedule's stage costs predict; waits are the
  // time blocked on other ranks (and the copies that finish a message).
  switch (i.op) {
  case Op::Forward:
  case Op::Backward:
  case Op::BackwardInput:
  case Op::BackwardWeight:
    stepTimes.computeMs += nowMs() - start;
    break;
  case Op::SendFinish:
  case Op::RecvFinish:
  case Op::AllReduce:
    stepTimes.waitMs += nowMs() - start;
    break;
  case Op::OptimizerStep:
    // Waiting for replica 0's weights.
    if (partialReduce && !partialReduce->leads())
      stepTimes.waitMs += nowMs() - start;
    break;
  default:
    break;
  }
}

/// Sums the weight gradients over the stage's replicas, in one message:
/// each replica accumulated its share of the microbatches, so the sum is
/// the minibatch's gradient, as one rank would have accumulated it. The sum
/// stays in device memory when the device's communicator makes it.
void Executor::Impl::allReduceGradients() {
  bool onDevice = replicaDeviceComm != nullptr;
  params.sumGradients(onDevice ? *replicaDeviceComm : *replicaComm, onDevice);
}

/// Each replica updated its own share of the parameters (OptimizerShards.h);
/// the all-gather gives every replica the whole updated weights, as one
/// rank's update would have left them.
void Executor::Impl::gatherShardedWeights() {
  bool onDevice = replicaDeviceComm != nullptr;
  params.gatherWeights(onDevice ? *replicaDeviceComm : *replicaComm, onDevice);
}

/// A partial reduce's round: replica 0 sums the gradients and losses that
/// are ready into its own (PartialReduce.h); another replica sends its own.
void Executor::Impl::partialReduceGradients(int64_t step) {
  if (!partialReduce)
    throw Error("the schedule was compiled with --reduce preduce, but the "
                "partial reduce was not started");
  std::vector<float> gradient = params.hostGradients();
  std::vector<float> stepLosses(losses.size(), 0.0f);
  for (size_t mb = 0; mb < losses.size(); ++mb)
    if (losses[mb])
      stepLosses[mb] = float(*losses[mb]);
  StepTimes times = stepTimes;
  times.stepMs = nowMs() - stepStartMs;
  if (!partialReduce->leads()) {
    partialReduce->sendGradient(step, gradient, stepLosses, times);
    return;
  }
  round = partialReduce->reduce(step, gradient, stepLosses, times,
                                step + 1 == endStep);
  params.setGradients(gradient);
  for (size_t mb = 0; mb < losses.size(); ++mb)
    losses[mb] = double(stepLosses[mb]);
}

/// After the update: replica 0 sends its weights to the replicas its round
/// took; another replica adopts them and goes on after that round.
void Executor::Impl::partialReduceWeights(int64_t step) {
  if (partialReduce->leads()) {
    partialReduce->sendWeights(round, params.hostValues(), step + 1 == endStep);
    return;
  }
  std::vector<float> weights;
  next = partialReduce->receiveWeights(weights) + 1;
  params.setValues(weights);
  // Its own gradient went to replica 0; no optimizer ran to clear it.
  params.clearGradients();
}

/// The step's per-microbatch losses on every replica of the last stage:
/// each loss is reported by exactly one replica and is a float, so adding
/// the others' zeros keeps it exact.
void Executor::Impl::gatherLosses() {
  std::vector<float> all(losses.size(), 0.0f);
  for (size_t mb = 0; mb < losses.size(); ++mb)
    if (losses[mb])
      all[mb] = float(*losses[mb]);
  replicaComm->allreduceSum(all.data(), all.size());
  for (size_t mb = 0; mb < losses.size(); ++mb)
    losses[mb] = double(all[mb]);
}

/// Runs the rank's program of `sched` as training step `step`.
double Executor::Impl::trainStep(int64_t step) {
  bool needsData = manifest.isFirstStage() || manifest.labelsShape;
  if (needsData && !trainSampler)
    throw Error("stage " + std::to_string(manifest.stage) +
                " reads data but has no training dataset");
  evaluating = false;
  currentData = trainData;
  currentSampler = trainSampler.get();
  currentStep = step;
  if (trainingStepsRun++ == 1)
    profile.clear();
  if (manifest.ignoreIndex && manifest.labelsShape)
    countStepLabels(step);
  losses.assign(size_t(sched.microbatches), std::nullopt);
  params.startWindow();
  stepTimes = StepTimes();
  next = step + 1;
  double stepStart = stepStartMs = nowMs();
  const std::vector<Instruction> &program = sched.programs[size_t(rank)];
  for (size_t k = 0; k < program.size(); ++k) {
    setActivity(step, program[k], sched.chunks);
    run(step, k, program[k]);
  }
  checkStepEnd("step " + std::to_string(step + 1), transfers, stashes, params);
  // The step's time includes its device work, and a device fault is
  // reported at the step it happened in.
  device.synchronize();
  stepTimes.stepMs = nowMs() - stepStart;
  // A partial reduce's losses went with the gradients.
  if (replicaComm && manifest.isLastStage() && !partialReduce)
    gatherLosses();
  double loss = 0;
  for (const std::optional<double> &l : losses)
    loss += l.value_or(0.0);
  // Each pipedream update trains on one microbatch, whose loss is its own
  // mean; the window's loss is the mean of those.
  if (!schedule::isSynchronous(sched.kind))
    loss /= double(sched.microbatches);
  return loss;
}

//===----------------------------------------------------------------------===//
// Evaluation's scores
//===----------------------------------------------------------------------===//

void Executor::Impl::scoreOutput(const float *output) {
  bool scoring = manifest.labelsShape.has_value();
  if (!evaluating || !(keepingOutputs || scoring))
    return;
  const std::vector<int64_t> &shape = **shapesOf(currentMb).output;
  if (scoring && manifest.floatLabels) {
    // The squared error against the float targets (--loss mse), summed as
    // MSELoss sums it before its mean.
    int64_t n = product(shape);
    int64_t targetCount = product(**shapesOf(currentMb).labels);
    if (targetCount != n)
      throw AbiError("the output has " + std::to_string(n) +
                     " elements but the float targets have " +
                     std::to_string(targetCount));
    const auto *values = static_cast<const float *>(
        downloadFrom(device, output, size_t(n) * sizeof(float), downStaging));
    if (keepingOutputs)
      eval.outputs.insert(eval.outputs.end(), values, values + n);
    const auto *targets = static_cast<const float *>(downloadFrom(
        device, dpc_labels(this), size_t(n) * sizeof(float), labelStaging));
    for (int64_t i = 0; i < n; ++i) {
      double d = double(values[i]) - double(targets[i]);
      eval.squaredError += d * d;
    }
    eval.targets += n;
    eval.samples += shape[0];
    return;
  }
  // A row per label: a sample of a classifier, a position of a token-level
  // loss; without labels, a sample.
  int64_t rows = scoring ? product(**shapesOf(currentMb).labels) : shape[0];
  int64_t cols = product(shape) / rows;
  const auto *values = static_cast<const float *>(downloadFrom(
      device, output, size_t(rows * cols) * sizeof(float), downStaging));
  if (keepingOutputs)
    eval.outputs.insert(eval.outputs.end(), values, values + rows * cols);
  if (!scoring)
    return;
  const auto *y = static_cast<const int64_t *>(downloadFrom(
      device, dpc_labels(this), size_t(rows) * sizeof(int64_t), labelStaging));
  if (manifest.ignoreIndex) {
    // Ignored positions are no predictions to score.
    for (int64_t r = 0; r < rows; ++r) {
      if (y[r] == *manifest.ignoreIndex)
        continue;
      eval.correct += countArgmaxHits(values + r * cols, 1, cols, y + r);
      ++eval.samples;
    }
    return;
  }
  eval.correct += countArgmaxHits(values, rows, cols, y);
  eval.samples += rows;
}

//===----------------------------------------------------------------------===//
// Executor
//===----------------------------------------------------------------------===//

int64_t countArgmaxHits(const float *scores, int64_t rows, int64_t classes,
                        const int64_t *labels) {
  int64_t hits = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = scores + r * classes;
    // The first maximum, as torch.argmax picks.
    hits += std::max_element(row, row + classes) - row == labels[r];
  }
  return hits;
}

Executor::Executor(RankManifest manifest, schedule::Schedule schedule,
                   Communicator &comm, SegmentFunctions segments)
    : Executor(std::move(manifest), std::move(schedule), comm, segments,
               nullptr) {}

Executor::Executor(RankManifest manifest, schedule::Schedule schedule,
                   Communicator &comm, SegmentFunctions segments,
                   Device &device)
    : Executor(std::move(manifest), std::move(schedule), comm, segments,
               &device) {}

Executor::Executor(RankManifest manifest, schedule::Schedule schedule,
                   Communicator &comm, SegmentFunctions segments,
                   Device *device)
    : impl(std::make_unique<Impl>(std::move(manifest), std::move(schedule),
                                  comm, segments, device)) {
  Impl &s = *impl;
  // bf16 packing converts in place on the host.
  for (const Shapes &shape : s.shapes)
    for (const auto *layouts : {&shape.sendLayouts, &shape.recvLayouts})
      for (const auto &[b, layout] : *layouts)
        if (layout.anyBf16 && !s.device.hostAccessible())
          throw Error("manifest: bf16 transfers need host memory, but the "
                      "tensors live on " +
                      s.device.description());
  ScheduleCheck check = checkSchedule(s.manifest, s.sched, s.rank, comm.size(),
                                      s.segments, s.shapes[s.topShapes]);
  s.promised = check.promised;
  s.rendezvousProven = check.rendezvousProven;
  // A boundary the IR moves nothing across in this direction (no gradient
  // flows back into a stage without parameters, say) still gets its
  // message, empty, so both ranks keep the schedule's order.
  for (Shapes &shape : s.shapes) {
    for (const Boundary &b : check.sends)
      shape.sendLayouts.try_emplace(b);
    for (const Boundary &b : check.recvs)
      shape.recvLayouts.try_emplace(b);
  }
  // Collective over the job: every rank takes part, replicated or not.
  if (s.sched.hasReplicas()) {
    std::unique_ptr<Communicator> group =
        comm.split(s.sched.stageOf(s.rank), s.rank);
    if (s.sched.replicasOf(s.manifest.stage) > 1)
      s.replicaComm = std::move(group);
  }
}

Executor::~Executor() = default;

const RankManifest &Executor::manifest() const { return impl->manifest; }

std::string Executor::profileJson() const {
  return impl->profile.json(impl->rank);
}

const schedule::Schedule &Executor::schedule() const { return impl->sched; }

void Executor::setFatalHandler(
    std::function<void(const std::string &)> handler) {
  impl->device.setErrorHandler(handler);
  impl->fatalHandler = std::move(handler);
}

void Executor::loadParams(const TensorFile &file, const std::string &fileName,
                          bool optimizerState) {
  impl->params.load(file, fileName, optimizerState);
}

TensorFile Executor::checkpoint(int64_t stepsDone) const {
  return impl->params.checkpoint(
      stepsDone, impl->params.sharded() ? impl->replicaComm.get() : nullptr);
}

bool Executor::shardsOptimizer() const { return impl->params.sharded(); }

int64_t Executor::checkpointStep(const TensorFile &file,
                                 const std::string &fileName) {
  return ParamStore::checkpointStep(file, fileName);
}

std::vector<float> Executor::param(int64_t id) const {
  return impl->params.value(id);
}

void Executor::setTrainData(const Dataset *data, bool shuffle, uint64_t seed) {
  impl->loader.reset();
  impl->trainData = data;
  impl->seed = seed;
  impl->trainSampler.reset();
  if (!data)
    return;
  SamplerConfig config;
  config.numSamples = data->size();
  config.microbatches = impl->sched.microbatches;
  config.microbatchSize = impl->manifest.microbatchSize;
  config.shuffle = shuffle;
  config.seed = seed;
  impl->trainSampler = std::make_unique<Sampler>(config);
}

Sampler *Executor::trainSampler() { return impl->trainSampler.get(); }

bool Executor::setLoader(int threads, int depth) {
  Impl &s = *impl;
  s.loader.reset();
  const Dataset *data = s.trainData;
  if (!data || !s.manifest.isFirstStage() || !data->decodesInputs() ||
      data->integerInputs() || data->inputCount() != 1)
    return false;
  // The microbatches this rank loads inputs for (a replica loads its
  // share), so that it decodes no other.
  std::vector<int> mbs;
  for (const schedule::Instruction &i : s.sched.programs[size_t(s.rank)])
    if (i.op == schedule::Op::LoadMicrobatch &&
        s.manifest.virtualStage(i.chunk) == 0)
      mbs.push_back(i.mb);
  std::sort(mbs.begin(), mbs.end());
  mbs.erase(std::unique(mbs.begin(), mbs.end()), mbs.end());
  if (mbs.empty())
    return false;
  s.loaderMbs = mbs;
  // The loader's own sampler: the executor's, copied, gives the same
  // indices and is used on the taking thread only.
  auto sampler = std::make_shared<Sampler>(*s.trainSampler);
  s.loader = std::make_unique<InputLoader>(
      *data, threads, depth, [sampler, mbs](int64_t seq) {
        int64_t step = seq / int64_t(mbs.size());
        int mb = mbs[size_t(seq % int64_t(mbs.size()))];
        return InputLoader::Batch{sampler->microbatchIndices(step, mb),
                                  sampler->epochOf(step)};
      });
  return true;
}

double Executor::runStep(int64_t step) {
  Impl &s = *impl;
  if (s.planned) {
    s.sched = s.fixedSched;
    s.planned = false;
  }
  return s.trainStep(step);
}

double Executor::runStep(int64_t step, const StepPlan &plan) {
  Impl &s = *impl;
  checkPlannedStep(step, plan, s.fixedSched, s.manifest.schedule, s.shapes);
  s.mbBucket.clear();
  s.mbSamples.clear();
  for (const PlannedMicrobatch &planned : plan.microbatches) {
    s.mbBucket.push_back(planned.bucket);
    s.mbSamples.push_back(planned.samples);
  }
  s.sched = plan.schedule;
  s.planned = true;
  return s.trainStep(step);
}

const StepTimes &Executor::stepTimes() const { return impl->stepTimes; }

int ReduceRound::members() const {
  int n = 0;
  for (int64_t s : steps)
    n += s >= 0;
  return n;
}

void Executor::startPartialReduce(double graceMs, int64_t firstStep,
                                  int64_t endStep) {
  Impl &s = *impl;
  if (s.sched.reduce != schedule::ReduceMode::PartialReduce || !s.replicaComm)
    throw Error("a partial reduce needs a replicated stage compiled with "
                "--reduce preduce");
  s.partialReduce = std::make_unique<PartialReduce>(
      *s.replicaComm, s.params.totalCount(), size_t(s.sched.microbatches),
      s.params.totalCount(), graceMs, firstStep);
  s.endStep = endStep;
}

int64_t Executor::nextStep() const { return impl->next; }

const ReduceRound &Executor::lastRound() const { return impl->round; }

double Executor::predictedComputeMs() const {
  const Impl &s = *impl;
  const schedule::Schedule &sched = s.sched;
  double total = 0;
  for (const Instruction &i : sched.programs[size_t(s.rank)]) {
    int stage = sched.virtualStage(s.rank, i.chunk);
    if (s.planned && !s.manifest.buckets.empty() && i.mb >= 0)
      total +=
          stageInfo(
              s.manifest.buckets[s.shapeIndex(i.mb)].stageCosts[size_t(stage)])
              .computeMs(i.op);
    else
      total += sched.stages[size_t(stage)].computeMs(i.op);
  }
  return total;
}

void Executor::setForwardDelay(double ms) { impl->forwardDelayMs = ms; }

const MemoryStats &Executor::memoryStats() const {
  impl->memory.peakBytes = impl->meter.peakBytes();
  return impl->memory;
}
const schedule::RankStats &Executor::promisedMemory() const {
  return impl->promised;
}

EvalResult Executor::evaluate(const Dataset *data, int64_t microbatches,
                              bool keepOutputs) {
  Impl &s = *impl;
  const RankManifest &m = s.manifest;
  // The first replica of every stage evaluates; the others have the same
  // weights and nothing to add.
  if (s.sched.replicaOf(s.rank) != 0)
    return EvalResult();
  bool needsData = m.isFirstStage() || m.labelsShape;
  std::unique_ptr<Sampler> sampler;
  if (needsData) {
    if (!data)
      throw Error("stage " + std::to_string(m.stage) +
                  " reads data but has no evaluation dataset");
    SamplerConfig config;
    config.numSamples = data->size();
    config.microbatches = 1;
    config.microbatchSize = m.microbatchSize;
    config.shuffle = false;
    config.padLast = keepOutputs;
    sampler = std::make_unique<Sampler>(config);
    if (sampler->stepsPerEpoch() < microbatches)
      throw Error("evaluation wants " + std::to_string(microbatches) +
                  " microbatches but the dataset has " +
                  std::to_string(sampler->stepsPerEpoch()));
  }
  s.evaluating = true;
  s.keepingOutputs = keepOutputs;
  s.eval = EvalResult();
  s.currentData = data;
  s.currentSampler = sampler.get();

  // Forward only, microbatch by microbatch and chunk by chunk: every
  // activation message of the training program, one per boundary and
  // microbatch, with one control tag per sending chunk (MPI keeps the
  // messages between two ranks with one tag in order, and every rank walks
  // (microbatch, chunk) in the same order). The sends of a microbatch stay
  // in flight while the next one computes.
  auto transfer = [&](Op op, int chunk, int mb) {
    Instruction i =
        Instruction::transfer(op, Payload::Activation, mb, chunk, -1, -1, 0);
    Boundary b = s.boundaryOf(i);
    i.peer = s.sched.rankOf(b.peer, 0);
    i.tag = kFirstControlTag + 16 + s.sched.chunkOf(std::min(b.stage, b.peer));
    return i;
  };
  auto at = [&](int64_t mb) {
    return "evaluation mb " + std::to_string(mb) + ": ";
  };
  std::vector<Instruction> sending;
  for (int64_t k = 0; k < microbatches; ++k) {
    int mb = int(k);
    std::vector<Instruction> started;
    for (int chunk = 0; chunk < m.chunks; ++chunk) {
      int stage = m.virtualStage(chunk);
      if (stage > 0) {
        s.recvStart(transfer(Op::RecvStart, chunk, mb), at(k));
        s.recvFinish(transfer(Op::RecvFinish, chunk, mb), at(k));
      }
      if (s.loadsData(chunk))
        s.load(mb, chunk, k, 0);
      s.callSegment(Phase::Forward, s.segments.forward, mb, chunk);
      if (stage < s.lastStage()) {
        if (chunk == 0)
          for (const Instruction &send : std::exchange(sending, {}))
            s.sendFinish(send, at(k - 1));
        s.sendStart(transfer(Op::SendStart, chunk, mb), at(k));
        started.push_back(transfer(Op::SendFinish, chunk, mb));
      }
    }
    for (int chunk = 0; chunk < m.chunks; ++chunk)
      s.releaseMicrobatch(mb, chunk);
    for (Instruction &send : started)
      sending.push_back(send);
  }
  for (const Instruction &send : sending)
    s.sendFinish(send, at(microbatches - 1));
  checkStepEnd("evaluation", s.transfers, s.stashes, s.params);
  s.device.synchronize();
  s.evaluating = false;
  return s.eval;
}

void Executor::connect(Transport transport) {
  Impl &s = *impl;
  if (s.deviceComm)
    throw Error("the executor is connected already");
  std::unique_ptr<Communicator> c = s.device.connect(s.comm, transport);
  if (c && !c->matchesByTag() && !s.rendezvousProven) {
    // The verifier's decision, so the same on every rank.
    std::string why = s.manifest.schedule +
                      " is not proven free of deadlock under rendezvous "
                      "transfers, which transport '" +
                      c->transportDescription() +
                      "' needs (it matches transfers in start order)";
    if (transport != Transport::Auto)
      throw Error(std::string("transport ") + transportName(transport) + ": " +
                  why + " (use auto or host-staging)");
    c.reset();
    c = s.device.connect(s.comm, Transport::HostStaging);
    s.transportNote = " (" + why + ")";
  }
  if (!c)
    return;
  c->setTimeout(s.comm.timeout());
  // Collective over the job, as the constructor's split of `comm`.
  if (s.sched.hasReplicas()) {
    std::unique_ptr<Communicator> group =
        c->split(s.sched.stageOf(s.rank), s.rank);
    if (s.sched.replicasOf(s.manifest.stage) > 1)
      s.replicaDeviceComm = std::move(group);
  }
  s.deviceComm = std::move(c);
  s.transfers.setCommunicator(*s.deviceComm, /*staged=*/false);
}

std::string Executor::transportDescription() const {
  const Impl &s = *impl;
  std::string text = s.deviceComm ? s.deviceComm->transportDescription()
                     : s.transfers.staged()
                         ? "mpi, staged through host memory by the executor"
                         : "mpi";
  return text + s.transportNote;
}

void Executor::enableTrace(double originMs) {
  impl->tracing = true;
  impl->traceOrigin = originMs;
}

const std::vector<schedule::TimelineEvent> &Executor::traceEvents() const {
  return impl->events;
}

double Executor::nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

void broadcastInts(Communicator &comm, int root, std::vector<int64_t> &values) {
  const int tag = kFirstControlTag + 2;
  size_t bytes = values.size() * sizeof(int64_t);
  if (comm.rank() == root) {
    std::vector<Request> requests;
    for (int r = 0; r < comm.size(); ++r)
      if (r != root)
        requests.push_back(comm.isend(values.data(), bytes, r, tag));
    for (Request &r : requests)
      comm.wait(r);
  } else {
    Request r = comm.irecv(values.data(), bytes, root, tag);
    comm.wait(r);
  }
}

std::vector<std::vector<int64_t>>
gatherInts(Communicator &comm, int root, const std::vector<int64_t> &values) {
  const int tag = kFirstControlTag + 3;
  size_t bytes = values.size() * sizeof(int64_t);
  std::vector<std::vector<int64_t>> all;
  if (comm.rank() != root) {
    Request r = comm.isend(values.data(), bytes, root, tag);
    comm.wait(r);
    return all;
  }
  all.assign(comm.size(), std::vector<int64_t>(values.size()));
  std::vector<Request> requests;
  for (int r = 0; r < comm.size(); ++r)
    if (r != root)
      requests.push_back(comm.irecv(all[r].data(), bytes, r, tag));
  all[root] = values;
  for (Request &r : requests)
    comm.wait(r);
  return all;
}

} // namespace dpc::runtime
