//===- Timeline.h - Timeline events, Chrome traces and SVG -------*- C++
//-*-===//
//
// A timeline is a flat list of spans per rank. The simulator fills it with
// predicted times; the runtime fills the same struct with measured ones, so
// one writer produces the Chrome trace (Perfetto, chrome://tracing) and the
// SVG picture for both.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SCHEDULE_TIMELINE_H
#define DPC_SCHEDULE_TIMELINE_H

#include "dpc/schedule/Schedule.h"

#include <string>
#include <vector>

namespace dpc::schedule {

enum class EventKind {
  Forward,
  Backward,       // combined input and weight gradient
  BackwardInput,  // zero-bubble B
  BackwardWeight, // zero-bubble W
  Optimizer,
  AllReduce,
  Load,
  Send,
  Recv,
  Other,
};

const char *eventKindName(EventKind kind); // "forward", "send", ...
/// The kind eventKindName names; Other for any other text.
EventKind parseEventKind(const std::string &name);
/// The kind of span an instruction's work makes (compute, the optimizer,
/// the all-reduce, a load); Other for the rest.
EventKind eventKindOf(Op op);

struct TimelineEvent {
  int rank = 0;
  EventKind kind = EventKind::Other;
  /// "F3", "B3", "W3", "send act mb3", "recv grad mb3", "opt".
  std::string name;
  /// Milliseconds from the start of the step.
  double start = 0;
  double end = 0;
  int mb = -1;
  int chunk = -1;
};

struct Timeline {
  int ranks = 0;
  std::vector<TimelineEvent> events;
};

/// The conventional span name for a compute or transfer event.
std::string eventName(EventKind kind, int mb, int chunk, bool showChunk,
                      const std::string &payload = "");

/// Chrome trace JSON: one process per rank ("rank r"), compute on thread 0
/// and transfers on thread 1 so that overlapping spans stay readable;
/// timestamps in microseconds.
std::string toChromeTrace(const Timeline &timeline);

/// Reads Chrome trace JSON back: every complete span ("ph": "X") becomes an
/// event of rank `pid`, its kind from "cat", its microbatch and chunk from
/// "args". Reads what toChromeTrace writes, predicted or measured; other
/// phases (metadata, instants) only count ranks. Throws dpc::Error saying
/// what is wrong (the file's reader names the file).
Timeline fromChromeTrace(const std::string &text);
Timeline readChromeTraceFile(const std::string &path);

/// A measured trace covers many training steps; on each rank the optimizer
/// span ends a step. The number of whole steps is the fewest optimizer spans
/// of any rank; a timeline without any (a prediction with a free optimizer)
/// is one step.
int countSteps(const Timeline &timeline);

/// The spans of steps `first` to `last` (counted from 1, inclusive; spans
/// after a rank's last optimizer span belong to no step), moved so that the
/// earliest starts at 0.
Timeline selectSteps(const Timeline &timeline, int first, int last);

/// The mean latency of the messages of a measured pipeline (one rank per
/// stage and one chunk: activations go from rank r to r + 1, gradients back
/// to r - 1; the k-th send of a payload and microbatch pairs with the
/// receiver's k-th receive of it): from the later of the send's and the
/// receive's start to the receive's end, over the messages during which
/// the receiver computed nothing, so that only waiting is timed. The first
/// message of each payload and microbatch (warm-up) and the slowest 5%
/// (preemptions) are left out. -1 when no message qualifies.
double messageLatency(const Timeline &measured);

/// The mean time a rank waiting for a message took to resume, over the
/// messages messageLatency times, the slowest included: on ranks that share
/// the cores a sleeping receiver waits for a core, and the slow ones are
/// that wait (SimulateOptions::wakeLatency). -1 when no message qualifies.
double wakeLatency(const Timeline &measured);

/// How long a measured run's ranks computed against what `priced` (the
/// schedule they ran) charges for it: per step, the summed spans of every
/// rank's Forward, Backward, BackwardInput and BackwardWeight over the
/// summed stage costs of the same computes; the median over the steps
/// after the first (warm-up; the median, so that a few preempted steps
/// hardly move it). Ranks that share no cores and compute side by side
/// contend for the cache, the memory and the clock, which timing the
/// kernels of one rank alone does not see. -1 when no compute after the
/// first step is priced.
double computeFactor(const Timeline &measured, const Schedule &priced);

struct SvgOptions {
  /// Pixels per millisecond; 0 picks a width of about 1200 pixels.
  double scale = 0;
  int rowHeight = 28;
  /// Draw transfers under each rank's compute row.
  bool showTransfers = false;
  std::string title;
};

/// An SVG picture: one row per rank, a colored box per compute span with its
/// microbatch id, for README figures.
std::string toSvg(const Timeline &timeline, const SvgOptions &options = {});

} // namespace dpc::schedule

#endif // DPC_SCHEDULE_TIMELINE_H
