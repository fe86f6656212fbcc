//===- NcclCommunicator.cpp - Communicator over NCCL ----------------------===//
//
// Every transfer is an Op that moves through phases until it is Done:
//
//   NCCL:          Pending -> Posted (queued on the comm stream) -> Done
//   staging send:  ToHost (device -> pinned copy) -> HostTransfer -> Done
//   staging recv:  HostTransfer -> ToDevice (pinned -> device copy) -> Done
//
// Completion is observed with CUDA events and the host communicator's
// test(), never with a blocking call, so that every wait can give up after
// the timeout as the Communicator failure model requires. A wait advances
// all open ops, not only its own: a staged send that nobody advanced would
// never reach MPI, and its peer would wait for it forever.
//
// NCCL matches sends and receives between two ranks in order, and posting a
// send before the matching receive is posted on the peer blocks the stream.
// Ops started between two flushes therefore go out as one ncclGroup, which
// NCCL runs concurrently: a rank can start its send to a peer and its
// receive from the same peer and only then wait, without deadlock.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/NcclCommunicator.h"

#include "dpc/runtime/CudaKernels.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Poll.h"

#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <thread>
#include <vector>

namespace dpc::runtime {

namespace {

/// Below the 32767 that MPI guarantees as the largest tag; used only on the
/// private host communicator, so it cannot meet the executor's tags.
constexpr int kBootstrapTag = 32000;

void checkCuda(cudaError_t code, const std::string &what) {
  if (code != cudaSuccess)
    throw Error("cuda: " + what + ": " + cudaGetErrorString(code));
}

void waitHost(Communicator &comm, Request request) { comm.wait(request); }

/// Rank 0's `bytes` at `data` to every rank.
void broadcast(Communicator &comm, void *data, size_t bytes) {
  if (comm.rank() == 0) {
    for (int r = 1; r < comm.size(); ++r)
      waitHost(comm, comm.isend(data, bytes, r, kBootstrapTag));
  } else {
    waitHost(comm, comm.irecv(data, bytes, 0, kBootstrapTag));
  }
}

/// table[r * record .. (r + 1) * record) on every rank comes from rank r.
void allgather(Communicator &comm, unsigned char *table, size_t record) {
  size_t total = record * size_t(comm.size());
  if (comm.rank() == 0) {
    for (int r = 1; r < comm.size(); ++r)
      waitHost(comm, comm.irecv(table + size_t(r) * record, record, r,
                                kBootstrapTag));
  } else {
    waitHost(comm, comm.isend(table + size_t(comm.rank()) * record, record, 0,
                              kBootstrapTag));
  }
  broadcast(comm, table, total);
}

std::string uuidText(const unsigned char *uuid) {
  char text[48];
  std::snprintf(
      text, sizeof(text),
      "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x"
      "%02x%02x",
      uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7],
      uuid[8], uuid[9], uuid[10], uuid[11], uuid[12], uuid[13], uuid[14],
      uuid[15]);
  return text;
}

enum class OpKind { Send, Recv, AllReduce };
enum class Phase { Pending, Posted, ToHost, HostTransfer, ToDevice, Done };

struct Op {
  OpKind kind;
  Phase phase = Phase::Pending;
  void *device = nullptr;
  size_t bytes = 0;
  int peer = -1, tag = -1;
  /// The compute stream's position when the op started: the comm stream
  /// waits for it before touching `device`.
  cudaEvent_t ready = nullptr;
  /// Recorded on the comm stream after the op's last device step.
  cudaEvent_t done = nullptr;
  void *pinned = nullptr;
  Request host;
};

} // namespace

struct NcclCommunicator::Impl {
  /// The communicator create() was given, for abort; split results own it.
  Communicator *host = nullptr;
  std::unique_ptr<Communicator> ownedHost;
  /// A private split of `host`: bootstrap and staging messages live in their
  /// own MPI context, where they cannot match the executor's.
  std::unique_ptr<Communicator> priv;
  Transport requested = Transport::Auto;
  Transport transport = Transport::Nccl;
  std::string description;
  int rank = 0, size = 1, device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;

