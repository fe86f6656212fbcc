//===- MpiCommunicator.cpp - Communicator over MPI ------------------------===//
//
// Every blocking operation is a non-blocking MPI call completed by polling
// MPI_Test against a deadline. MPI's own blocking calls would wait forever
// for a peer that is stuck or gone; polling lets us fail with a message that
// names the peer and the tag instead.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/MpiCommunicator.h"

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Poll.h"
#include "dpc/support/CommandLine.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

namespace dpc::runtime {

namespace {

std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, size_t(length));
}

void check(int code, const std::string &what) {
  if (code != MPI_SUCCESS)
    throw Error(what + ": " + mpiErrorText(code));
}

int checkedCount(size_t bytes, const char *what) {
  if (bytes > size_t(INT_MAX))
    throw Error(std::string(what) + " of " + std::to_string(bytes) +
                " bytes exceeds the 2 GiB an MPI message can hold");
  return int(bytes);
}

} // namespace

struct MpiCommunicator::Impl {
  struct Slot {
    MPI_Request request = MPI_REQUEST_NULL;
    bool active = false;
    bool receive = false;
    int peer = -1;
    int tag = -1;
    size_t bytes = 0;
    uint32_t generation = 0;
  };

  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false; // freed with this communicator (split results)
  int rank = 0, size = 0;
  std::vector<int> worldRanks; // for messages: a peer as mpirun numbers it
  std::vector<Slot> slots;
  std::vector<size_t> freeSlots;

  std::string peerName(int peer) const {
    int world = peer >= 0 && size_t(peer) < worldRanks.size()
                    ? worldRanks[size_t(peer)]
                    : peer;
    return "rank " + std::to_string(world);
  }

  std::string describe(const Slot &slot) const {
    return std::string(slot.receive ? "receiving " : "sending ") +
           std::to_string(slot.bytes) + " bytes " +
           (slot.receive ? "from " : "to ") + peerName(slot.peer) + " (tag " +
           std::to_string(slot.tag) + ")";
  }

  Slot &lookup(const Request &request) {
    size_t index = size_t(request.id & 0xffffffff);
    uint32_t generation = uint32_t(uint64_t(request.id) >> 32);
    if (index >= slots.size() || !slots[index].active ||
        slots[index].generation != generation)
      throw Error("communicator: unknown or already completed request");
    return slots[index];
  }

  Request start(bool receive, int peer, int tag, size_t bytes,
                const std::function<int(MPI_Request *)> &post) {
    if (peer < 0 || peer >= size)
      throw Error("communicator: peer rank " + std::to_string(peer) +
                  " out of range (" + std::to_string(size) + " ranks)");
    if (tag < 0)
      throw Error("communicator: negative tag " + std::to_string(tag));
    size_t index;
    if (!freeSlots.empty()) {
      index = freeSlots.back();
      freeSlots.pop_back();
    } else {
      index = slots.size();
      slots.emplace_back();
    }
    Slot &slot = slots[index];
    slot.active = true;
    slot.receive = receive;
    slot.peer = peer;
    slot.tag = tag;
    slot.bytes = bytes;
    int code = post(&slot.request);
    if (code != MPI_SUCCESS) {
      slot.active = false;
      freeSlots.push_back(index);
      check(code, describe(slot));
    }
    return Request{int64_t((uint64_t(slot.generation) << 32) | index)};
  }

  /// Completes the slot after MPI reported it done: checks the received size
  /// and recycles the slot.
  void finish(Request &request, Slot &slot, const MPI_Status &status) {
    std::string what = describe(slot);
    size_t index = size_t(request.id & 0xffffffff);
    slot.active = false;
    ++slot.generation;
    freeSlots.push_back(index);
    request.id = -1;
    if (slot.receive) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      if (size_t(count) != slot.bytes)
        throw Error(what + ": got a message of " + std::to_string(count) +
                    " bytes");
    }
  }

  bool testSlot(Request &request) {
    Slot &slot = lookup(request);
    int flag = 0;
    MPI_Status status;
    int code = MPI_Test(&slot.request, &flag, &status);
    if (code != MPI_SUCCESS) {
      std::string what = describe(slot);
      slot.active = false;
      ++slot.generation;
      freeSlots.push_back(size_t(request.id & 0xffffffff));
      request.id = -1;
      if (code == MPI_ERR_TRUNCATE)
        throw Error(what + ": the message is larger than that");
      check(code, what);
    }
    if (flag)
      finish(request, slot, status);
    return flag != 0;
  }
};

