//===- ParamStore.cpp - A rank's parameters and optimizer state -----------===//

#include "ParamStore.h"

#include "AbiError.h"

#include "dpc/runtime/ParamEpochs.h"
#include "dpc/support/CommandLine.h"

#include <algorithm>
#include <utility>

namespace dpc::runtime {

ParamStore::ParamStore(const RankManifest &manifest, Device &device,
                       BufferPool &pool, int replica, int replicas)
    : manifest(manifest), device(device), pool(pool) {
  params.resize(manifest.params.size());
  std::vector<size_t> counts;
  for (const ManifestParam &spec : manifest.params)
    counts.push_back(size_t(spec.elements()));
  shardsValue = OptimizerShards(counts, replica, replicas);
  // An inference build keeps no optimizer state.
  size_t states =
      manifest.inference ? 0 : optimizerStateNames(manifest.optimizer).size();
  auto zeroed = [&](size_t bytes) {
    Buffer b(pool, bytes);
    device.memset(b.data(), 0, bytes);
    return b;
  };
  for (size_t k = 0; k < params.size(); ++k) {
    ParamState &p = params[k];
    p.spec = &manifest.params[k];
    p.count = counts[k];
    p.owned = shardsValue.owned(k);
    p.value = zeroed(p.bytes());
    p.grad = zeroed(p.bytes());
    p.state.resize(states);
    // A replica keeps no state for a parameter it owns none of.
    if (!p.owned.empty())
      for (Buffer &b : p.state)
        b = zeroed(p.owned.size() * sizeof(float));
    markParamWritten(p.value.data());
    index[p.spec->id] = k;
  }
}

ParamStore::~ParamStore() {
  for (const ParamState &p : params)
    forgetParamBuffer(p.value.data());
  for (const auto &[version, copies] : versions)
    for (const Buffer &b : copies)
      forgetParamBuffer(b.data());
}

ParamState &ParamStore::get(int64_t id) {
  auto it = index.find(id);
  if (it == index.end())
    throw AbiError("parameter id " + std::to_string(id) +
                   " is not in the manifest");
  return params[it->second];
}

const float *ParamStore::served(int64_t id) {
  ParamState &p = get(id);
  if (servedVersion)
    return (*servedVersion)[size_t(&p - params.data())].floats();
  return p.value.floats();
}

std::vector<float> ParamStore::value(int64_t id) const {
  auto it = index.find(id);
  if (it == index.end())
    throw Error("no parameter with id " + std::to_string(id));
  const ParamState &p = params[it->second];
  std::vector<float> values(p.count);
  device.copyToHost(values.data(), p.value.data(), p.bytes());
  return values;
}

void ParamStore::accumulate(ParamState &p, const float *grad) {
  device.accumulate(p.grad.floats(), grad, p.count);
}

/// Throws unless the manifest's optimizer is `kind`.
static void requireOptimizer(const RankManifest &manifest, Optimizer kind) {
  if (manifest.optimizer != kind)
    throw AbiError(std::string("the manifest's optimizer is ") +
                   optimizerName(manifest.optimizer));
}

double ParamStore::scheduled(float lr) {
  // beginUpdate counted this update already; the schedule counts from 0.
  lastLr = lrSchedule.at(double(lr), updates - 1);
  return *lastLr;
}

void ParamStore::sgdStep(int64_t id, float lr, float momentum,
                         float weightDecay) {
  requireOptimizer(manifest, Optimizer::Sgd);
  ParamState &p = get(id);
  float rate = float(scheduled(lr));
  p.stepped = true;
  if (p.owned.empty())
    return;
  size_t at = p.owned.begin;
  device.sgdStep(
      p.value.floats() + at, p.state.empty() ? nullptr : p.state[0].floats(),
      p.grad.floats() + at, p.owned.size(), rate, momentum, weightDecay);
  markParamWritten(p.value.data());
}

void ParamStore::adamStep(int64_t id, float lr, float beta1, float beta2,
                          float eps, float weightDecay) {
  bool decoupled = manifest.optimizer == Optimizer::AdamW;
  if (!decoupled)
    requireOptimizer(manifest, Optimizer::Adam);
  ParamState &p = get(id);
  AdamStep step(scheduled(lr), beta1, beta2, eps, weightDecay, updates,
                decoupled);
  p.stepped = true;
  if (p.owned.empty())
    return;
  size_t at = p.owned.begin;
  device.adamStep(p.value.floats() + at, p.state[0].floats(),
                  p.state[1].floats(), p.grad.floats() + at, p.owned.size(),
                  step);
  markParamWritten(p.value.data());
}

double ParamStore::gradSquaredSum() const {
  double sum = 0;
  std::vector<float> staged;
  // Sharded, the owned elements are the ones the reduce-scatter summed.
  for (const ParamState &p : params) {
    const float *g = p.grad.floats() + p.owned.begin;
    size_t n = p.owned.size();
    if (!device.hostAccessible()) {
      staged.resize(n);
      device.copyToHost(staged.data(), g, n * sizeof(float));
      g = staged.data();
    }
    for (size_t k = 0; k < n; ++k)
      sum += double(g[k]) * double(g[k]);
  }
  return sum;
}

void ParamStore::scaleGradients(float factor) {
  std::vector<float> staged;
  for (ParamState &p : params) {
    float *g = p.grad.floats();
    if (device.hostAccessible()) {
      for (size_t k = 0; k < p.count; ++k)
        g[k] *= factor;
      continue;
    }
    staged.resize(p.count);
    device.copyToHost(staged.data(), g, p.bytes());
    for (float &x : staged)
      x *= factor;
    device.copyFromHost(g, staged.data(), p.bytes());
  }
}

size_t ParamStore::totalCount() const {
  size_t total = 0;
  for (const ParamState &p : params)
    total += p.count;
  return total;
}

void ParamStore::flatten(Buffer ParamState::*which, float *out,
                         bool onDevice) const {
  size_t offset = 0;
  for (const ParamState &p : params) {
    if (onDevice)
      device.copy(out + offset, (p.*which).floats(), p.bytes());
    else
      device.copyToHost(out + offset, (p.*which).floats(), p.bytes());
    offset += p.count;
  }
}

void ParamStore::unflatten(Buffer ParamState::*which, const float *in,
                           bool onDevice) {
  size_t offset = 0;
  for (ParamState &p : params) {
    if (onDevice)
      device.copy((p.*which).floats(), in + offset, p.bytes());
    else
      device.copyFromHost((p.*which).floats(), in + offset, p.bytes());
    if (which == &ParamState::value)
      markParamWritten(p.value.data());
    offset += p.count;
  }
}

void ParamStore::sumGradients(Communicator &comm, bool onDevice) {
  size_t total = totalCount();
  Buffer deviceSum;
  float *sum;
  if (onDevice) {
    deviceSum = Buffer(pool, total * sizeof(float));
    sum = deviceSum.floats();
  } else {
    reduceBuffer.resize(total);
    sum = reduceBuffer.data();
  }
  flatten(&ParamState::grad, sum, onDevice);
  if (sharded())
    comm.reduceScatterSum(sum, shardsValue.rangeSizes());
  else
    comm.allreduceSum(sum, total);
  unflatten(&ParamState::grad, sum, onDevice);
}

std::vector<float> ParamStore::hostGradients() const {
  std::vector<float> all(totalCount());
  flatten(&ParamState::grad, all.data(), /*onDevice=*/false);
  return all;
}

void ParamStore::setGradients(const std::vector<float> &all) {
  unflatten(&ParamState::grad, all.data(), /*onDevice=*/false);
}

void ParamStore::clearGradients() {
  for (ParamState &p : params)
    device.memset(p.grad.data(), 0, p.bytes());
}

std::vector<float> ParamStore::hostValues() const {
  std::vector<float> all(totalCount());
  flatten(&ParamState::value, all.data(), /*onDevice=*/false);
  return all;
}

void ParamStore::setValues(const std::vector<float> &all) {
  unflatten(&ParamState::value, all.data(), /*onDevice=*/false);
}

//===----------------------------------------------------------------------===//
// Weight versions
//===----------------------------------------------------------------------===//

size_t ParamStore::stashVersion(int version, const std::string &at) {
  if (version != live)
    throw Error(at + "copies the live weights as version " +
                std::to_string(version) + " but they are version " +
                std::to_string(live));
  auto [it, fresh] = versions.try_emplace(version);
  if (!fresh)
    throw Error(at + "weight version " + std::to_string(version) +
                " is already stashed");
  it->second.reserve(params.size());
  for (const ParamState &p : params) {
    it->second.emplace_back(pool, p.bytes());
    device.copy(it->second.back().data(), p.value.data(), p.bytes());
    markParamWritten(it->second.back().data());
  }
  return versions.size();
}

void ParamStore::restoreVersion(int version, const std::string &at) {
  if (!versions.count(version))
    throw Error(at + "weight version " + std::to_string(version) +
                " was never stashed, or was already freed");
  restored = version;
}

void ParamStore::freeVersion(int version, const std::string &at) {
  auto it = versions.find(version);
  if (it == versions.end())
    throw Error(at + "weight version " + std::to_string(version) +
                " is not stashed");
  for (const Buffer &b : it->second)
    forgetParamBuffer(b.data());
  versions.erase(it);
}

void ParamStore::selectVersion(int version, const std::string &at) {
  std::optional<int> selected = std::exchange(restored, std::nullopt);
  servedVersion = nullptr;
  if (version < 0) {
    if (selected)
      throw Error(at + "RestoreWeights selected weight version " +
                  std::to_string(*selected) +
                  " but this instruction names no version");
    return;
  }
  if (selected) {
    if (*selected != version)
      throw Error(at + "uses weight version " + std::to_string(version) +
                  " but RestoreWeights selected version " +
                  std::to_string(*selected));
    servedVersion = &versions.at(*selected);
    return;
  }
  if (version != live)
    throw Error(at + "uses weight version " + std::to_string(version) +
                " but the live weights are version " + std::to_string(live) +
                " and no RestoreWeights selected it");
}

void ParamStore::checkNoRestore(const std::string &at) const {
  if (restored)
    throw Error(at + "RestoreWeights selected weight version " +
                std::to_string(*restored) +
                " but no Forward or Backward used it");
}

std::string ParamStore::leftover() const {
  if (!versions.empty())
    return "weight version " + std::to_string(versions.begin()->first) +
           " is still stashed (no FreeWeights)";
  if (restored)
    return "RestoreWeights selected weight version " +
           std::to_string(*restored) + " but no Forward or Backward used it";
  return "";
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

/// The float tensor `name` of `shape` in `file`, copied to `out` as F32
/// (an F16, BF16 or F64 one, as a compiled model's initial weights may be,
/// converted on the way), and then given back if it is mapped.
static void copyTensor(const TensorFile &file, const std::string &fileName,
                       const std::string &name,
                       const std::vector<int64_t> &shape, Device &device,
                       void *out) {
  auto it = file.tensors.find(name);
  if (it == file.tensors.end())
    throw Error(fileName + ": no tensor '" + name + "'");
  const Tensor &t = it->second;
  if (!isFloatDType(t.dtype))
    throw Error(fileName + ": tensor '" + name + "' is " + dtypeName(t.dtype) +
                ", expected F32 (or F16, BF16, F64)");
  if (t.shape != shape) {
    auto text = [](const std::vector<int64_t> &s) {
      std::string r = "[";
      for (size_t k = 0; k < s.size(); ++k)
        r += (k ? "," : "") + std::to_string(s[k]);
      return r + "]";
    };
    throw Error(fileName + ": tensor '" + name + "' has shape " +
                text(t.shape) + ", the model expects " + text(shape));
  }
  size_t elements = 1;
  for (int64_t d : shape)
    elements *= size_t(d);
  if (t.dtype == DType::F32) {
    device.copyFromHost(out, t.data(), elements * sizeof(float));
  } else {
    std::vector<float> widened = t.toF32();
    device.copyFromHost(out, widened.data(), elements * sizeof(float));
  }
  t.release();
}

/// The non-negative count a checkpoint's metadata `key` holds, if present.
static std::optional<int64_t> metadataCount(const TensorFile &file,
                                            const std::string &fileName,
                                            const std::string &key) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end())
    return std::nullopt;
  int64_t count = 0;
  if (!cli::parseInteger(it->second, count) || count < 0)
    throw Error(fileName + ": bad \"" + key + "\" metadata '" + it->second +
                "'");
  return count;
}