  std::map<int64_t, Op> ops;
  int64_t nextId = 0;
  std::vector<int64_t> pending;
  std::vector<cudaEvent_t> freeEvents;
  std::multimap<size_t, void *> freePinned;

  ~Impl() {
    bool open = false;
    for (auto &entry : ops)
      open = open || entry.second.phase != Phase::Done;
    if (comm) {
      // A transfer still open when the communicator goes away has no peer
      // any more; aborting frees NCCL without waiting for it.
      if (open)
        ncclCommAbort(comm);
      else
        ncclCommDestroy(comm);
    }
    if (stream) {
      if (!open)
        cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
    for (auto &entry : ops) {
      releaseEvents(entry.second);
      if (entry.second.pinned)
        cudaFreeHost(entry.second.pinned);
    }
    for (cudaEvent_t e : freeEvents)
      cudaEventDestroy(e);
    for (auto &entry : freePinned)
      cudaFreeHost(entry.second);
  }

  cudaEvent_t event() {
    if (!freeEvents.empty()) {
      cudaEvent_t e = freeEvents.back();
      freeEvents.pop_back();
      return e;
    }
    cudaEvent_t e;
    checkCuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
              "creating an event");
    return e;
  }

  void releaseEvents(Op &op) {
    for (cudaEvent_t *e : {&op.ready, &op.done})
      if (*e) {
        freeEvents.push_back(*e);
        *e = nullptr;
      }
  }

