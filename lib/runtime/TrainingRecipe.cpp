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
// The all-reduce is the last message of each rank's step: a synchronous
// schedule has exactly one OptimizerStep per rank, after every transfer of
// its stream, so each rank's stream up to it completes as the verifier
// proved, and then every rank reaches it. Schedules that update per
// microbatch (pipedream) and partial reduces (whose replicas skip steps)
// have no such point and are refused.
//
//===----------------------------------------------------------------------===//

#include "ExecutorImpl.h"

#include "dpc/runtime/Error.h"

#include <cmath>

namespace dpc::runtime {

void Executor::setTrainingRecipe(const LrSchedule &schedule,
                                 double clipGradNorm) {
  Impl &s = *impl;
  if (clipGradNorm > 0) {
    if (!schedule::isSynchronous(s.sched.kind))
      throw InputError("--clip-grad-norm needs a synchronous schedule (one "
                       "update per step across the pipeline); this build's "
                       "pipedream updates every stage per microbatch");
    if (s.sched.reduce == schedule::ReduceMode::PartialReduce)
      throw InputError("--clip-grad-norm cannot be combined with --reduce "
                       "preduce, whose replicas skip steps");
  }
  s.params.setLrSchedule(schedule);
  s.clipNorm = clipGradNorm;
}

std::optional<double> Executor::learningRate() const {
  return impl->params.learningRate();
}

double Executor::gradNorm() const { return impl->gradNorm; }

void Executor::Impl::clipGradients() {
  bool counts = !replicaComm || replicaComm->rank() == 0;
  float sum = counts ? float(params.gradSquaredSum()) : 0.0f;
  comm.allreduceSum(&sum, 1);
  gradNorm = std::sqrt(double(sum));
  // torch.nn.utils.clip_grad_norm_'s coefficient, clamped at 1.
  double coefficient = clipNorm / (gradNorm + 1e-6);
  if (coefficient < 1)
    params.scaleGradients(float(coefficient));
}

} // namespace dpc::runtime