static std::chrono::milliseconds
timeoutFromEnvironment(std::chrono::milliseconds fallback) {
  const char *text = std::getenv("DPC_COMM_TIMEOUT");
  if (!text || !*text)
    return fallback;
  double seconds = 0;
  if (!cli::parseDecimal(text, seconds) || !(seconds >= 0.001) || seconds > 1e7)
    throw Error(std::string("DPC_COMM_TIMEOUT='") + text +
                "': expected a decimal number of seconds from 0.001 to 1e7");
  return std::chrono::milliseconds(int64_t(seconds * 1000.0));
}

static std::unique_ptr<MpiCommunicator::Impl> makeImpl(MPI_Comm comm,
                                                       bool owned) {
  auto impl = std::make_unique<MpiCommunicator::Impl>();
  impl->comm = comm;
  impl->owned = owned;
  check(MPI_Comm_rank(comm, &impl->rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &impl->size), "MPI_Comm_size");
  MPI_Group group, worldGroup;
  check(MPI_Comm_group(comm, &group), "MPI_Comm_group");
  check(MPI_Comm_group(MPI_COMM_WORLD, &worldGroup), "MPI_Comm_group");
  std::vector<int> local(size_t(impl->size));
  for (int i = 0; i < impl->size; ++i)
    local[size_t(i)] = i;
  impl->worldRanks.resize(local.size());
  check(MPI_Group_translate_ranks(group, impl->size, local.data(), worldGroup,
                                  impl->worldRanks.data()),
        "MPI_Group_translate_ranks");
  MPI_Group_free(&group);
  MPI_Group_free(&worldGroup);
  return impl;
}

//===----------------------------------------------------------------------===//
// MpiEnvironment
//===----------------------------------------------------------------------===//

MpiEnvironment::MpiEnvironment(int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Funneled: compute kernels may run threads, but only the executor's
    // thread talks to MPI.
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS)
      throw Error("MPI_Init_thread failed");
  }
  // Errors come back as codes and become exceptions with a message, rather
  // than MPI's default of killing the job without saying where.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiEnvironment::~MpiEnvironment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

std::unique_ptr<Communicator> MpiEnvironment::world() {
  std::unique_ptr<Communicator> comm(
      new MpiCommunicator(makeImpl(MPI_COMM_WORLD, /*owned=*/false)));
  comm->setTimeout(timeoutFromEnvironment(comm->timeout()));
  return comm;
}

//===----------------------------------------------------------------------===//
// MpiCommunicator
//===----------------------------------------------------------------------===//

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (impl->owned && !finalized)
    MPI_Comm_free(&impl->comm);
}

int MpiCommunicator::rank() const { return impl->rank; }
int MpiCommunicator::size() const { return impl->size; }

Request MpiCommunicator::isend(const void *data, size_t bytes, int peer,
                               int tag) {
  int count = checkedCount(bytes, "send");
  return impl->start(false, peer, tag, bytes, [&](MPI_Request *request) {
    return MPI_Isend(data, count, MPI_BYTE, peer, tag, impl->comm, request);
  });
}

Request MpiCommunicator::irecv(void *data, size_t bytes, int peer, int tag) {
  int count = checkedCount(bytes, "receive");
  return impl->start(true, peer, tag, bytes, [&](MPI_Request *request) {
    return MPI_Irecv(data, count, MPI_BYTE, peer, tag, impl->comm, request);
  });
}

bool MpiCommunicator::test(Request &request) {
  if (!request.active())
    return true;
  return impl->testSlot(request);
}

