//===- NcclCommunicatorTest.cpp - NcclCommunicator under mpirun -----------===//
//
// Run as `mpirun -np 2 dpc-cuda-nccl-tests`. Both ranks run every test on
// device buffers. On a one-GPU machine both ranks share the GPU and the
// automatic transport is host staging; with two GPUs it is NCCL. Either way
// the host-staging transport is also tested explicitly. Without a device on
// every rank, every test skips.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/NcclCommunicator.h"
#include "dpc/runtime/CudaKernels.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/MpiCommunicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>
#include <vector>

using namespace dpc::runtime;
using ::testing::HasSubstr;

namespace {

Communicator *world = nullptr;
NcclCommunicator *automatic = nullptr; // Transport::Auto
NcclCommunicator *staging = nullptr;   // Transport::HostStaging
std::string skipReason;

std::vector<float> download(const float *device, size_t count) {
  std::vector<float> host(count);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), device, count * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

float *upload(const std::vector<float> &host) {
  float *device = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void **>(&device),
                       host.size() * sizeof(float)),
            cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), host.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  return device;
}

class Nccl : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    if (!skipReason.empty())
      GTEST_SKIP() << skipReason;
    comm = std::string(GetParam()) == "auto" ? automatic : staging;
  }
  void TearDown() override {
    if (skipReason.empty())
      world->barrier();
  }
  int rank() const { return comm->rank(); }
  int peer() const { return 1 - comm->rank(); }
  NcclCommunicator *comm = nullptr;
};

} // namespace

TEST_P(Nccl, PingPong) {
  std::vector<float> values(1000);
  float *buffer = upload(values);
  for (int round = 0; round < 6; ++round) {
    if (round % 2 == rank()) {
      std::iota(values.begin(), values.end(), float(round));
      cudaMemcpy(buffer, values.data(), values.size() * 4,
                 cudaMemcpyHostToDevice);
      Request r = comm->isend(buffer, values.size() * 4, peer(), 5);
      comm->wait(r);
      EXPECT_FALSE(r.active());
    } else {
      Request r = comm->irecv(buffer, values.size() * 4, peer(), 5);
      comm->wait(r);
      std::vector<float> got = download(buffer, values.size());
      EXPECT_EQ(got[0], float(round));
      EXPECT_EQ(got[999], float(round + 999));
    }
  }
  cudaFree(buffer);
}

// Both ranks start a send and a receive with each other before waiting: the
// grouping of NCCL operations (and the progress of staged sends inside
// wait) is what keeps this from deadlocking.
TEST_P(Nccl, SimultaneousExchange) {
  const size_t n = 1 << 20; // large enough to need a rendezvous
  float *out = upload(std::vector<float>(n, float(rank() + 1)));
  float *in = upload(std::vector<float>(n, 0.0f));
  Request send = comm->isend(out, n * 4, peer(), 1);
  Request recv = comm->irecv(in, n * 4, peer(), 1);
  comm->wait(recv);
  comm->wait(send);
  std::vector<float> got = download(in, n);
  EXPECT_EQ(got.front(), float(peer() + 1));
  EXPECT_EQ(got.back(), float(peer() + 1));
  cudaFree(out);
  cudaFree(in);
}

// A receive completed on the compute stream: later kernels see the data
// without the host waiting.
TEST_P(Nccl, WaitOnStreamOrdersKernels) {
  const size_t n = 4096;
  float *data = upload(std::vector<float>(n, rank() == 0 ? -2.0f : 0.0f));
  float *y = upload(std::vector<float>(n, 9.0f));
  if (rank() == 0) {
    Request r = comm->isend(data, n * 4, 1, 3);
    comm->wait(r);
  } else {
    Request r = comm->irecv(data, n * 4, 0, 3);
    comm->waitOnStream(r, dpc_cuda_stream());
    EXPECT_FALSE(r.active());
    dpc_relu(data, y, int64_t(n)); // relu(-2) = 0
    std::vector<float> got = download(y, n);
    EXPECT_EQ(got[0], 0.0f);
    EXPECT_EQ(got[n - 1], 0.0f);
  }
  cudaFree(data);
  cudaFree(y);
}

TEST_P(Nccl, AllReduceSums) {
  const size_t n = 100003;
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i)
    values[i] = float(i % 97) * float(rank() + 1);
  float *data = upload(values);
  comm->allreduceSum(data, n);
  std::vector<float> got = download(data, n);
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[5], 15.0f); // 5 * (1 + 2)
  EXPECT_EQ(got[n - 1], float((n - 1) % 97) * 3.0f);

  // The asynchronous form, completed on the stream.
  Request r = comm->iallreduceSum(data, n);
  comm->waitOnStream(r, dpc_cuda_stream());
  got = download(data, n);
  EXPECT_EQ(got[5], 30.0f);
  cudaFree(data);
}

