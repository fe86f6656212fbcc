//===- TransfersTest.cpp - Schedule messages without a schedule -----------===//
//
// Pack layouts, dpc_send's packing (bf16 narrowing included), a message's
// way out and back in through a communicator that delivers a rank's sends
// to its own receives, dpc_recv's view of the received pack, and the
// errors of each, on the host and on a device the host may not read.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/Transfers.h"
#include "lib/runtime/AbiError.h"

#include "dpc/runtime/Bf16.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/MessagesOnly.h"
#include "test/unittests/runtime/StagingDevice.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

using namespace dpc::runtime;
namespace sched = dpc::schedule;

namespace {

/// One rank whose sends arrive at its own receives of the same tag (the
/// send must be posted first). Counts the bytes it moved.
class LoopbackCommunicator : public MessagesOnlyCommunicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Request isend(const void *data, size_t bytes, int, int tag) override {
    const auto *p = static_cast<const uint8_t *>(data);
    messages[tag].assign(p, p + bytes);
    sentBytes += int64_t(bytes);
    return Request{next++};
  }
  Request irecv(void *data, size_t bytes, int, int tag) override {
    Request r{next++};
    receives[r.id] = {data, bytes, tag};
    return r;
  }
  void wait(Request &r) override {
    auto it = receives.find(r.id);
    if (it != receives.end()) {
      const std::vector<uint8_t> &m = messages.at(it->second.tag);
      if (m.size() != it->second.bytes)
        throw Error("size mismatch");
      if (!m.empty())
        std::memcpy(it->second.data, m.data(), m.size());
      receives.erase(it);
    }
    r.id = -1;
  }
  bool test(Request &r) override {
    wait(r);
    return true;
  }

  int64_t sentBytes = 0;

private:
  struct Receive {
    void *data;
    size_t bytes;
    int tag;
  };
  int64_t next = 0;
  std::map<int, std::vector<uint8_t>> messages;
  std::map<int64_t, Receive> receives;
};

ManifestTransfer transfer(int64_t tag, int64_t stage, int64_t peer,
                          TransferKind what, int64_t bytes, bool bf16 = false) {
  ManifestTransfer t;
  t.tag = tag;
  t.stage = stage;
  t.peerStage = peer;
  t.what = what;
  t.bytes = bytes;
  t.bf16 = bf16;
  return t;
}

const Boundary kAct{1, 2, TransferKind::Activation};
const Boundary kGrad{1, 0, TransferKind::Gradient};

TEST(PackLayout, AscendingTagsAtAlignedOffsetsPerBoundary) {
  auto layouts = makeLayouts(
      {transfer(7, 1, 2, TransferKind::Activation, 40),
       transfer(2, 1, 2, TransferKind::Activation, 100, /*bf16=*/true),
       transfer(5, 1, 0, TransferKind::Gradient, 8)});
  ASSERT_EQ(layouts.size(), 2u);
  const PackLayout &act = layouts.at(kAct);
  ASSERT_EQ(act.entries.size(), 2u);
  EXPECT_EQ(act.entries[0].tag, 2);
  EXPECT_EQ(act.entries[0].offset, 0u);
  EXPECT_EQ(act.entries[1].tag, 7);
  EXPECT_EQ(act.entries[1].offset, 128u);
  EXPECT_EQ(act.total, 192u);
  // On the wire the bf16 entry takes half its 100 bytes, rounded up.
  EXPECT_EQ(act.entries[1].wireOffset, 64u);
  EXPECT_EQ(act.wireTotal, 128u);
  EXPECT_TRUE(act.anyBf16);
  EXPECT_FALSE(layouts.at(kGrad).anyBf16);
  EXPECT_EQ(layouts.at(kGrad).total, 64u);
}

TEST(PackLayout, InstructionsCrossTheirStagesBoundary) {
  using sched::Instruction;
  using sched::Op;
  using sched::Payload;
  auto at = [](Op op, Payload what) {
    return boundaryOf(Instruction::transfer(op, what, 0, 0, 0, 0, 0), 1);
  };
  EXPECT_EQ(at(Op::SendStart, Payload::Activation), kAct);
  EXPECT_EQ(at(Op::RecvFinish, Payload::Gradient),
            (Boundary{1, 2, TransferKind::Gradient}));
  EXPECT_EQ(at(Op::SendFinish, Payload::Gradient), kGrad);
  EXPECT_EQ(at(Op::RecvStart, Payload::Activation),
            (Boundary{1, 0, TransferKind::Activation}));
}

