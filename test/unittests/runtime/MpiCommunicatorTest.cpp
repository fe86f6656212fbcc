//===- MpiCommunicatorTest.cpp - MpiCommunicator under mpirun -------------===//
//
// Run as `mpirun -np 2 dpc-runtime-mpi-tests`: every rank runs every test,
// and the tests exchange messages between them. With one rank the tests that
// need a peer skip.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/MpiCommunicator.h"
#include "dpc/runtime/Error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>

using namespace dpc::runtime;
using ::testing::HasSubstr;

namespace {

Communicator *world = nullptr;

class Mpi : public ::testing::Test {
protected:
  void SetUp() override {
    if (world->size() < 2)
      GTEST_SKIP() << "needs mpirun -np 2 or more";
    world->setTimeout(std::chrono::seconds(30));
  }
  // Both ranks finish a test before either starts the next, so that a
  // failing test does not leave messages for the next one to match.
  void TearDown() override {
    if (world->size() >= 2)
      world->barrier();
  }
  int rank() const { return world->rank(); }
  int peer() const { return rank() == 0 ? 1 : 0; }
};

} // namespace

TEST_F(Mpi, PingPong) {
  if (rank() > 1)
    return;
  std::vector<float> buffer(1000);
  for (int round = 0; round < 10; ++round) {
    if ((round % 2) == rank()) {
      std::iota(buffer.begin(), buffer.end(), float(round));
      Request r = world->isend(buffer.data(), buffer.size() * 4, peer(), 5);
      world->wait(r);
      EXPECT_FALSE(r.active());
    } else {
      std::fill(buffer.begin(), buffer.end(), -1.0f);
      Request r = world->irecv(buffer.data(), buffer.size() * 4, peer(), 5);
      world->wait(r);
      EXPECT_EQ(buffer[0], float(round));
      EXPECT_EQ(buffer[999], float(round + 999));
    }
  }
}

// The executor posts receives in schedule order; messages with different
// tags must land in the right buffers whatever order they were sent in.
TEST_F(Mpi, OutOfOrderTags) {
  if (rank() > 1)
    return;
  const int n = 8;
  if (rank() == 0) {
    std::vector<int64_t> values(n);
    std::vector<Request> requests;
    for (int tag = n - 1; tag >= 0; --tag) {
      values[size_t(tag)] = 100 + tag;
      requests.push_back(world->isend(&values[size_t(tag)], 8, 1, tag));
    }
    for (Request &r : requests)
      world->wait(r);
  } else {
    std::vector<int64_t> values(n, -1);
    std::vector<Request> requests;
    for (int tag = 0; tag < n; ++tag)
      requests.push_back(world->irecv(&values[size_t(tag)], 8, 0, tag));
    // Complete them in yet another order, polling with test().
    size_t done = 0;
    while (done < requests.size()) {
      done = 0;
      for (Request &r : requests)
        done += world->test(r) ? 1 : 0;
    }
    for (int tag = 0; tag < n; ++tag)
      EXPECT_EQ(values[size_t(tag)], 100 + tag);
  }
}

TEST_F(Mpi, AllreduceSums) {
  std::vector<float> values(1 << 16);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i % 7) + float(rank());
  world->allreduceSum(values.data(), values.size());
  float rankSum = float(world->size() * (world->size() - 1) / 2);
  for (size_t i = 0; i < values.size(); i += 997)
    EXPECT_EQ(values[i], float(i % 7) * float(world->size()) + rankSum);
}

// A sharded optimizer's collectives over ranges of uneven sizes (rank r's
// range has r + 2 elements, so none is empty): the reduce-scatter sums only
// the rank's own range, the all-gather fills every range from its rank and
// ignores what the others held there.
TEST_F(Mpi, ReduceScatterAndAllgatherUnevenRanges) {
  int n = world->size();
  std::vector<size_t> counts, first;
  size_t total = 0;
  for (int r = 0; r < n; ++r) {
    first.push_back(total);
    counts.push_back(size_t(r + 2));
    total += size_t(r + 2);
  }
  std::vector<float> values(total);
  for (size_t k = 0; k < total; ++k)
    values[k] = float(k) + 100.0f * float(rank());
  world->reduceScatterSum(values.data(), counts);
  float ranks = float(n * (n - 1) / 2);
  for (size_t k = first[size_t(rank())];
       k < first[size_t(rank())] + counts[size_t(rank())]; ++k)
    EXPECT_EQ(values[k], float(k) * float(n) + 100.0f * ranks) << k;

  std::vector<float> gathered(total, -1.0f);
  for (size_t k = first[size_t(rank())];
       k < first[size_t(rank())] + counts[size_t(rank())]; ++k)
    gathered[k] = float(rank()) * 1000.0f + float(k);
  world->allgatherRanges(gathered.data(), counts);
  for (int r = 0; r < n; ++r)
    for (size_t k = first[size_t(r)]; k < first[size_t(r)] + counts[size_t(r)];
         ++k)
      EXPECT_EQ(gathered[k], float(r) * 1000.0f + float(k)) << k;
}

