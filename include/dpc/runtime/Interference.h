//===- Interference.h - A co-located CPU-bound process ----------*- C++ -*-===//
//
// `dpc run --interfere RANK:FROM_STEP:SECONDS` makes a rank's cores busy the
// way a co-located job does (DynPipe's experiments run a second job beside
// a stage): from the start of step FROM_STEP, rank RANK starts a separate
// CPU-bound process that inherits the rank's core binding and spins for
// SECONDS. The rank's own code runs unchanged; it just gets less of its
// cores, which the step monitor must notice.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_INTERFERENCE_H
#define DPC_RUNTIME_INTERFERENCE_H

#include <string>
#include <sys/types.h>

namespace dpc::runtime {

/// A CPU-bound child process on the caller's cores (its CPU affinity).
class Interferer {
public:
  Interferer() = default;
  Interferer(const Interferer &) = delete;
  Interferer &operator=(const Interferer &) = delete;
  /// Stops the process if it still runs.
  ~Interferer();

  /// Starts a process that spins for `seconds` and then exits (killed by
  /// coreutils' `timeout`). Throws an Error saying why it could not start.
  void start(double seconds);
  /// Kills the process if it runs and reaps it.
  void stop();
  /// The process's id, or -1.
  pid_t pid() const { return child; }
  /// The cores the process may run on (and so the rank), e.g. "1" or
  /// "0-1"; "" when unknown.
  static std::string cores();

private:
  pid_t child = -1;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_INTERFERENCE_H
