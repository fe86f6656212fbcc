//===- AbiError.h - Misuse of the C ABI by generated code -------*- C++ -*-===//
//
// The executor's units (Buffers.h, Transfers.h, ParamStore.h, OpProfile.h)
// check what generated code hands them through the C ABI: ids against the
// manifest, values sent or stashed twice, reads of what is not there. They
// throw AbiError with the bare message; the entry point that was called
// (AbiEntryPoints.cpp) catches it and reports it to the executor's fatal
// handler with the function's name and the running segment, because
// generated code cannot unwind. Called from C++ (the unit tests), an
// AbiError is an Error like any other.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_ABIERROR_H
#define DPC_LIB_RUNTIME_ABIERROR_H

#include "dpc/runtime/Error.h"

namespace dpc::runtime {

class AbiError : public Error {
public:
  using Error::Error;
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_ABIERROR_H
