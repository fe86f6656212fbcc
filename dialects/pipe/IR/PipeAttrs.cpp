//===- PipeAttrs.cpp - pipe dialect attributes ----------------------------===//

#include "dialects/pipe/IR/PipeAttrs.h"
#include "dialects/pipe/IR/PipeDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dpc::pipe;

#include "dialects/pipe/IR/PipeEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/pipe/IR/PipeAttrs.cpp.inc"

void PipeDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/pipe/IR/PipeAttrs.cpp.inc"
      >();
}

LogicalResult StageAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                APFloat forwardMs, APFloat backwardInputMs,
                                APFloat backwardWeightMs, int64_t paramBytes,
                                int64_t weightBytes, int64_t activationBytes,
                                int64_t outputBytes) {
  for (const APFloat &ms : {forwardMs, backwardInputMs, backwardWeightMs})
    if (!ms.isFinite() || (ms.isNegative() && !ms.isZero()))
      return emitError() << "expects finite non-negative stage times";
  if (paramBytes < 0 || weightBytes < 0 || activationBytes < 0 ||
      outputBytes < 0)
    return emitError() << "expects non-negative stage sizes";
  return success();
}