  void *pinned(size_t bytes) {
    auto it = freePinned.lower_bound(bytes);
    if (it != freePinned.end() && it->first == bytes) {
      void *p = it->second;
      freePinned.erase(it);
      return p;
    }
    void *p = nullptr;
    checkCuda(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault),
              "allocating " + std::to_string(bytes) +
                  " bytes of pinned memory");
    return p;
  }

  std::string describe(const Op &op) const {
    switch (op.kind) {
    case OpKind::Send:
      return "sending " + std::to_string(op.bytes) + " bytes to rank " +
             std::to_string(op.peer) + " (tag " + std::to_string(op.tag) + ")";
    case OpKind::Recv:
      return "receiving " + std::to_string(op.bytes) + " bytes from rank " +
             std::to_string(op.peer) + " (tag " + std::to_string(op.tag) + ")";
    case OpKind::AllReduce:
      return "in allreduce of " + std::to_string(op.bytes / sizeof(float)) +
             " floats over " + std::to_string(size) + " ranks";
    }
    return "in a transfer";
  }

  void checkNccl(ncclResult_t result, const std::string &what) {
    if (result == ncclSuccess || result == ncclInProgress)
      return;
    std::string detail = comm ? ncclGetLastError(comm) : "";
    throw Error("nccl: " + what + ": " + ncclGetErrorString(result) +
                (detail.empty() ? "" : " (" + detail + ")"));
  }

  /// A peer that died or a network failure shows up here, not in events.
  void checkAsync() {
    if (!comm)
      return;
    ncclResult_t result = ncclSuccess;
    ncclCommGetAsyncError(comm, &result);
    checkNccl(result, "communicator failed");
  }

  bool eventDone(cudaEvent_t e, const Op &op) {
    cudaError_t code = cudaEventQuery(e);
    if (code == cudaErrorNotReady)
      return false;
    checkCuda(code, describe(op));
    return true;
  }

  Request add(Op op) {
    int64_t id = nextId++;
    ops.emplace(id, op);
    return Request{id};
  }

  Op &lookup(const Request &request) {
    auto it = ops.find(request.id);
    if (it == ops.end())
      throw Error("communicator: unknown or already completed request");
    return it->second;
  }

  Op start(OpKind kind, void *device, size_t bytes, int peer, int tag) {
    if (peer < 0 || peer >= size)
      throw Error("communicator: peer rank " + std::to_string(peer) +
                  " out of range (" + std::to_string(size) + " ranks)");
    if (tag < 0)
      throw Error("communicator: negative tag " + std::to_string(tag));
    Op op;
    op.kind = kind;
    op.device = device;
    op.bytes = bytes;
    op.peer = peer;
    op.tag = tag;
    op.ready = event();
    checkCuda(cudaEventRecord(op.ready, dpc_cuda_stream()), describe(op));
    return op;
  }

  void flush() {
    if (pending.empty())
      return;
    for (int64_t id : pending)
      checkCuda(cudaStreamWaitEvent(stream, ops.at(id).ready, 0),
                "ordering transfers after compute");
    checkNccl(ncclGroupStart(), "ncclGroupStart");
    for (int64_t id : pending) {
      Op &op = ops.at(id);
      if (op.kind == OpKind::Send)
        checkNccl(
            ncclSend(op.device, op.bytes, ncclUint8, op.peer, comm, stream),
            describe(op));
      else
        checkNccl(
            ncclRecv(op.device, op.bytes, ncclUint8, op.peer, comm, stream),
            describe(op));
    }
    checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    for (int64_t id : pending) {
      Op &op = ops.at(id);
      op.done = event();
      checkCuda(cudaEventRecord(op.done, stream), describe(op));
      op.phase = Phase::Posted;
    }
    pending.clear();
  }

  void progress(Op &op) {
    switch (op.phase) {
    case Phase::Pending:
    case Phase::Done:
      return;
    case Phase::Posted:
    case Phase::ToDevice:
      if (eventDone(op.done, op))
        finish(op);
      return;
    case Phase::ToHost:
      if (!eventDone(op.done, op))
        return;
      op.host = priv->isend(op.pinned, op.bytes, op.peer, op.tag);
      op.phase = Phase::HostTransfer;
      [[fallthrough]];
    case Phase::HostTransfer:
      if (!priv->test(op.host))
        return;
      if (op.kind == OpKind::Send) {
        finish(op);
        return;
      }
      // Not before the compute stream is done with what `device` held.
      checkCuda(cudaStreamWaitEvent(stream, op.ready, 0), describe(op));
      checkCuda(cudaMemcpyAsync(op.device, op.pinned, op.bytes,
                                cudaMemcpyHostToDevice, stream),
                describe(op));
      op.done = op.done ? op.done : event();
      checkCuda(cudaEventRecord(op.done, stream), describe(op));
      op.phase = Phase::ToDevice;
      return;
    }
  }

  void finish(Op &op) {
    op.phase = Phase::Done;
    if (op.pinned) {
      freePinned.emplace(op.bytes, op.pinned);
      op.pinned = nullptr;
    }
  }

  /// In start order, so that staged sends to one peer reach MPI in order.
  void progressAll() {
    for (auto &entry : ops)
      progress(entry.second);
  }

  /// Advances everything; retires `request` when its op is done.
  bool complete(Request &request) {
    lookup(request);
    checkAsync();
    progressAll();
    auto it = ops.find(request.id);
    if (it->second.phase != Phase::Done)
      return false;
    releaseEvents(it->second);
    ops.erase(it);
    request.id = -1;
    return true;
  }

  /// Blocks until `e` has passed, within the timeout.
  void waitEvent(cudaEvent_t e, const Op &op,
                 std::chrono::milliseconds timeout) {
    pollUntil([&] { return eventDone(e, op); }, timeout,
              [&] { return describe(op); });
  }
};