void MpiCommunicator::wait(Request &request) {
  if (!request.active())
    return;
  std::string what = impl->describe(impl->lookup(request));
  pollUntil([&] { return impl->testSlot(request); }, timeout(),
            [&] { return what; });
}

/// Completes a collective's request by polling, like wait().
static void waitCollective(MPI_Request &request,
                           std::chrono::milliseconds timeout,
                           const std::string &what) {
  pollUntil(
      [&] {
        int flag = 0;
        check(MPI_Test(&request, &flag, MPI_STATUS_IGNORE), what);
        return flag != 0;
      },
      timeout, [&] { return "in " + what; });
}

void MpiCommunicator::allreduceSum(float *data, size_t count) {
  // MPI counts are ints; larger buffers go in chunks.
  const size_t chunk = size_t(INT_MAX);
  for (size_t begin = 0; begin < count; begin += chunk) {
    int n = int(std::min(chunk, count - begin));
    std::string what = "allreduce of " + std::to_string(count) +
                       " floats over " + std::to_string(impl->size) + " ranks";
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data + begin, n, MPI_FLOAT, MPI_SUM,
                         impl->comm, &request),
          what);
    waitCollective(request, timeout(), what);
  }
}

/// `counts` as MPI's int counts and displacements, or false when a count
/// or an offset does not fit an int.
static bool intRanges(const std::vector<size_t> &counts, std::vector<int> &n,
                      std::vector<int> &displs) {
  size_t offset = 0;
  for (size_t c : counts) {
    if (c > size_t(INT_MAX) || offset > size_t(INT_MAX))
      return false;
    n.push_back(int(c));
    displs.push_back(int(offset));
    offset += c;
  }
  return true;
}

void MpiCommunicator::reduceScatterSum(float *data,
                                       const std::vector<size_t> &counts) {
  std::vector<int> n, displs;
  if (counts.size() != size_t(impl->size) || !intRanges(counts, n, displs))
    return Communicator::reduceScatterSum(data, counts);
  std::string what = "reduce-scatter of " + std::to_string(total(counts)) +
                     " floats over " + std::to_string(impl->size) + " ranks";
  int self = rank();
  std::vector<float> mine(counts[size_t(self)]);
  MPI_Request request;
  check(MPI_Ireduce_scatter(data, mine.data(), n.data(), MPI_FLOAT, MPI_SUM,
                            impl->comm, &request),
        what);
  waitCollective(request, timeout(), what);
  std::copy(mine.begin(), mine.end(), data + displs[size_t(self)]);
}

void MpiCommunicator::allgatherRanges(float *data,
                                      const std::vector<size_t> &counts) {
  std::vector<int> n, displs;
  if (counts.size() != size_t(impl->size) || !intRanges(counts, n, displs))
    return Communicator::allgatherRanges(data, counts);
  std::string what = "allgather of " + std::to_string(total(counts)) +
                     " floats over " + std::to_string(impl->size) + " ranks";
  MPI_Request request;
  check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, n.data(),
                        displs.data(), MPI_FLOAT, impl->comm, &request),
        what);
  waitCollective(request, timeout(), what);
}

void MpiCommunicator::barrier() {
  std::string what = "barrier over " + std::to_string(impl->size) + " ranks";
  MPI_Request request;
  check(MPI_Ibarrier(impl->comm, &request), what);
  waitCollective(request, timeout(), what);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm newComm;
  check(MPI_Comm_split(impl->comm, color, key, &newComm), "MPI_Comm_split");
  std::unique_ptr<Communicator> comm(
      new MpiCommunicator(makeImpl(newComm, /*owned=*/true)));
  comm->setTimeout(timeout());
  return comm;
}

void MpiCommunicator::abort(const std::string &message, int exitCode) {
  int worldRank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  // Print before aborting: MPI_Abort's own report does not carry the reason.
  std::fprintf(stderr, "rank %d: error: %s\n", worldRank, message.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode);
}

} // namespace dpc::runtime
