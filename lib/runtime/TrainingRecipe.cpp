//===- TrainingRecipe.cpp - Learning-rate schedule and gradient clipping --===//
//
// The parts of the training recipe the executor applies around an update
// (dpc run --lr-schedule, --clip-grad-norm; docs/TRAINING.md):
//
// - the schedule gives each update its learning rate from the compiled one
//   (ParamStore::scheduled), counted by the update number a checkpoint
//   keeps, so a resumed run continues it;
// - clipping takes the norm of the gradients over every parameter of every
//   stage, as torch.nn.utils.clip_grad_norm_ over the whole model: each rank
//   sums its accumulators' squares (one replica per stage: after the
//   replicas' all-reduce they hold the same sum), one all-reduce over the
//   job adds the stages' sums, and every rank scales its gradients by
//   max_norm / (norm + 1e-6) when that is below 1.
//
// Each update all-reduces: a synchronous schedule has one OptimizerStep
// per rank, after every transfer of its stream; PipeDream has one per
// microbatch, where every stage's update k then clips microbatch k's
// gradients by their norm over all stages. Either way the ranks' k-th
// updates meet, so the schedule is verified again with that meeting
// (VerifyOptions::updatesMeet) before it runs. Partial reduces, whose
// replicas skip steps, are refused. (dpc compile builds PipeDream without
// replicas only.)
//
//===----------------------------------------------------------------------===//

#include "ExecutorImpl.h"

#include "dpc/runtime/Error.h"
#include "dpc/schedule/Verifier.h"

#include <cmath>

namespace dpc::runtime {

void Executor::setTrainingRecipe(const LrSchedule &schedule,
                                 double clipGradNorm) {
  Impl &s = *impl;
  if (clipGradNorm > 0) {
    if (s.sched.reduce == schedule::ReduceMode::PartialReduce)
      throw InputError("--clip-grad-norm cannot be combined with --reduce "
                       "preduce, whose replicas skip steps");
    schedule::VerifyOptions meeting;
    meeting.checkBlocking = false;
    meeting.updatesMeet = true;
    schedule::VerifyResult proof = schedule::verifySchedule(s.sched, meeting);
    if (!proof.ok())
      throw InputError("--clip-grad-norm: the schedule cannot all-reduce the "
                       "gradient norm at every update: " +
                       proof.violations.front().format());
  }
  s.params.setLrSchedule(schedule);
  s.clipNorm = clipGradNorm;
}

std::optional<double> Executor::learningRate() const {
  return impl->params.learningRate();
}

double Executor::gradNorm() const { return impl->gradNorm; }

void Executor::Impl::clipGradients() {
  // Replicas hold the same summed gradient, so one counts for the stage;
  // a sharded optimizer's replicas each hold the sum of their own share.
  bool counts = !replicaComm || params.sharded() || replicaComm->rank() == 0;
  float sum = counts ? float(params.gradSquaredSum()) : 0.0f;
  comm.allreduceSum(&sum, 1);
  gradNorm = std::sqrt(double(sum));
  // torch.nn.utils.clip_grad_norm_'s coefficient, clamped at 1.
  double coefficient = clipNorm / (gradNorm + 1e-6);
  if (coefficient < 1)
    params.scaleGradients(float(coefficient));
}

} // namespace dpc::runtime
