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
// A sharded optimizer (ZeRO stage 1, OptimizerShards.h) keeps the optimizer
// state of this replica's elements only: the gradient sum becomes a
// reduce-scatter, each update touches the owned elements, and
// gatherWeights then hands every replica the others' updated elements.
// Checkpoints still hold every parameter's whole state (gathered), so that
// any replica count, sharded or not, resumes from them.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_PARAMSTORE_H
#define DPC_LIB_RUNTIME_PARAMSTORE_H

#include "Buffers.h"
#include "OptimizerShards.h"

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
/// (optimizerStateNames), in device memory. The state covers the elements
/// `owned` (all of them unless the optimizer is sharded).
struct ParamState {
  const ManifestParam *spec = nullptr;
  size_t count = 0;
  Buffer value, grad;
  std::vector<Buffer> state;
  ElementRange owned;
  /// Whether an update of the running OptimizerStep touched it (sharded
  /// stores gather only those: the others, batch normalization's running
  /// statistics, differ between replicas).
  bool stepped = false;
  size_t bytes() const { return count * sizeof(float); }
};

class ParamStore {
public:
  /// Zeroed buffers for every parameter of `manifest` (which must outlive
  /// the store); an inference build keeps no optimizer state. With
  /// `replicas` > 1 the optimizer is sharded and this store is `replica`.
  ParamStore(const RankManifest &manifest, Device &device, BufferPool &pool,
             int replica = 0, int replicas = 1);
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
  /// memory. Sharded, only the owned elements get the sum (reduce-scatter).
  void sumGradients(Communicator &comm, bool onDevice);

  //===--- Sharded optimizer (ParamShards.cpp) ----------------------------===//

  const OptimizerShards &shards() const { return shardsValue; }
  bool sharded() const { return shardsValue.sharded(); }
  /// After a sharded OptimizerStep's updates, over the stage's replicas
  /// (`comm`, as sumGradients): every updated parameter gets the elements
  /// the other replicas updated, and the gradient accumulators are cleared.
  void gatherWeights(Communicator &comm, bool onDevice);

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
  /// of a checkpoint written after `stepsDone` steps. Sharded, every
  /// replica must call it with the stage's replicas as `comm`: the state is
  /// gathered whole.
  TensorFile checkpoint(int64_t stepsDone, Communicator *comm = nullptr) const;
  static int64_t checkpointStep(const TensorFile &file,
                                const std::string &fileName);

private:
  /// Copies `which` of every parameter to `out` (device memory when
  /// `onDevice`, else host memory), and back.
  void flatten(Buffer ParamState::*which, float *out, bool onDevice) const;
  void unflatten(Buffer ParamState::*which, const float *in, bool onDevice);
  /// Sharded: the owned elements of state tensor `name` of `file` into
  /// `out`, through a host copy of the whole tensor.
  void loadOwnedState(const TensorFile &file, const std::string &fileName,
                      const std::string &name, ParamState &p, Buffer &out);
  /// Sharded: state `k` of every parameter, whole, gathered over `comm`,
  /// one host vector per parameter.
  std::vector<std::vector<float>> gatherState(size_t k,
                                              Communicator &comm) const;

  const RankManifest &manifest;
  Device &device;
  BufferPool &pool;
  std::vector<ParamState> params;
  std::map<int64_t, size_t> index; // manifest id -> params index
  OptimizerShards shardsValue;
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
