//===- WriteFile.h - Whole-or-nothing file output ---------------*- C++ -*-===//
//
// Commands that write a result file (plan.json, profile.json) write it next
// to its destination and rename it into place, so that a failed or
// interrupted run never leaves a partial file under the final name. Files
// that every rank writes a part of are named here too.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_WRITEFILE_H
#define DPC_SUPPORT_WRITEFILE_H

#include <string>

namespace dpc::support {

/// Writes `text` to `path` through a temporary file and a rename. On failure
/// throws dpc::Error ("cannot write 'PATH'") and leaves `path` as it was.
void writeAtomically(const std::string &path, const std::string &text);

/// Where rank `rank` writes its part of an output file that every rank
/// writes: `path` with ".rankK" before its extension ("trace.json" ->
/// "trace.rank1.json", "trace" -> "trace.rank1"). The ranks and `dpc run`,
/// which gathers the parts, agree on it through this function.
std::string perRankPath(const std::string &path, int rank);

} // namespace dpc::support

#endif // DPC_SUPPORT_WRITEFILE_H