std::unique_ptr<NcclCommunicator>
NcclCommunicator::create(Communicator &host, Transport transport) {
  if (transport == Transport::Mpi)
    throw Error("nccl: transport mpi has no device communicator (the "
                "executor stages through host memory itself)");
  auto impl = std::make_unique<Impl>();
  impl->host = &host;
  impl->requested = transport;
  impl->priv = host.split(0, host.rank());
  impl->priv->setTimeout(host.timeout());
  impl->rank = impl->priv->rank();
  impl->size = impl->priv->size();
  checkCuda(cudaGetDevice(&impl->device), "cudaGetDevice");

  // Which GPU each rank drives, by UUID: equal UUIDs are one GPU, whatever
  // device index each process sees it under.
  cudaDeviceProp prop;
  checkCuda(cudaGetDeviceProperties(&prop, impl->device),
            "cudaGetDeviceProperties");
  constexpr size_t kUuid = sizeof(prop.uuid.bytes);
  std::vector<unsigned char> table(kUuid * size_t(impl->size));
  std::memcpy(table.data() + kUuid * size_t(impl->rank), prop.uuid.bytes,
              kUuid);
  allgather(*impl->priv, table.data(), kUuid);
  int shareA = -1, shareB = -1;
  for (int a = 0; a < impl->size && shareA < 0; ++a)
    for (int b = a + 1; b < impl->size; ++b)
      if (std::memcmp(&table[kUuid * size_t(a)], &table[kUuid * size_t(b)],
                      kUuid) == 0) {
        shareA = a;
        shareB = b;
        break;
      }
  std::string sharing;
  if (shareA >= 0)
    sharing = "ranks " + std::to_string(shareA) + " and " +
              std::to_string(shareB) + " share " +
              uuidText(&table[kUuid * size_t(shareA)]);
  if (transport == Transport::Nccl && shareA >= 0)
    throw Error("nccl: " + sharing +
                "; NCCL needs one GPU per rank (use the host-staging "
                "transport or more GPUs)");
  if (transport == Transport::Auto)
    transport = shareA >= 0 ? Transport::HostStaging : Transport::Nccl;
  impl->transport = transport;
  impl->description = transportName(transport);
  if (transport == Transport::HostStaging)
    impl->description += shareA >= 0 ? " (" + sharing + ", which NCCL refuses)"
                                     : std::string(" (requested)");

  checkCuda(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking),
            "creating the communication stream");
  if (transport == Transport::Nccl) {
    ncclUniqueId id;
    if (impl->rank == 0)
      impl->checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    broadcast(*impl->priv, &id, sizeof(id));
    impl->checkNccl(ncclCommInitRank(&impl->comm, impl->size, id, impl->rank),
                    "ncclCommInitRank over " + std::to_string(impl->size) +
                        " ranks");
  }
  std::unique_ptr<NcclCommunicator> comm(new NcclCommunicator(std::move(impl)));
  comm->setTimeout(host.timeout());
  return comm;
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

NcclCommunicator::~NcclCommunicator() {
  try {
    impl->flush();
  } catch (const Error &) {
    // The destructor of a failed communicator: Impl aborts NCCL instead.
  }
}

Transport NcclCommunicator::transport() const { return impl->transport; }
bool NcclCommunicator::matchesByTag() const {
  return impl->transport != Transport::Nccl;
}
std::string NcclCommunicator::transportDescription() const {
  return impl->description;
}
int NcclCommunicator::rank() const { return impl->rank; }
int NcclCommunicator::size() const { return impl->size; }
cudaStream_t NcclCommunicator::commStream() const { return impl->stream; }

void NcclCommunicator::flush() { impl->flush(); }

Request NcclCommunicator::isend(const void *data, size_t bytes, int peer,
                                int tag) {
  Op op = impl->start(OpKind::Send, const_cast<void *>(data), bytes, peer, tag);
  if (bytes == 0) {
    op.phase = Phase::Done;
    return impl->add(op);
  }
  if (impl->transport == Transport::Nccl) {
    Request request = impl->add(op);
    impl->pending.push_back(request.id);
    return request;
  }
  op.pinned = impl->pinned(bytes);
  checkCuda(cudaStreamWaitEvent(impl->stream, op.ready, 0), impl->describe(op));
  checkCuda(cudaMemcpyAsync(op.pinned, op.device, bytes, cudaMemcpyDeviceToHost,
                            impl->stream),
            impl->describe(op));
  op.done = impl->event();
  checkCuda(cudaEventRecord(op.done, impl->stream), impl->describe(op));
  op.phase = Phase::ToHost;
  return impl->add(op);
}