void ParamStore::load(const TensorFile &file, const std::string &fileName,
                      bool optimizerState) {
  const std::vector<std::string> &states =
      optimizerStateNames(manifest.optimizer);
  if (optimizerState) {
    // Checkpoints from before Adam carry no optimizer name: SGD's.
    auto it = file.metadata.find("optimizer");
    std::string written = it == file.metadata.end() ? "sgd" : it->second;
    std::string expected = optimizerName(manifest.optimizer);
    if (written != expected)
      throw Error(fileName + ": written by a run with the " + written +
                  " optimizer; this build trains with " + expected);
    std::optional<int64_t> count =
        metadataCount(file, fileName, "optimizer_updates");
    if (!count && manifest.optimizer != Optimizer::Sgd)
      throw Error(fileName + ": no \"optimizer_updates\" metadata, which "
                             "Adam's bias correction needs");
    updates = count.value_or(0);
  }
  for (ParamState &p : params) {
    copyTensor(file, fileName, p.spec->name, p.spec->shape, device,
               p.value.data());
    markParamWritten(p.value.data());
    for (size_t k = 0; k < p.state.size(); ++k) {
      if (!p.state[k])
        continue; // a shard that owns none of it
      if (optimizerState && sharded())
        loadOwnedState(file, fileName, states[k] + "." + p.spec->name, p,
                       p.state[k]);
      else if (optimizerState)
        copyTensor(file, fileName, states[k] + "." + p.spec->name,
                   p.spec->shape, device, p.state[k].data());
      else
        device.memset(p.state[k].data(), 0, p.state[k].size());
    }
    device.memset(p.grad.data(), 0, p.bytes());
  }
}