TEST_F(Mpi, SplitGroupsReplicas) {
  // Two "stages" of one rank each when run on 2 ranks: each group allreduces
  // alone.
  std::unique_ptr<Communicator> group = world->split(rank() % 2, rank());
  float value = float(rank() + 1);
  group->allreduceSum(&value, 1);
  float expected = 0;
  for (int r = rank() % 2; r < world->size(); r += 2)
    expected += float(r + 1);
  EXPECT_EQ(value, expected);
  EXPECT_EQ(group->timeout(), world->timeout());
}

TEST_F(Mpi, ReceiveOfTheWrongSizeIsAnError) {
  if (rank() > 1)
    return;
  if (rank() == 0) {
    int32_t small = 7;
    Request r = world->isend(&small, 4, 1, 3);
    world->wait(r);
  } else {
    int64_t big = 0;
    Request r = world->irecv(&big, 8, 0, 3);
    try {
      world->wait(r);
      ADD_FAILURE() << "expected a size error";
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), HasSubstr("receiving 8 bytes from rank 0 (tag 3): "
                                      "got a message of 4 bytes"));
    }
  }
}

// A wait that times out names the peer and the tag; the request stays
// pending, so a late message still completes it.
TEST_F(Mpi, WaitTimesOutNamingPeerAndTag) {
  if (rank() > 1) {
    world->barrier(); // the barrier below is collective over all ranks
    return;
  }
  int32_t value = 0;
  Request late;
  if (rank() == 0) {
    late = world->irecv(&value, 4, 1, 99);
    world->setTimeout(std::chrono::milliseconds(200));
    try {
      world->wait(late);
      ADD_FAILURE() << "expected a timeout";
    } catch (const Error &e) {
      EXPECT_STREQ(e.what(), "timed out after 0.2 s receiving 4 bytes from "
                             "rank 1 (tag 99)");
    }
    EXPECT_TRUE(late.active());
    world->setTimeout(std::chrono::seconds(30));
  }
  world->barrier();
  if (rank() == 1) {
    value = 42;
    Request r = world->isend(&value, 4, 0, 99);
    world->wait(r);
  } else {
    world->wait(late);
    EXPECT_EQ(value, 42);
  }
}

TEST_F(Mpi, RejectsBadPeersAndStaleRequests) {
  int32_t value = 0;
  EXPECT_THROW(world->isend(&value, 4, world->size(), 0), Error);
  EXPECT_THROW(world->irecv(&value, 4, -1, 0), Error);
  EXPECT_THROW(world->irecv(&value, 4, peer(), -2), Error);
  Request inactive;
  world->wait(inactive); // inactive: returns at once
  EXPECT_TRUE(world->test(inactive));
  Request bogus{12345};
  EXPECT_THROW(world->wait(bogus), Error);
}

namespace {
/// On ranks other than 0, prints only failures, tagged with the rank, so the
/// log stays readable while nothing is hidden.
class FailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit FailurePrinter(int rank) : rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "rank %d: %s:%d: failure\n%s\n", rank,
                   result.file_name() ? result.file_name() : "?",
                   result.line_number(), result.summary());
  }

private:
  int rank;
};
} // namespace

int main(int argc, char **argv) {
  MpiEnvironment mpi(&argc, &argv);
  std::unique_ptr<Communicator> comm = mpi.world();
  world = comm.get();
  ::testing::InitGoogleTest(&argc, argv);
  // Rank 0 prints the test log; other ranks print only their failures.
  if (world->rank() != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(world->rank()));
  }
  int result = RUN_ALL_TESTS();
  return result;
}
