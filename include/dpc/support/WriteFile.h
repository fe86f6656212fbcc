//===- WriteFile.h - Whole-or-nothing file output ---------------*- C++ -*-===//
//
// Commands that write a result file (plan.json, profile.json) write it next
// to its destination and rename it into place, so that a failed or
// interrupted run never leaves a partial file under the final name.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_WRITEFILE_H
#define DPC_SUPPORT_WRITEFILE_H

#include <string>

namespace dpc::support {

/// Writes `text` to `path` through a temporary file and a rename. On failure
/// returns false, sets `error` and leaves `path` as it was.
bool writeAtomically(const std::string &path, const std::string &text,
                     std::string &error);

} // namespace dpc::support

#endif // DPC_SUPPORT_WRITEFILE_H
