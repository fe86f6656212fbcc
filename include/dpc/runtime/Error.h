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

} // namespace dpc::runtime

#endif // DPC_RUNTIME_ERROR_H
