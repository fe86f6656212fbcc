//===- LrSchedule.h - Learning rate by optimizer update ---------*- C++ -*-===//
//
// `--lr-schedule` (a rank option, so a compiled job can be trained with
// another schedule): the learning rate of every optimizer update as a
// function of the compiled learning rate (the base, `dpc compile --lr`) and
// the update's number t, counted from 0 over the whole run. A resumed run
// continues the schedule because a checkpoint keeps the update count.
//
// The kinds follow torch.optim.lr_scheduler, applied after every optimizer
// step as users apply them:
//
//   constant[:factor=F]                 ConstantLR: base * F (default 1)
//   linear:steps=T[,start=S][,end=E]    LinearLR: base * (S + (E - S)
//                                       * min(t, T) / T); S 1/3, E 1
//   warmup:steps=T[,start=S]            linear with E = 1 and S 0 by default
//   cosine:steps=T[,min=M]              CosineAnnealingLR: M + (base - M)
//                                       * (1 + cos(pi t / T)) / 2
//   step:every=N[,gamma=G]              StepLR: base * G^floor(t / N); G 0.1
//   exponential:gamma=G                 ExponentialLR: base * G^t
//   onecycle:steps=T,max=L[,pct=P][,div=D][,final-div=F][,anneal=cos|linear]
//                                       OneCycleLR's two phases (pct 0.3,
//                                       div 25, final-div 1e4, cos), without
//                                       cycling momentum (cycle_momentum=
//                                       False); it ignores the base
//
// Phases joined by '+' run one after another, as SequentialLR chains
// schedulers: a phase lasts its `steps` (every phase but the last needs
// them) and starts its own t at 0. For example, a linear warm-up of 100
// updates, then cosine decay to 1e-5 over 900:
//
//   --lr-schedule warmup:steps=100+cosine:steps=900,min=1e-5
//
// Plain C++: no MPI, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_LRSCHEDULE_H
#define DPC_RUNTIME_LRSCHEDULE_H

#include <cstdint>
#include <string>
#include <vector>

namespace dpc::runtime {

class LrSchedule {
public:
  enum class Kind { Constant, Linear, Cosine, Step, Exponential, OneCycle };

  struct Phase {
    Kind kind = Kind::Constant;
    /// Its length in updates; 0: until the end (the last phase only).
    int64_t steps = 0;
    /// Constant's factor; Linear's start and end factors; Cosine's minimum;
    /// Step's and Exponential's gamma and Step's period; OneCycle's maximum
    /// learning rate, warm-up fraction and divisors.
    double factor = 1, start = 1, end = 1, minimum = 0, gamma = 0.1;
    int64_t every = 1;
    double maximum = 0, pct = 0.3, div = 25, finalDiv = 1e4;
    bool cosAnneal = true;
  };

  /// The constant schedule: every update at the base.
  LrSchedule() = default;

  /// Parses `--lr-schedule`'s text; "" is the constant schedule. Throws
  /// dpc::InputError with the whole message (naming the phase and the
  /// parameter) when the text is not a schedule.
  static LrSchedule parse(const std::string &text);

  /// The learning rate of update `t` (from 0) for compiled rate `base`.
  double at(double base, int64_t t) const;

  bool isConstant() const { return phases.empty(); }
  const std::vector<Phase> &getPhases() const { return phases; }

private:
  std::vector<Phase> phases;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_LRSCHEDULE_H
