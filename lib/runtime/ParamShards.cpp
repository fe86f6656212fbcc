//===- ParamShards.cpp - A sharded optimizer's collectives ----------------===//
//
// ParamStore's side of ZeRO stage 1 (OptimizerShards.h): the all-gather of
// the updated weights after each step and of the optimizer state for a
// checkpoint. Both gather the flat vector of the stage's parameters, in
// which each replica contributes its own range.
//
//===----------------------------------------------------------------------===//

#include "ParamStore.h"

#include "dpc/runtime/ParamEpochs.h"

#include <algorithm>

namespace dpc::runtime {

void ParamStore::gatherWeights(Communicator &comm, bool onDevice) {
  size_t total = totalCount();
  Buffer deviceFlat;
  float *flat;
  if (onDevice) {
    deviceFlat = Buffer(pool, total * sizeof(float));
    flat = deviceFlat.floats();
  } else {
    reduceBuffer.resize(total);
    flat = reduceBuffer.data();
  }
  flatten(&ParamState::value, flat, onDevice);
  // The other replicas' ranges start at zero (Communicator::allgatherRanges).
  ElementRange mine = shardsValue.range(shardsValue.replica());
  for (ElementRange other :
       {ElementRange{0, mine.begin}, ElementRange{mine.end, total}}) {
    if (other.empty())
      continue;
    if (onDevice)
      device.memset(flat + other.begin, 0, other.size() * sizeof(float));
    else
      std::fill(flat + other.begin, flat + other.end, 0.0f);
  }
  comm.allgatherRanges(flat, shardsValue.rangeSizes());
  for (size_t k = 0; k < params.size(); ++k) {
    ParamState &p = params[k];
    // Not updated (running statistics): each replica keeps its own, as an
    // unsharded build does.
    if (!p.stepped)
      continue;
    p.stepped = false;
    const float *in = flat + shardsValue.offset(k);
    if (onDevice)
      device.copy(p.value.data(), in, p.bytes());
    else
      device.copyFromHost(p.value.data(), in, p.bytes());
    markParamWritten(p.value.data());
  }
  // The updates cleared the owned elements; the rest held other replicas'
  // partial sums.
  clearGradients();
}

std::vector<std::vector<float>>
ParamStore::gatherState(size_t k, Communicator &comm) const {
  std::vector<float> flat(totalCount(), 0.0f);
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamState &p = params[i];
    if (!p.owned.empty())
      device.copyToHost(flat.data() + shardsValue.offset(i) + p.owned.begin,
                        p.state[k].data(), p.owned.size() * sizeof(float));
  }
  comm.allgatherRanges(flat.data(), shardsValue.rangeSizes());
  std::vector<std::vector<float>> whole;
  for (size_t i = 0; i < params.size(); ++i) {
    const float *first = flat.data() + shardsValue.offset(i);
    whole.emplace_back(first, first + params[i].count);
  }
  return whole;
}

} // namespace dpc::runtime
