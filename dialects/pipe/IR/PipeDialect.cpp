//===- PipeDialect.cpp - pipe dialect -------------------------------------===//

#include "dialects/pipe/IR/PipeDialect.h"
#include "dialects/pipe/IR/PipeOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::dpc::pipe;

#include "dialects/pipe/IR/PipeDialect.cpp.inc"

void PipeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/pipe/IR/PipeOps.cpp.inc"
      >();
}

LogicalResult PipeDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == kStageAttrName) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || !stage.getType().isInteger(64) || stage.getInt() < 0)
      return op->emitError("expects '")
             << kStageAttrName << "' to be a non-negative i64, got "
             << attr.getValue();
    return success();
  }
  return op->emitError("unknown pipe dialect attribute '")
         << attr.getName().getValue() << "'";
}
