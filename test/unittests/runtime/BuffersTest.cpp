//===- BuffersTest.cpp - The executor's device memory ---------------------===//
//
// The pool, the scratch allocator, host staging and stash slots on their
// own, without a schedule: sizes recycled, alignment, the slots' lifetimes
// per microbatch and stage, and the messages a compiler bug produces.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/Buffers.h"
#include "lib/runtime/AbiError.h"
#include "lib/runtime/Shapes.h"

#include "dpc/runtime/Error.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/StagingDevice.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace dpc::runtime;

namespace {

TEST(BufferPool, RecyclesBuffersOfTheSameRoundedSize) {
  StagingDevice device;
  BufferPool pool(device);
  void *first;
  {
    Buffer a(pool, 100);
    first = a.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kBufferAlign, 0u);
    EXPECT_EQ(a.size(), 100u);
  }
  EXPECT_EQ(pool.idle(), 1u);
  // 128 rounds to what 100 did: the same memory comes back.
  Buffer b(pool, 128);
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(pool.idle(), 0u);
  // Another size allocates.
  Buffer c(pool, 129);
  EXPECT_NE(c.data(), first);
  // Moving hands the bytes over without giving them back.
  Buffer d = std::move(c);
  EXPECT_FALSE(c);
  EXPECT_TRUE(d);
  EXPECT_EQ(pool.idle(), 0u);
  // Empty requests still get distinct aligned memory.
  Buffer e(pool, 0);
  EXPECT_TRUE(e);
}

TEST(Scratch, AlignsAndMergesOverflowedBlocks) {
  StagingDevice device;
  Scratch scratch(device);
  for (size_t bytes : {size_t(1), size_t(3), size_t(64), size_t(100)}) {
    void *p = scratch.alloc(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kBufferAlign, 0u) << bytes;
  }
  EXPECT_EQ(scratch.blocks(), 1u);
  scratch.alloc(size_t(3) << 20); // beyond the first 1 MiB block
  EXPECT_EQ(scratch.blocks(), 2u);
  scratch.reset();
  EXPECT_EQ(scratch.blocks(), 1u);
  // The merged block holds the whole segment's demand again.
  scratch.alloc(256);
  scratch.alloc(size_t(3) << 20);
  EXPECT_EQ(scratch.blocks(), 1u);
}

// What plan-memory predicts is memory in use: buffers the pool has handed
// out and the running segment's scratch, not what either keeps for reuse.
TEST(MemoryMeter, CountsWhatIsInUseNotWhatIsKept) {
  StagingDevice device;
  MemoryMeter meter;
  BufferPool pool(device, &meter);
  Scratch scratch(device, &meter);
  {
    Buffer a(pool, 100); // 128 bytes, rounded
    Buffer b(pool, 64);
    EXPECT_EQ(meter.bytes(), 192);
  }
  EXPECT_EQ(meter.bytes(), 0);
  EXPECT_EQ(pool.idle(), 2u);
  Buffer c(pool, 128); // recycled, in use again
  EXPECT_EQ(meter.bytes(), 128);
  scratch.alloc(1000); // 1024; the 1 MiB block is not in use
  scratch.alloc(size_t(2) << 20);
  EXPECT_EQ(meter.bytes(), 128 + 1024 + (int64_t(2) << 20));
  scratch.reset();
  EXPECT_EQ(meter.bytes(), 128);
  scratch.alloc(64);
  EXPECT_EQ(meter.bytes(), 192);
  EXPECT_EQ(meter.peakBytes(), 128 + 1024 + (int64_t(2) << 20));
}

TEST(HostStaging, CopiesOnlyWhenTheHostCannotRead) {
  std::unique_ptr<Device> host = createHostDevice();
  StagingDevice staged;
  for (Device *device : {host.get(), static_cast<Device *>(&staged)}) {
    BufferPool pool(*device);
    Buffer b(pool, 4 * sizeof(float));
    std::vector<uint8_t> up, down;
    uploadTo(*device, b.data(), b.size(), up, [](void *dst) {
      float values[4] = {1, 2, 3, 4};
      std::memcpy(dst, values, sizeof values);
    });
    const auto *read = static_cast<const float *>(
        downloadFrom(*device, b.data(), b.size(), down));
    EXPECT_EQ(std::vector<float>(read, read + 4),
              (std::vector<float>{1, 2, 3, 4}));
    // The host reads device memory in place; the staging device through a
    // copy.
    EXPECT_EQ(static_cast<const void *>(read) == b.data(),
              device->hostAccessible());
  }
  EXPECT_EQ(staged.uploads, 1);
  EXPECT_EQ(staged.downloads, 1);
}