class TransfersTest : public ::testing::TestWithParam<bool> {
protected:
  Device &device() {
    return GetParam() ? static_cast<Device &>(staging) : *hostDevice;
  }
  StagingDevice staging;
  std::unique_ptr<Device> hostDevice = createHostDevice();
  std::unique_ptr<Device> hostMemory = createHostDevice();
  LoopbackCommunicator comm;
};

INSTANTIATE_TEST_SUITE_P(Devices, TransfersTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "Staged" : "Host";
                         });

TEST_P(TransfersTest, PackSendReceiveUnpack) {
  BufferPool pool(device()), hostPool(*hostMemory);
  Transfers transfers(device(), pool, hostPool, comm);
  EXPECT_EQ(transfers.staged(), GetParam());
  std::map<Boundary, PackLayout> layouts =
      makeLayouts({transfer(3, 1, 2, TransferKind::Activation, 8),
                   transfer(4, 1, 2, TransferKind::Activation, 12)});
  const PackLayout &layout = layouts.at(kAct);
  Buffer a(pool, 8), b(pool, 12);
  float av[2] = {1.5f, -2}, bv[3] = {3, 4, 5};
  device().copyFromHost(a.data(), av, sizeof av);
  device().copyFromHost(b.data(), bv, sizeof bv);

  // Filled in any order; sent once both are there.
  transfers.pack(layout, kAct, 0, 4, b.data());
  EXPECT_EQ(
      errorOf([&] { transfers.sendStart(layout, kAct, 0, 9, 0, "at: "); }),
      "at: no value for transfer tag 3 (the segment did not call "
      "dpc_send for this microbatch)");
  EXPECT_EQ(errorOf([&] { transfers.pack(layout, kAct, 0, 4, b.data()); }),
            "transfer tag 4 was already sent for this microbatch");
  transfers.pack(layout, kAct, 0, 3, a.data());
  EXPECT_EQ(transfers.leftoverInFlight(),
            "dpc_send stored act for mb 0 to stage 2 but the schedule never "
            "sent it");
  transfers.sendStart(layout, kAct, 0, 9, 0, "at: ");
  EXPECT_EQ(transfers.leftoverInFlight(), "send with tag 9 was never finished");
  EXPECT_EQ(errorOf([&] { transfers.sendStart(layout, kAct, 0, 9, 0, "s: "); }),
            "s: no value for transfer tag 3 (the segment did not call "
            "dpc_send for this microbatch)");
  Transfers::Finished sent = transfers.sendFinish(9, 0, "at: ");
  EXPECT_EQ(sent.name, "send act mb0");
  EXPECT_EQ(comm.sentBytes, int64_t(layout.wireTotal));

  // The same message received: as if this rank were stage 2's.
  EXPECT_EQ(errorOf([&] { transfers.unpacked(layouts, kAct, 0, 3); }),
            "transfer tag 3 was never received for this microbatch");
  transfers.recvStart(layout, kAct, 0, 9, 0, "at: ");
  EXPECT_EQ(errorOf([&] { transfers.recvStart(layout, kAct, 0, 9, 0, "r: "); }),
            "r: a receive with tag 9 is already in flight");
  EXPECT_EQ(errorOf([&] { transfers.unpacked(layouts, kAct, 0, 3); }),
            "transfer tag 3 is still in flight (no RecvFinish before this "
            "segment)");
  EXPECT_EQ(transfers.leftoverInFlight(),
            "receive with tag 9 was never finished");
  EXPECT_EQ(transfers.recvFinish(layouts, 9, 0, "at: ").name, "recv act mb0");
  EXPECT_EQ(errorOf([&] { transfers.recvStart(layout, kAct, 0, 9, 1, "r: "); }),
            "r: microbatch 0 was already received from rank 1");
  float got[3];
  device().copyToHost(got, transfers.unpacked(layouts, kAct, 0, 3), 8);
  EXPECT_EQ(got[0], 1.5f);
  EXPECT_EQ(got[1], -2.0f);
  device().copyToHost(got, transfers.unpacked(layouts, kAct, 0, 4), 12);
  EXPECT_EQ(std::vector<float>(got, got + 3), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(transfers.leftoverInFlight(), "");
  EXPECT_EQ(transfers.leftoverReceived(),
            "a received value of mb 0 is still live (its backward never ran)");
  // Another stage's backward leaves it; its own frees it.
  transfers.releaseReceived(0, 2);
  EXPECT_NE(transfers.leftoverReceived(), "");
  transfers.releaseReceived(0, 1);
  EXPECT_EQ(transfers.leftoverReceived(), "");
  EXPECT_THROW(transfers.unpacked(layouts, kAct, 0, 3), AbiError);

  EXPECT_EQ(errorOf([&] { transfers.sendFinish(9, 0, "f: "); }),
            "f: no send with tag 9 was started");
  EXPECT_EQ(errorOf([&] { transfers.recvFinish(layouts, 9, 0, "f: "); }),
            "f: no receive with tag 9 was started");
  // Staged, the packs went through host copies: one down, one up.
  if (GetParam()) {
    EXPECT_EQ(staging.downloads, 1 + 2);
    EXPECT_EQ(staging.uploads, 2 + 1);
  }
}

TEST_P(TransfersTest, EmptyMessagesKeepTheOrder) {
  // A boundary the IR moves nothing across still sends, zero bytes.
  BufferPool pool(device()), hostPool(*hostMemory);
  Transfers transfers(device(), pool, hostPool, comm);
  std::map<Boundary, PackLayout> layouts;
  layouts[kGrad];
  transfers.sendStart(layouts.at(kGrad), kGrad, 1, 3, 0, "");
  transfers.sendFinish(3, 1, "");
  transfers.recvStart(layouts.at(kGrad), kGrad, 1, 3, 0, "");
  transfers.recvFinish(layouts, 3, 1, "");
  EXPECT_EQ(comm.sentBytes, 0);
  EXPECT_NE(transfers.leftoverReceived(), "");
}

TEST(Transfers, Bf16EntriesTravelNarrowAndArriveWidened) {
  std::unique_ptr<Device> device = createHostDevice();
  BufferPool pool(*device), hostPool(*device);
  LoopbackCommunicator comm;
  Transfers transfers(*device, pool, hostPool, comm);
  std::map<Boundary, PackLayout> layouts =
      makeLayouts({transfer(0, 1, 2, TransferKind::Activation, 16, true),
                   transfer(1, 1, 2, TransferKind::Activation, 4)});
  const PackLayout &layout = layouts.at(kAct);
  float narrow[4] = {1.0f, 1.00390625f, -3.14159265f, 1e-3f};
  float plain = 3.14159265f;
  transfers.pack(layout, kAct, 0, 0, narrow);
  transfers.pack(layout, kAct, 0, 1, &plain);
  transfers.sendStart(layout, kAct, 0, 5, 0, "");
  transfers.sendFinish(5, 0, "");
  EXPECT_EQ(comm.sentBytes, 64 + 64);
  transfers.recvStart(layout, kAct, 0, 5, 0, "");
  transfers.recvFinish(layouts, 5, 0, "");
  const auto *got =
      static_cast<const float *>(transfers.unpacked(layouts, kAct, 0, 0));
  for (int k = 0; k < 4; ++k) {
    uint16_t bits;
    floatsToBf16(&narrow[k], &bits, 1);
    float expected;
    bf16ToFloats(&bits, &expected, 1);
    EXPECT_EQ(got[k], expected) << k;
  }
  // bf16 keeps 8 bits of mantissa: 1 + 2^-8 rounds to even, pi loses its
  // tail.
  EXPECT_EQ(got[1], 1.0f);
  EXPECT_NE(got[2], narrow[2]);
  EXPECT_NEAR(got[2], narrow[2], 0.01);
  // The f32 entry arrives as it was.
  EXPECT_EQ(
      *static_cast<const float *>(transfers.unpacked(layouts, kAct, 0, 1)),
      plain);
}

} // namespace
