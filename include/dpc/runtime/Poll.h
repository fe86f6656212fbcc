//===- Poll.h - Waiting for another rank ------------------------*- C++ -*-===//
//
// How every communicator waits: the MPI one on MPI_Test, the NCCL one on
// CUDA events. One policy, so that a rank waits the same way on any target.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_POLL_H
#define DPC_RUNTIME_POLL_H

#include <chrono>
#include <functional>
#include <string>

namespace dpc::runtime {

/// "2.5 s", as timeouts are named in messages.
std::string formatSeconds(std::chrono::milliseconds t);

/// Calls `done` until it returns true; past `timeout`, throws Error("timed
/// out after T " + describe()). Spins for the first 50 us (a test is what
/// drives progress in most MPI libraries), then sleeps 10 us between tests
/// for 10 ms and 200 us after that. It sleeps rather than yields: a
/// yielding thread stays runnable and hands its core to any other process
/// for a whole time slice, while a sleeping one is woken by the timer (the
/// rank main sets a 1 us timer slack) and runs at once.
void pollUntil(const std::function<bool()> &done,
               std::chrono::milliseconds timeout,
               const std::function<std::string()> &describe);

} // namespace dpc::runtime

#endif // DPC_RUNTIME_POLL_H