ManifestStash stashSpec(int64_t key, int64_t stage, std::string name = "") {
  ManifestStash s;
  s.key = key;
  s.stage = stage;
  s.name = std::move(name);
  s.bytes = 16;
  return s;
}

TEST(StashStore, SlotsLiveUntilTheirStagesBackward) {
  StagingDevice device;
  BufferPool pool(device);
  StashStore store(device, pool);
  ManifestStash x = stashSpec(0, 0, "x"), y = stashSpec(1, 2);
  float values[4] = {1, 2, 3, 4};
  store.stash(x, 0, 16, values);
  values[0] = 9;
  store.stash(x, 1, 16, values);
  store.stash(y, 0, 8, values); // chunk 1's stage, another shape
  EXPECT_EQ(store.bytes(), 40);
  EXPECT_EQ(store.slots(), 3u);
  // Copied when stashed, not read later.
  EXPECT_EQ(static_cast<const float *>(store.restore(x, 0))[0], 1.0f);
  EXPECT_EQ(static_cast<const float *>(store.restore(x, 1))[0], 9.0f);

  // The backward of stage 0 for mb 0 frees x's slot of mb 0 only.
  store.release(0, 0);
  EXPECT_EQ(store.bytes(), 24);
  EXPECT_EQ(store.peakBytes(), 40);
  EXPECT_EQ(errorOf([&] { store.restore(x, 0); }),
            "stash key 0 ('x') holds nothing for this microbatch (never "
            "stashed, or already released)");
  EXPECT_NO_THROW(store.restore(y, 0));
  EXPECT_EQ(store.leftover(), "stash key 0 of mb 1 is still live (its "
                              "backward never ran)");
  EXPECT_EQ(errorOf([&] { store.stash(x, 1, 16, values); }),
            "stash key 0 ('x') was already stashed for this microbatch");
  store.release(1, 0);
  store.release(0, 2);
  EXPECT_EQ(store.leftover(), "");
  EXPECT_EQ(store.bytes(), 0);
  // A stash refused is an AbiError, which the ABI entry points report.
  EXPECT_THROW(store.restore(y, 0), AbiError);
}

/// A bucketed manifest: two shapes of one stage whose pack and stash sizes
/// scale with the sequence length.
RankManifest bucketedManifest() {
  RankManifest m;
  m.stages = 2;
  m.microbatchSize = 4;
  auto bucket = [](int64_t batch, int64_t length) {
    ManifestBucket b;
    b.batch = batch;
    b.length = length;
    b.inputs = {ManifestTensor{"input", {batch, length}, true}};
    ManifestTransfer act;
    act.tag = 0;
    act.peerStage = 1;
    act.bytes = batch * length * 16;
    b.sends = {act};
    b.stashes = {stashSpec(0, 0)};
    b.stashes[0].bytes = batch * length * 4;
    return b;
  };
  m.buckets = {bucket(8, 16), bucket(4, 64)};
  m.topBucket = 1;
  m.inputs = m.buckets[1].inputs;
  m.sends = m.buckets[1].sends;
  m.stashes = m.buckets[1].stashes;
  return m;
}

TEST(Shapes, OnePerBucketSizedByIt) {
  RankManifest m = bucketedManifest();
  std::vector<Shapes> shapes = bucketShapes(m);
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].batch, 8);
  EXPECT_EQ(shapes[0].length, 16);
  EXPECT_EQ(shapes[0].stashBytes.at(0), 8 * 16 * 4);
  EXPECT_EQ(shapes[1].stashBytes.at(0), 4 * 64 * 4);
  Boundary b{0, 1, TransferKind::Activation};
  EXPECT_EQ(shapes[0].sendLayouts.at(b).total, size_t(8 * 16 * 16));
  EXPECT_EQ(shapes[1].sendLayouts.at(b).total, size_t(4 * 64 * 16));
  EXPECT_EQ((*shapes[1].inputs)[0].shape, (std::vector<int64_t>{4, 64}));
  // A fixed-shape build has the manifest's own shape, batch first.
  m.buckets.clear();
  shapes = bucketShapes(m);
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].batch, 4);
  EXPECT_EQ(shapes[0].length, 0);
  EXPECT_EQ(shapes[0].stashBytes.at(0), 4 * 64 * 4);
}

} // namespace
