//===- MpiFaultMain.cpp - Rank failures must not hang the job -------------===//
//
// `mpirun -np 2 dpc-runtime-mpi-fault MODE`: rank 0 waits for a message from
// rank 1 that never comes, while rank 1 fails in the way MODE says. The job
// must end, non-zero, within seconds; check_fault.py runs it and checks the
// time and the message.
//
//   exit     rank 1 prints an error and exits with status 3 (no MPI_Finalize)
//   abort    rank 1 reports an error through Communicator::abort
//   kill     rank 1 dies from SIGKILL
//   timeout  rank 1 stays alive but silent; rank 0's wait times out
//            (DPC_COMM_TIMEOUT) and rank 0 aborts the job naming rank 1
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Error.h"
#include "dpc/runtime/MpiCommunicator.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>

using namespace dpc::runtime;

int main(int argc, char **argv) {
  MpiEnvironment mpi(&argc, &argv);
  std::unique_ptr<Communicator> world = mpi.world();
  if (argc != 2 || world->size() != 2) {
    std::fprintf(stderr, "usage: mpirun -np 2 %s exit|abort|kill|timeout\n",
                 argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  // Make sure both ranks are up before the failure, so the test exercises a
  // running job rather than a failed start.
  world->barrier();
  if (world->rank() == 0) {
    try {
      int32_t value = 0;
      Request r = world->irecv(&value, 4, 1, 7);
      world->wait(r);
      std::fprintf(stderr, "rank 0: unexpectedly received %d\n", value);
      return 0;
    } catch (const Error &e) {
      world->abort(e.what(), 4);
    }
  }
  if (mode == "exit") {
    std::fprintf(stderr, "rank 1: error: simulated failure\n");
    std::fflush(stderr);
    std::_Exit(3);
  }
  if (mode == "abort")
    world->abort("simulated failure", 3);
  if (mode == "kill")
    ::kill(::getpid(), SIGKILL);
  // timeout, or an unknown mode: stay silent much longer than the test
  // allows.
  std::this_thread::sleep_for(std::chrono::seconds(120));
  return 0;
}
