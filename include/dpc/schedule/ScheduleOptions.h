//===- ScheduleOptions.h - One --schedule for every command -----*- C++ -*-===//
//
// One declaration of `--schedule KIND` for dpc compile, dpc plan and
// dpc-schedule build, fed by the kinds' table (Schedule.cpp): the names it
// accepts, its help and its error message come from the table's rows that
// the command's KindUse takes, so that a new kind reaches every command
// through its row alone.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SCHEDULE_SCHEDULEOPTIONS_H
#define DPC_SCHEDULE_SCHEDULEOPTIONS_H

#include "dpc/schedule/Schedule.h"
#include "dpc/support/CommandLine.h"

#include <string>
#include <vector>

namespace dpc::schedule {

struct ScheduleOption {
  /// Which of the table's kinds the command takes.
  KindUse use = KindUse::Build;
  /// Names it takes beside the kinds (dpc compile's "auto").
  std::vector<std::string> extra;
  /// Help after the list of kinds: what the extra names mean, the default.
  std::string note;
};

/// Declares `--schedule KIND` on `parser`, storing the name given in `kind`.
/// Help: "pipeline schedule: gpipe, 1f1b or pipedream; " and the note; a name
/// it does not take is a usage error, "option '--schedule' expects one of
/// 1f1b|gpipe|pipedream, got 'zb'" (cli::oneOf's message).
void addScheduleOption(cli::ArgParser &parser, std::string *kind,
                       const ScheduleOption &option);

} // namespace dpc::schedule

#endif // DPC_SCHEDULE_SCHEDULEOPTIONS_H