Request NcclCommunicator::irecv(void *data, size_t bytes, int peer, int tag) {
  Op op = impl->start(OpKind::Recv, data, bytes, peer, tag);
  if (bytes == 0) {
    op.phase = Phase::Done;
    return impl->add(op);
  }
  if (impl->transport == Transport::Nccl) {
    Request request = impl->add(op);
    impl->pending.push_back(request.id);
    return request;
  }
  op.pinned = impl->pinned(bytes);
  impl->priv->setTimeout(timeout());
  op.host = impl->priv->irecv(op.pinned, bytes, peer, tag);
  op.phase = Phase::HostTransfer;
  return impl->add(op);
}

bool NcclCommunicator::test(Request &request) {
  if (!request.active())
    return true;
  impl->flush();
  return impl->complete(request);
}

void NcclCommunicator::wait(Request &request) {
  if (!request.active())
    return;
  impl->flush();
  std::string what = impl->describe(impl->lookup(request));
  pollUntil([&] { return impl->complete(request); }, timeout(),
            [&] { return what; });
}

void NcclCommunicator::waitOnStream(Request &request, cudaStream_t stream) {
  if (!request.active())
    return;
  impl->flush();
  Op &op = impl->lookup(request);
  if (impl->transport == Transport::Nccl && op.done) {
    checkCuda(cudaStreamWaitEvent(stream, op.done, 0), impl->describe(op));
    impl->releaseEvents(op);
    impl->ops.erase(request.id);
    request.id = -1;
    return;
  }
  wait(request);
}

Request NcclCommunicator::iallreduceSum(float *data, size_t count) {
  impl->flush();
  Op op;
  op.kind = OpKind::AllReduce;
  op.device = data;
  op.bytes = count * sizeof(float);
  if (count == 0 || impl->size == 1) {
    op.phase = Phase::Done;
    return impl->add(op);
  }
  op.ready = impl->event();
  checkCuda(cudaEventRecord(op.ready, dpc_cuda_stream()), impl->describe(op));
  checkCuda(cudaStreamWaitEvent(impl->stream, op.ready, 0), impl->describe(op));
  op.done = impl->event();
  if (impl->transport == Transport::Nccl) {
    impl->checkNccl(ncclAllReduce(data, data, count, ncclFloat, ncclSum,
                                  impl->comm, impl->stream),
                    impl->describe(op));
    checkCuda(cudaEventRecord(op.done, impl->stream), impl->describe(op));
    op.phase = Phase::Posted;
    return impl->add(op);
  }
  // Host staging sums on the host, through the host communicator's own
  // allreduce: down, sum, up, blocking.
  op.pinned = impl->pinned(op.bytes);
  checkCuda(cudaMemcpyAsync(op.pinned, data, op.bytes, cudaMemcpyDeviceToHost,
                            impl->stream),
            impl->describe(op));
  checkCuda(cudaEventRecord(op.done, impl->stream), impl->describe(op));
  impl->waitEvent(op.done, op, timeout());
  impl->priv->setTimeout(timeout());
  impl->priv->allreduceSum(static_cast<float *>(op.pinned), count);
  checkCuda(cudaMemcpyAsync(data, op.pinned, op.bytes, cudaMemcpyHostToDevice,
                            impl->stream),
            impl->describe(op));
  checkCuda(cudaEventRecord(op.done, impl->stream), impl->describe(op));
  op.phase = Phase::ToDevice;
  return impl->add(op);
}

void NcclCommunicator::allreduceSum(float *data, size_t count) {
  Request request = iallreduceSum(data, count);
  wait(request);
}

void NcclCommunicator::barrier() {
  impl->flush();
  impl->priv->setTimeout(timeout());
  impl->priv->barrier();
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  impl->flush();
  std::unique_ptr<Communicator> host = impl->host->split(color, key);
  host->setTimeout(timeout());
  std::unique_ptr<NcclCommunicator> comm = create(*host, impl->requested);
  comm->impl->ownedHost = std::move(host);
  return comm;
}

void NcclCommunicator::abort(const std::string &message, int exitCode) {
  if (impl->comm) {
    ncclCommAbort(impl->comm);
    impl->comm = nullptr;
  }
  impl->host->abort(message, exitCode);
  std::_Exit(exitCode); // host abort never returns; this tells the compiler
}

} // namespace dpc::runtime
