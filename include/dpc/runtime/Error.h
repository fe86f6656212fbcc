//===- Error.h - Runtime errors ---------------------------------*- C++ -*-===//
//
// The runtime reports everything a user can cause (a missing data file, a
// malformed checkpoint, a peer that stopped answering) by throwing
// dpc::Error (dpc/support/Error.h, host code's one error convention) with a
// message that names the file, rank or tag involved. A rank's main catches
// it, prints it and aborts the whole job through the communicator, so that
// no other rank is left waiting. The runtime's code names the two classes
// as runtime::Error and runtime::InputError.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_ERROR_H
#define DPC_RUNTIME_ERROR_H

#include "dpc/support/Error.h"

namespace dpc::runtime {

using dpc::Error;
using dpc::InputError;

} // namespace dpc::runtime

#endif // DPC_RUNTIME_ERROR_H
