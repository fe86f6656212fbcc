//===- Error.h - How host code reports errors -------------------*- C++ -*-===//
//
// dpc's host code (the tools, the planner, the launcher, the runtime)
// reports everything a user can cause (a missing file, a malformed profile
// or checkpoint, a plan no memory limit admits, a peer that stopped
// answering) by throwing dpc::Error with one line that names the file, rank
// or option involved. What catches it prints that line once: a tool's
// command as "COMMAND: MESSAGE" with a non-zero exit, a rank's main by
// aborting the whole job through the communicator. docs/ARCHITECTURE.md
// ("Errors") states the convention and its exceptions: kernels abort, and
// MLIR passes report diagnostics, converted at their boundary.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SUPPORT_ERROR_H
#define DPC_SUPPORT_ERROR_H

#include <stdexcept>
#include <string>

namespace dpc {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

/// An Error in what the user handed dpc that no retry can fix (a bad option
/// value, a text file too short for one window of the model): the command
/// exits with the usage code 2, as for a bad option, and a rank's main
/// aborts with it, so that `dpc run` exits 2.
class InputError : public Error {
public:
  using Error::Error;
};

} // namespace dpc

#endif // DPC_SUPPORT_ERROR_H
