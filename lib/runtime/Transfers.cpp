//===- Transfers.cpp - Schedule messages between ranks --------------------===//

#include "Transfers.h"

#include "AbiError.h"

#include "dpc/runtime/Bf16.h"
#include "dpc/runtime/Executor.h"

#include <algorithm>

using dpc::schedule::Instruction;
using dpc::schedule::Op;
using dpc::schedule::Payload;

namespace dpc::runtime {

Boundary boundaryOf(const Instruction &i, int stage) {
  bool send = i.op == Op::SendStart || i.op == Op::SendFinish;
  bool act = i.what != Payload::Gradient;
  return {stage, stage + (send == act ? 1 : -1),
          i.what == Payload::Gradient ? TransferKind::Gradient
                                      : TransferKind::Activation};
}

std::map<Boundary, PackLayout>
makeLayouts(const std::vector<ManifestTransfer> &transfers) {
  std::map<Boundary, PackLayout> layouts;
  std::vector<ManifestTransfer> sorted = transfers;
  std::sort(sorted.begin(), sorted.end(),
            [](auto &a, auto &b) { return a.tag < b.tag; });
  for (const ManifestTransfer &t : sorted) {
    PackLayout &layout = layouts[boundaryOf(t)];
    layout.entries.push_back(
        {t.tag, layout.total, t.bytes, t.bf16, layout.wireTotal});
    layout.total += alignBytes(size_t(t.bytes));
    layout.wireTotal += alignBytes(size_t(t.wireBytes()));
    layout.anyBf16 |= t.bf16;
  }
  return layouts;
}

Buffer widen(Device &device, BufferPool &pool, const PackLayout &layout,
             const Buffer &wire) {
  Buffer plain(pool, layout.total);
  for (const PackLayout::Entry &e : layout.entries) {
    if (e.bf16)
      bf16ToFloats(
          reinterpret_cast<const uint16_t *>(wire.data() + e.wireOffset),
          reinterpret_cast<float *>(plain.data() + e.offset), e.bytes / 4);
    else
      device.copy(plain.data() + e.offset, wire.data() + e.wireOffset,
                  size_t(e.bytes));
  }
  return plain;
}

Transfers::Transfers(Device &device, BufferPool &pool, BufferPool &hostPool,
                     Communicator &comm)
    : device(device), pool(pool), hostPool(hostPool), comm(&comm),
      staging(!device.hostAccessible()) {}

void Transfers::setCommunicator(Communicator &c, bool staged) {
  comm = &c;
  staging = staged;
}

void Transfers::pack(const PackLayout &layout, Boundary b, int mb, int64_t tag,
                     const void *data) {
  Staged &s = packing[{b, mb}];
  if (!s.buffer) {
    s.buffer = Buffer(pool, layout.wireTotal);
    s.filled.assign(layout.entries.size(), false);
  }
  for (size_t e = 0; e < layout.entries.size(); ++e)
    if (layout.entries[e].tag == tag) {
      if (s.filled[e])
        throw AbiError("transfer tag " + std::to_string(tag) +
                       " was already sent for this microbatch");
      uint8_t *to = s.buffer.data() + layout.entries[e].wireOffset;
      int64_t bytes = layout.entries[e].bytes;
      if (layout.entries[e].bf16)
        floatsToBf16(static_cast<const float *>(data),
                     reinterpret_cast<uint16_t *>(to), bytes / 4);
      else
        device.copy(to, data, size_t(bytes));
      s.filled[e] = true;
    }
}

const void *Transfers::unpacked(const std::map<Boundary, PackLayout> &layouts,
                                Boundary b, int mb, int64_t tag) const {
  auto it = received.find({b, mb});
  if (it == received.end()) {
    for (auto &[key, p] : pendingRecvs)
      if (key.second == mb && p.boundary == b)
        throw AbiError("transfer tag " + std::to_string(tag) +
                       " is still in flight (no RecvFinish before this "
                       "segment)");
    throw AbiError("transfer tag " + std::to_string(tag) +
                   " was never received for this microbatch");
  }
  for (const PackLayout::Entry &e : layouts.at(b).entries)
    if (e.tag == tag)
      return it->second.data() + e.offset;
  throw AbiError("internal error: tag missing from its pack");
}

void Transfers::sendStart(const PackLayout &layout, Boundary b, int mb, int tag,
                          int peer, const std::string &at) {
  if (layout.entries.empty()) {
    postSend(mb, tag, peer, at, b, Buffer(pool, 0), 0);
    return;
  }
  auto it = packing.find({b, mb});
  for (size_t e = 0; e < layout.entries.size(); ++e)
    if (it == packing.end() || !it->second.filled[e])
      throw Error(at + "no value for transfer tag " +
                  std::to_string(layout.entries[e].tag) +
                  " (the segment did not call dpc_send for this "
                  "microbatch)");
  Buffer buffer = std::move(it->second.buffer);
  packing.erase(it);
  postSend(mb, tag, peer, at, b, std::move(buffer), layout.wireTotal);
}

void Transfers::postSend(int mb, int tag, int peer, const std::string &at,
                         Boundary b, Buffer buffer, size_t bytes) {
  if (pendingSends.count({tag, mb}))
    throw Error(at + "a send with tag " + std::to_string(tag) +
                " is already in flight");
  Pending p;
  p.buffer = std::move(buffer);
  p.boundary = b;
  p.startMs = Executor::nowMs();
  p.name = std::string("send ") + transferKindName(b.what) + " mb" +
           std::to_string(mb);
  const void *data = p.buffer.data();
  if (staging) {
    // Waits for the segment that produced the values.
    p.staging = Buffer(hostPool, bytes);
    device.copyToHost(p.staging.data(), p.buffer.data(), bytes);
    data = p.staging.data();
  }
  p.request = comm->isend(data, bytes, peer, tag);
  pendingSends.emplace(std::make_pair(tag, mb), std::move(p));
}

Transfers::Finished Transfers::sendFinish(int tag, int mb,
                                          const std::string &at) {
  auto it = pendingSends.find({tag, mb});
  if (it == pendingSends.end())
    throw Error(at + "no send with tag " + std::to_string(tag) +
                " was started");
  comm->wait(it->second.request);
  Finished done{std::move(it->second.name), it->second.startMs};
  pendingSends.erase(it);
  return done;
}

void Transfers::recvStart(const PackLayout &layout, Boundary b, int mb, int tag,
                          int peer, const std::string &at) {
  auto key = std::make_pair(tag, mb);
  if (pendingRecvs.count(key))
    throw Error(at + "a receive with tag " + std::to_string(tag) +
                " is already in flight");
  if (received.count({b, mb}))
    throw Error(at + "microbatch " + std::to_string(mb) +
                " was already received from rank " + std::to_string(peer));
  Pending p;
  p.buffer = Buffer(pool, layout.wireTotal);
  p.boundary = b;
  p.startMs = Executor::nowMs();
  p.name = std::string("recv ") + transferKindName(b.what) + " mb" +
           std::to_string(mb);
  void *data = p.buffer.data();
  if (staging) {
    p.staging = Buffer(hostPool, layout.wireTotal);
    data = p.staging.data();
  }
  p.request = comm->irecv(data, layout.wireTotal, peer, tag);
  pendingRecvs.emplace(key, std::move(p));
}

Transfers::Finished
Transfers::recvFinish(const std::map<Boundary, PackLayout> &layouts, int tag,
                      int mb, const std::string &at) {
  auto it = pendingRecvs.find({tag, mb});
  if (it == pendingRecvs.end())
    throw Error(at + "no receive with tag " + std::to_string(tag) +
                " was started");
  Pending &p = it->second;
  comm->wait(p.request);
  const PackLayout &layout = layouts.at(p.boundary);
  if (p.staging)
    device.copyFromHost(p.buffer.data(), p.staging.data(), layout.wireTotal);
  if (layout.anyBf16)
    p.buffer = widen(device, pool, layout, p.buffer);
  Finished done{std::move(p.name), p.startMs};
  received[{p.boundary, mb}] = std::move(p.buffer);
  pendingRecvs.erase(it);
  return done;
}

void Transfers::releaseReceived(int mb, int stage) {
  for (auto it = received.begin(); it != received.end();)
    it = it->first.second == mb && it->first.first.stage == stage
             ? received.erase(it)
             : std::next(it);
}

std::string Transfers::leftoverInFlight() const {
  if (!pendingSends.empty())
    return "send with tag " +
           std::to_string(pendingSends.begin()->first.first) +
           " was never finished";
  if (!pendingRecvs.empty())
    return "receive with tag " +
           std::to_string(pendingRecvs.begin()->first.first) +
           " was never finished";
  if (!packing.empty()) {
    auto &[key, s] = *packing.begin();
    return std::string("dpc_send stored ") + transferKindName(key.first.what) +
           " for mb " + std::to_string(key.second) + " to stage " +
           std::to_string(key.first.peer) + " but the schedule never sent it";
  }
  return "";
}

std::string Transfers::leftoverReceived() const {
  if (received.empty())
    return "";
  return "a received value of mb " +
         std::to_string(received.begin()->first.second) +
         " is still live (its backward never ran)";
}

} // namespace dpc::runtime
