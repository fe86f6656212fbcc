//===- PartialReduce.cpp - Straggler-tolerant gradient reduction ----------===//

#include "PartialReduce.h"

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Executor.h"
#include "dpc/runtime/Poll.h"

#include <chrono>
#include <cstring>

namespace dpc::runtime {

namespace {

const int kGradientTag = kFirstControlTag + 5;
const int kWeightsTag = kFirstControlTag + 6;

/// A gradient message: this header, then the gradient and the losses.
struct GradientHeader {
  int64_t step;
  StepTimes times;
};

double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

/// Replica 0's view of another replica: the step it computes (on that
/// step's weights) and its gradient message, arrived or awaited.
struct PartialReduce::Peer {
  int64_t computing = 0;
  std::vector<uint8_t> message;
  Request recv;
  bool arrived = false;
  std::vector<uint8_t> weights;
  Request send;
};

PartialReduce::PartialReduce(Communicator &group, size_t gradientCount,
                             size_t lossCount, size_t weightCount,
                             double graceMs, int64_t firstStep)
    : group(group), gradientCount(gradientCount), lossCount(lossCount),
      weightCount(weightCount), graceMs(graceMs) {
  size_t bytes =
      sizeof(GradientHeader) + (gradientCount + lossCount) * sizeof(float);
  if (!leads()) {
    message.resize(bytes);
    weightMessage.resize(sizeof(int64_t) + weightCount * sizeof(float));
    return;
  }
  peers.resize(size_t(group.size()));
  for (size_t j = 1; j < peers.size(); ++j) {
    peers[j].computing = firstStep;
    peers[j].message.resize(bytes);
    listen(peers[j]);
  }
}

PartialReduce::~PartialReduce() = default;

void PartialReduce::listen(Peer &peer) {
  int replica = int(&peer - peers.data());
  peer.arrived = false;
  peer.recv = group.irecv(peer.message.data(), peer.message.size(), replica,
                          kGradientTag);
}

void PartialReduce::take(int replica, Peer &peer, ReduceRound &round,
                         std::vector<float> &gradient,
                         std::vector<float> &losses) {
  GradientHeader header;
  std::memcpy(&header, peer.message.data(), sizeof header);
  if (header.step != peer.computing)
    throw Error("partial reduce: replica " + std::to_string(replica) +
                " sent the gradient of step " +
                std::to_string(header.step + 1) + " but computes step " +
                std::to_string(peer.computing + 1));
  const float *values =
      reinterpret_cast<const float *>(peer.message.data() + sizeof header);
  // Staleness-aware: a gradient tau rounds old counts 1 / (1 + tau).
  float weight = 1.0f / float(1 + round.step - header.step);
  for (size_t k = 0; k < gradientCount; ++k)
    gradient[k] += weight * values[k];
  for (size_t k = 0; k < lossCount; ++k)
    losses[k] += values[gradientCount + k];
  roundWeight += weight;
  round.steps[size_t(replica)] = header.step;
  round.times[size_t(replica)] = header.times;
}

ReduceRound PartialReduce::reduce(int64_t step, std::vector<float> &gradient,
                                  std::vector<float> &losses,
                                  const StepTimes &mine, bool last) {
  ReduceRound round;
  round.step = step;
  round.steps.assign(peers.size(), -1);
  round.times.assign(peers.size(), StepTimes());
  round.steps[0] = step;
  round.times[0] = mine;
  roundWeight = 0;
  // Due: a gradient that would be older than the bound if a later round
  // took it, and every gradient at the last step.
  for (size_t j = 1; j < peers.size(); ++j)
    if (!peers[j].arrived &&
        (last ||
         peers[j].computing + schedule::kPartialReduceStaleness <= step)) {
      group.wait(peers[j].recv);
      peers[j].arrived = true;
    }
  // The others get the grace period.
  double deadline = nowMs() + graceMs;
  pollUntil(
      [&] {
        bool all = true;
        for (size_t j = 1; j < peers.size(); ++j) {
          if (!peers[j].arrived && group.test(peers[j].recv))
            peers[j].arrived = true;
          all = all && peers[j].arrived;
        }
        return all || nowMs() >= deadline;
      },
      group.timeout(), [] { return std::string("in a partial reduce"); });
  // Replica order, so that a round of every replica adds as an all-reduce of
  // two does (a + b), whatever order they arrived in.
  for (size_t j = 1; j < peers.size(); ++j)
    if (peers[j].arrived)
      take(int(j), peers[j], round, gradient, losses);
  // The weighted mean, scaled to R as the all-reduce's sum is; nothing to
  // scale when every replica's gradient of this step is there.
  int n = round.members();
  if (roundWeight + 1.0f != float(group.size())) {
    float scale = float(group.size()) / (roundWeight + 1.0f);
    for (float &g : gradient)
      g *= scale;
    float lossScale = float(group.size()) / float(n);
    for (float &l : losses)
      l *= lossScale;
  }
  return round;
}

void PartialReduce::sendWeights(const ReduceRound &round,
                                const std::vector<float> &weights, bool last) {
  for (size_t j = 1; j < peers.size(); ++j) {
    Peer &peer = peers[j];
    if (round.steps[j] < 0)
      continue;
    // The previous round's send to it has long been received: the replica
    // computed a whole step since.
    group.wait(peer.send);
    peer.weights.resize(sizeof(int64_t) + weightCount * sizeof(float));
    std::memcpy(peer.weights.data(), &round.step, sizeof(int64_t));
    std::memcpy(peer.weights.data() + sizeof(int64_t), weights.data(),
                weightCount * sizeof(float));
    peer.send = group.isend(peer.weights.data(), peer.weights.size(), int(j),
                            kWeightsTag);
    peer.computing = round.step + 1;
    if (last)
      group.wait(peer.send);
    else
      listen(peer);
  }
}

void PartialReduce::sendGradient(int64_t step,
                                 const std::vector<float> &gradient,
                                 const std::vector<float> &losses,
                                 const StepTimes &times) {
  GradientHeader header{step, times};
  std::memcpy(message.data(), &header, sizeof header);
  std::memcpy(message.data() + sizeof header, gradient.data(),
              gradientCount * sizeof(float));
  std::memcpy(message.data() + sizeof header + gradientCount * sizeof(float),
              losses.data(), lossCount * sizeof(float));
  pending = group.isend(message.data(), message.size(), 0, kGradientTag);
  weightRecv =
      group.irecv(weightMessage.data(), weightMessage.size(), 0, kWeightsTag);
}

int64_t PartialReduce::receiveWeights(std::vector<float> &weights) {
  group.wait(weightRecv);
  group.wait(pending);
  int64_t round;
  std::memcpy(&round, weightMessage.data(), sizeof round);
  weights.resize(weightCount);
  std::memcpy(weights.data(), weightMessage.data() + sizeof round,
              weightCount * sizeof(float));
  return round;
}

} // namespace dpc::runtime
