//===- Heartbeat.h - A rank's sign of life for dpc run's watchdog -*- C++
//-*-===//
//
// A rank that stops (SIGSTOP, a debugger, a hung driver call) cannot say so,
// and its peers only see a message that does not come. So every rank that
// `dpc run` launches writes a heartbeat line to stderr once a second from a
// thread of its own, saying what the rank is doing: the instruction it runs,
// or the peer and message it waits for. The launcher takes these lines out
// of the output; when one rank's heartbeat stops, it names that rank and
// prints what the others wait for (lib/runtime/LauncherMonitor.cpp, the watchdog).
// A stopped process stops all its threads, so a missing heartbeat means the
// rank is not running; a rank stuck in a long kernel or a deadlock still
// beats and reports where it is.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_HEARTBEAT_H
#define DPC_RUNTIME_HEARTBEAT_H

#include "dpc/schedule/Schedule.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace dpc::runtime {

/// Every heartbeat line starts with this: `dpc-heartbeat: ACTIVITY`; the
/// last one a rank writes is `dpc-heartbeat: done`.
constexpr const char *kHeartbeatPrefix = "dpc-heartbeat: ";

/// What this rank does now, in words ("starts up", "evaluates").
void setActivity(const std::string &text);
/// The instruction of `step` (counted from 0) this rank runs now. Cheap
/// enough for every instruction: the text is made only when a beat needs it.
void setActivity(int64_t step, const schedule::Instruction &instruction,
                 int chunks);
/// The current activity as a heartbeat says it: "waits to receive from
/// rank 1 (step 3, act mb 2)", "runs Forward mb 2 (step 3)".
std::string describeActivity();

/// While it lives, a thread writes one heartbeat line to stderr every
/// `interval` (one write call, so lines from the rank's other threads never
/// cut it).
class Heartbeat {
public:
  explicit Heartbeat(std::chrono::milliseconds interval);
  ~Heartbeat();
  Heartbeat(const Heartbeat &) = delete;
  Heartbeat &operator=(const Heartbeat &) = delete;

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_HEARTBEAT_H
