//===- ParamStore.h - A rank's parameters and optimizer state ---*- C++ -*-===//
//
// Every manifest parameter's value, gradient accumulator and optimizer state
// (SGD's momentum, Adam's two moments) in device memory; the optimizer
// updates and their count (Adam's step number); checkpoints; the gradient
// sum over a stage's replicas; and PipeDream's weight versions.
//
// Every write to a parameter's value, or to a stashed copy of it, gives the
// buffer a new epoch (dpc/runtime/ParamEpochs.h), so that kernels may keep
// what they derive from a weight until it changes.
//
// Weight versions are numbered within a step (a window of microbatches that
// starts from the live weights): version v is the weights after v updates.
// The live weights are `liveVersion()`; older ones a later Forward or
// Backward still needs are copies that StashWeights made. Errors about them
// name the schedule's instruction (`at`) and are thrown as Error.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_PARAMSTORE_H
#define DPC_LIB_RUNTIME_PARAMSTORE_H

#include "Buffers.h"

#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/LrSchedule.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/runtime/Safetensors.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dpc::runtime {

/// A parameter's value, gradient accumulator and optimizer state
/// (optimizerStateNames), in device memory.
struct ParamState {
  const ManifestParam *spec = nullptr;
  size_t count = 0;
  Buffer value, grad;
  std::vector<Buffer> state;
  size_t bytes() const { return count * sizeof(float); }
};

class ParamStore {
public:
  /// Zeroed buffers for every parameter of `manifest` (which must outlive
  /// the store); an inference build keeps no optimizer state.
  ParamStore(const RankManifest &manifest, Device &device, BufferPool &pool);
  /// Forgets its buffers' epochs (ParamEpochs.h).
  ~ParamStore();
  ParamStore(const ParamStore &) = delete;
  ParamStore &operator=(const ParamStore &) = delete;

  /// Throws AbiError when the id is not in the manifest.
  ParamState &get(int64_t id);
  /// What dpc_param reads: the weight version a Forward or Backward was
  /// given (selectVersion), else the live weights.
  const float *served(int64_t id);
  /// A copy of the live value; throws Error for an unknown id.
  std::vector<float> value(int64_t id) const;

  void accumulate(ParamState &p, const float *grad);
  /// One update of the parameter, by the manifest's optimizer: throws
  /// AbiError when it is another or the id is unknown. `lr` is the compiled
  /// rate, which the schedule turns into the update's; Adam's step is
  /// AdamW's when the manifest says "adamw".
  void sgdStep(int64_t id, float lr, float momentum, float weightDecay);
  void adamStep(int64_t id, float lr, float beta1, float beta2, float eps,
                float weightDecay);
  /// --lr-schedule; constant until set.
  void setLrSchedule(LrSchedule schedule) { lrSchedule = std::move(schedule); }
  /// The learning rate of the last update; none before any.
  std::optional<double> learningRate() const { return lastLr; }

  /// The sum of the squares of every gradient accumulator's elements, in
  /// double (read in place where the host can, else copied to the host).
  double gradSquaredSum() const;
  /// Multiplies every gradient accumulator by `factor`.
  void scaleGradients(float factor);
  /// An OptimizerStep: `beginUpdate` before its optimizer segments (the
  /// update count is Adam's step number), `endUpdate` after them (the live
  /// weights are one version on).
  void beginUpdate() { ++updates; }
  void endUpdate() { ++live; }
  int64_t optimizerUpdates() const { return updates; }

  /// Sums the gradient accumulators over `comm` in one message: in device
  /// memory when `onDevice` (the device's communicator), else through host
  /// memory.
  void sumGradients(Communicator &comm, bool onDevice);

  /// Every parameter's gradient accumulator or value, one after the other
  /// in manifest order, in host memory: what a partial reduce sends.
  size_t totalCount() const;
  std::vector<float> hostGradients() const;
  void setGradients(const std::vector<float> &all);
  void clearGradients();
  std::vector<float> hostValues() const;
  void setValues(const std::vector<float> &all);

  //===--- Weight versions ------------------------------------------------===//

  /// A step starts from the live weights as version 0.
  void startWindow() { live = 0; }
  int liveVersion() const { return live; }
  /// Copies the live weights as `version` (StashWeights); returns how many
  /// copies are held.
  size_t stashVersion(int version, const std::string &at);
  /// RestoreWeights: the next Forward or Backward reads `version`.
  void restoreVersion(int version, const std::string &at);
  /// FreeWeights.
  void freeVersion(int version, const std::string &at);
  /// A Forward or Backward naming `version` (-1: none) is about to run:
  /// served() gives it the live weights or the version RestoreWeights
  /// selected, which must be the one it names.
  void selectVersion(int version, const std::string &at);
  /// The segment is over: served() gives the live weights again.
  void unselect() { servedVersion = nullptr; }
  /// Throws when RestoreWeights selected a version no Forward or Backward
  /// used (before an OptimizerStep).
  void checkNoRestore(const std::string &at) const;
  /// What is left at the end of a step, or "": a copy not freed, a
  /// selection not used.
  std::string leftover() const;

  //===--- Checkpoints ----------------------------------------------------===//

  /// Copies every parameter from `file` (by name; F32, same shape); with
  /// `optimizerState` also the optimizer state and update count, refusing
  /// another optimizer's; otherwise the state starts at zero.
  void load(const TensorFile &file, const std::string &fileName,
            bool optimizerState);
  /// Parameters by name, optimizer state as "STATE.NAME", and the metadata
  /// of a checkpoint written after `stepsDone` steps.
  TensorFile checkpoint(int64_t stepsDone) const;
  static int64_t checkpointStep(const TensorFile &file,
                                const std::string &fileName);

private:
  /// Copies `which` of every parameter to `out` (device memory when
  /// `onDevice`, else host memory), and back.
  void flatten(Buffer ParamState::*which, float *out, bool onDevice) const;
  void unflatten(Buffer ParamState::*which, const float *in, bool onDevice);

  const RankManifest &manifest;
  Device &device;
  BufferPool &pool;
  std::vector<ParamState> params;
  std::map<int64_t, size_t> index; // manifest id -> params index
  /// The update's learning rate from the compiled one, by the schedule.
  double scheduled(float lr);

  int64_t updates = 0;
  LrSchedule lrSchedule;
  std::optional<double> lastLr;
  int live = 0;
  std::map<int, std::vector<Buffer>> versions;
  std::optional<int> restored;
  const std::vector<Buffer> *servedVersion = nullptr;
  std::vector<float> reduceBuffer;
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_PARAMSTORE_H
