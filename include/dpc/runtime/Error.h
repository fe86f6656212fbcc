//===- Error.h - Runtime errors ---------------------------------*- C++ -*-===//
//
// The runtime reports everything a user can cause (a missing data file, a
// malformed checkpoint, a peer that stopped answering) by throwing
// dpc::runtime::Error with a message that names the file, rank or tag
// involved. A rank's main catches it, prints it and aborts the whole job
// through the communicator, so that no other rank is left waiting.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_ERROR_H
#define DPC_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>

namespace dpc::runtime {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

/// An Error in what the user handed the runtime that no retry can fix (a
/// text file too short for one window of the model): a rank's main aborts
/// with the usage exit code 2, as for a bad option, so `dpc run` exits 2.
class InputError : public Error {
public:
  using Error::Error;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_ERROR_H