void ParamStore::loadOwnedState(const TensorFile &file,
                                const std::string &fileName,
                                const std::string &name, ParamState &p,
                                Buffer &out) {
  // Checked and widened as a whole tensor, as an unsharded store reads it.
  std::unique_ptr<Device> host = createHostDevice();
  std::vector<float> whole(p.count);
  copyTensor(file, fileName, name, p.spec->shape, *host, whole.data());
  device.copyFromHost(out.data(), whole.data() + p.owned.begin,
                      p.owned.size() * sizeof(float));
}

TensorFile ParamStore::checkpoint(int64_t stepsDone, Communicator *comm) const {
  TensorFile file;
  std::vector<float> host;
  const std::vector<std::string> &states =
      optimizerStateNames(manifest.optimizer);
  size_t stateCount = manifest.inference ? 0 : states.size();
  if (sharded() && !comm)
    throw Error("a sharded optimizer's checkpoint needs the stage's "
                "replicas to gather its state");
  for (size_t k = 0; k < stateCount; ++k) {
    std::vector<std::vector<float>> whole;
    if (sharded())
      whole = gatherState(k, *comm);
    for (size_t i = 0; i < params.size(); ++i) {
      const ParamState &p = params[i];
      if (!sharded()) {
        host.resize(p.count);
        device.copyToHost(host.data(), p.state[k].data(), p.bytes());
      }
      const std::vector<float> &data = sharded() ? whole[i] : host;
      file.tensors[states[k] + "." + p.spec->name] =
          Tensor::fromF32(p.spec->shape, data.data());
    }
  }
  for (const ParamState &p : params) {
    host.resize(p.count);
    device.copyToHost(host.data(), p.value.data(), p.bytes());
    file.tensors[p.spec->name] = Tensor::fromF32(p.spec->shape, host.data());
  }
  file.metadata["format"] = "dpc-checkpoint";
  file.metadata["stage"] = std::to_string(manifest.stage);
  file.metadata["stages"] = std::to_string(manifest.stages);
  file.metadata["step"] = std::to_string(stepsDone);
  file.metadata["optimizer"] = optimizerName(manifest.optimizer);
  file.metadata["optimizer_updates"] = std::to_string(updates);
  return file;
}

int64_t ParamStore::checkpointStep(const TensorFile &file,
                                   const std::string &fileName) {
  std::optional<int64_t> step = metadataCount(file, fileName, "step");
  if (!step)
    throw Error(fileName + ": not a dpc checkpoint (no \"step\" metadata)");
  return *step;
}

} // namespace dpc::runtime
