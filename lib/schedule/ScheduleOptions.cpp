//===- ScheduleOptions.cpp - The --schedule option of every command -------===//

#include "dpc/schedule/ScheduleOptions.h"

namespace dpc::schedule {

void addScheduleOption(cli::ArgParser &parser, std::string *kind,
                       const ScheduleOption &option) {
  std::vector<ScheduleKind> kinds = kindsFor(option.use);
  std::vector<std::string> names;
  for (ScheduleKind k : kinds)
    names.push_back(kindName(k));
  names.insert(names.end(), option.extra.begin(), option.extra.end());
  std::string help = "pipeline schedule: " + joinKindNames(kinds);
  if (!option.note.empty())
    help += "; " + option.note;
  parser.addOption("schedule", cli::oneOf(kind, names), "KIND", help);
}

} // namespace dpc::schedule