TEST_P(Nccl, EmptyTransfersComplete) {
  Request send = comm->isend(nullptr, 0, peer(), 2);
  Request recv = comm->irecv(nullptr, 0, peer(), 2);
  EXPECT_TRUE(comm->test(send));
  comm->wait(recv);
  EXPECT_FALSE(recv.active());
}

TEST_P(Nccl, SplitGivesAWorkingCommunicator) {
  std::unique_ptr<Communicator> alone = comm->split(rank(), 0);
  EXPECT_EQ(alone->size(), 1);
  float *data = upload({1.0f, 2.0f});
  alone->allreduceSum(data, 2);
  EXPECT_EQ(download(data, 2)[1], 2.0f);
  cudaFree(data);
}

INSTANTIATE_TEST_SUITE_P(Transports, Nccl,
                         ::testing::Values("auto", "staging"));

TEST(NcclTransport, AutoPicksStagingExactlyWhenTheGpuIsShared) {
  if (!skipReason.empty())
    GTEST_SKIP() << skipReason;
  int device = 0;
  cudaGetDevice(&device);
  cudaDeviceProp prop;
  ASSERT_EQ(cudaGetDeviceProperties(&prop, device), cudaSuccess);
  // Compare the UUIDs over the host communicator, independently of the
  // communicator's own detection.
  std::vector<float> mine(16), theirs(16);
  for (int i = 0; i < 16; ++i)
    mine[size_t(i)] = float((unsigned char)prop.uuid.bytes[i]);
  int peer = 1 - world->rank();
  Request s = world->isend(mine.data(), 64, peer, 9);
  Request r = world->irecv(theirs.data(), 64, peer, 9);
  world->wait(s);
  world->wait(r);
  bool shared = mine == theirs;
  std::printf("rank %d: transport %s\n", world->rank(),
              automatic->transportDescription().c_str());
  EXPECT_EQ(automatic->transport(),
            shared ? Transport::HostStaging : Transport::Nccl);
  if (shared) {
    EXPECT_THAT(automatic->transportDescription(), HasSubstr("share"));
    // Asking for NCCL on a shared GPU is an error on every rank, not a hang.
    try {
      NcclCommunicator::create(*world, Transport::Nccl);
      ADD_FAILURE() << "expected an error";
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), HasSubstr("NCCL needs one GPU per rank"));
    }
  }
  EXPECT_EQ(staging->transport(), Transport::HostStaging);
}

// Last in the file, so last to run: the device it creates takes over the
// kernel library's stream.
TEST(NcclTransport, TheCudaTargetsDeviceConnectsThroughIt) {
  if (!skipReason.empty())
    GTEST_SKIP() << skipReason;
  std::unique_ptr<Device> device = createTargetDevice();
  EXPECT_EQ(device->connect(*world, Transport::Mpi), nullptr)
      << "mpi leaves the staging to the executor";
  std::unique_ptr<Communicator> comm = device->connect(*world, Transport::Auto);
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->transportDescription(), automatic->transportDescription());
  EXPECT_EQ(comm->matchesByTag(), automatic->transport() != Transport::Nccl);
  int peer = 1 - world->rank();
  float *out = upload({float(world->rank() + 10)});
  float *in = upload({-1.0f});
  Request s = comm->isend(out, sizeof(float), peer, 3);
  Request r = comm->irecv(in, sizeof(float), peer, 3);
  comm->wait(s);
  comm->wait(r);
  EXPECT_EQ(download(in, 1)[0], float(peer + 10));
  cudaFree(out);
  cudaFree(in);
}

namespace {

/// Failures with the rank in front; only rank 0 prints the summary.
class FailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit FailurePrinter(int rank) : rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "rank %d: %s:%d: %s\n", rank, result.file_name(),
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
  world->setTimeout(std::chrono::seconds(60));
  ::testing::InitGoogleTest(&argc, argv);
  if (world->rank() != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(world->rank()));
  }

  // Every rank must have a device, or none runs: the tests are collective.
  int count = 0;
  cudaError_t code = cudaGetDeviceCount(&count);
  float missing = code != cudaSuccess || count == 0 ? 1.0f : 0.0f;
  world->allreduceSum(&missing, 1);
  std::unique_ptr<NcclCommunicator> autoComm, stagingComm;
  if (world->size() != 2)
    skipReason = "needs mpirun -np 2";
  else if (missing > 0)
    skipReason = code != cudaSuccess ? std::string("no CUDA device (") +
                                           cudaGetErrorString(code) + ")"
                                     : "no CUDA device on some rank";
  if (skipReason.empty()) {
    try {
      selectLocalDevice();
      autoComm = NcclCommunicator::create(*world);
      stagingComm = NcclCommunicator::create(*world, Transport::HostStaging);
    } catch (const Error &e) {
      world->abort(e.what());
    }
    automatic = autoComm.get();
    staging = stagingComm.get();
  }
  int result = RUN_ALL_TESTS();
  stagingComm.reset();
  autoComm.reset();
  return result;
}
