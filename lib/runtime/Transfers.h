//===- Transfers.h - Schedule messages between ranks ------------*- C++ -*-===//
//
// All tensors one schedule message carries (every manifest send of this rank
// with the message's payload kind and peer) travel as one message, packed in
// ascending transfer-tag order at 64-byte aligned offsets. Both ends compute
// the same PackLayout from their manifests, so the message's tag is exactly
// the schedule's. dpc_send copies straight into the pack (narrowing bf16
// entries), and dpc_recv returns a pointer into the received one (widened
// back to f32 at RecvFinish).
//
// Transfers holds a rank's messages of one step: packs dpc_send is filling,
// sends and receives in flight with their requests, and received packs until
// the microbatch's backward releases them. It posts them on a communicator,
// through host copies when the device's memory is not the host's.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_TRANSFERS_H
#define DPC_LIB_RUNTIME_TRANSFERS_H

#include "Buffers.h"

#include "dpc/runtime/Communicator.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/schedule/Schedule.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace dpc::runtime {

/// The boundary a message crosses, seen from this rank: the (virtual) stage
/// of this rank it belongs to, the stage at the other end and what it
/// carries. With one stage per rank the stages are ranks.
struct Boundary {
  int stage = 0;
  int peer = 0;
  TransferKind what = TransferKind::Activation;
  bool operator<(const Boundary &o) const {
    return std::tie(stage, peer, what) < std::tie(o.stage, o.peer, o.what);
  }
  bool operator==(const Boundary &o) const {
    return stage == o.stage && peer == o.peer && what == o.what;
  }
};

/// The boundary a transfer instruction of virtual stage `stage` crosses:
/// activations go from a stage to the next, gradients back.
Boundary boundaryOf(const schedule::Instruction &i, int stage);
/// The boundary of a manifest transfer.
inline Boundary boundaryOf(const ManifestTransfer &t) {
  return {int(t.stage), int(t.peerStage), t.what};
}

/// Where each tensor of one schedule message sits in its pack. On the wire
/// a bf16 entry (ManifestTransfer::bf16) takes half its bytes: `wireOffset`
/// and `wireTotal` lay out the message as sent, `offset` and `total` the
/// f32 buffers the generated code reads after the receive widened them.
struct PackLayout {
  struct Entry {
    int64_t tag;
    size_t offset;
    int64_t bytes;
    bool bf16;
    size_t wireOffset;
  };
  std::vector<Entry> entries; // ascending tag
  size_t total = 0;
  size_t wireTotal = 0;
  bool anyBf16 = false;
};

/// One layout per boundary the transfers cross.
std::map<Boundary, PackLayout>
makeLayouts(const std::vector<ManifestTransfer> &transfers);

/// The f32 buffers of a received message with bf16 entries (host memory:
/// bf16 transfers are built for the CPU target only).
Buffer widen(Device &device, BufferPool &pool, const PackLayout &layout,
             const Buffer &wire);

class Transfers {
public:
  /// Packs come from `pool`; `hostPool` holds their host copies when the
  /// communicator cannot take the device's memory.
  Transfers(Device &device, BufferPool &pool, BufferPool &hostPool,
            Communicator &comm);

  /// From now on messages go over `comm`; `staged`: through host copies.
  void setCommunicator(Communicator &comm, bool staged);
  bool staged() const { return staging; }

  /// dpc_send: copies the value of `tag` (an entry of `layout`, the pack of
  /// boundary b) into microbatch mb's pack. Throws AbiError when the value
  /// was sent already.
  void pack(const PackLayout &layout, Boundary b, int mb, int64_t tag,
            const void *data);
  /// dpc_recv: the value of `tag` in microbatch mb's received pack. Throws
  /// AbiError when it has not arrived. `layouts` are the receive layouts
  /// of the microbatch's shape.
  const void *unpacked(const std::map<Boundary, PackLayout> &layouts,
                       Boundary b, int mb, int64_t tag) const;

  /// What a finished message was, for the trace.
  struct Finished {
    std::string name;
    double startMs = 0;
  };

  /// SendStart: posts microbatch mb's pack of boundary b, which every entry
  /// of `layout` must have filled. Errors (thrown as Error) open with `at`.
  void sendStart(const PackLayout &layout, Boundary b, int mb, int tag,
                 int peer, const std::string &at);
  Finished sendFinish(int tag, int mb, const std::string &at);
  /// RecvStart: posts the receive of microbatch mb's pack of boundary b.
  void recvStart(const PackLayout &layout, Boundary b, int mb, int tag,
                 int peer, const std::string &at);
  /// RecvFinish: waits for it; `layouts` are the receive layouts of the
  /// microbatch's shape.
  Finished recvFinish(const std::map<Boundary, PackLayout> &layouts, int tag,
                      int mb, const std::string &at);

  /// The segment of `stage` that reads what microbatch mb received has run
  /// (the forward its activations, whose later needs the IR stashes; the
  /// backward, or a split one's weight half, its output gradient): its
  /// received packs go.
  void releaseReceived(int mb, int stage);

  /// What is left over at the end of a step, or "": a message in flight or
  /// a pack filled and never sent, and a received pack not released.
  std::string leftoverInFlight() const;
  std::string leftoverReceived() const;

private:
  struct Pending {
    Request request;
    /// The pack in device memory, and its host copy that the communicator
    /// moves when the device is not host-accessible.
    Buffer buffer, staging;
    Boundary boundary;
    double startMs = 0;
    std::string name;
  };
  struct Staged {
    Buffer buffer;
    std::vector<bool> filled;
  };

  void postSend(int mb, int tag, int peer, const std::string &at, Boundary b,
                Buffer buffer, size_t bytes);

  Device &device;
  BufferPool &pool, &hostPool;
  Communicator *comm;
  bool staging;
  std::map<std::pair<Boundary, int>, Staged> packing;                // + mb
  std::map<std::pair<int, int>, Pending> pendingSends, pendingRecvs; // tag, mb
  std::map<std::pair<Boundary, int>, Buffer> received;               // + mb
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_TRANSFERS_H
