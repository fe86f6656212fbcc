//===- DiagnoseErrors.h - lib/'s errors as a pass's diagnostics -*- C++ -*-===//
//
// The plain C++ in lib/ (the planner) throws dpc::Error with one line for
// what the user can fix; a pass reports an emitError diagnostic instead
// (docs/ARCHITECTURE.md, "Errors"). diagnoseErrors is that boundary: it
// calls into lib/ and turns what it throws into an error on the op.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PASSES_DIAGNOSEERRORS_H
#define DPC_PASSES_DIAGNOSEERRORS_H

#include "dpc/support/Error.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <type_traits>
#include <utility>

namespace mlir::dpc {

/// What `call()` returns, or failure after emitting "PREFIXMESSAGE" on `op`
/// for the dpc::Error it throws.
template <typename Call>
FailureOr<std::invoke_result_t<Call>>
diagnoseErrors(Operation *op, StringRef prefix, Call &&call) {
  try {
    return std::forward<Call>(call)();
  } catch (const ::dpc::Error &e) {
    return op->emitError(prefix) << e.what();
  }
}

} // namespace mlir::dpc

#endif // DPC_PASSES_DIAGNOSEERRORS_H
