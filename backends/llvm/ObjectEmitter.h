//===- ObjectEmitter.h - LLVM dialect to a linked rank executable -*- C++
//-*-===//
//
// The last steps of every backend: translate a module in the LLVM dialect to
// LLVM IR, compile it to a native object in-process, and link the object
// with the runtime libraries of a target into a rank executable.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_BACKENDS_LLVM_OBJECTEMITTER_H
#define DPC_BACKENDS_LLVM_OBJECTEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::dpc {

/// Compiles `module` (LLVM dialect only) to a native object file at `path`
/// for the host. Reports problems as diagnostics on the module.
LogicalResult emitObjectFile(ModuleOp module, llvm::StringRef path);

/// Compiles the lowered rank modules of one rank's shape buckets (dpc
/// compile --seq-buckets; LLVM dialect, each with the ABI's dpc_segment_*
/// functions) into one object at `path`: bucket K's segments become
/// internal functions, the ABI's dispatch on dpc_bucket(ctx) to them, and
/// `manifest` is the object's dpc_rank_manifest. The optimizer segment is
/// bucket `primary`'s alone (it reads only parameters, the same in every
/// bucket). With `irPath`, the linked LLVM IR is written there too.
LogicalResult emitBucketedObjectFile(ArrayRef<ModuleOp> buckets, size_t primary,
                                     llvm::StringRef manifest,
                                     llvm::StringRef path,
                                     llvm::StringRef irPath = "");

/// Throws ::dpc::Error saying why this build does not hold the runtime
/// libraries of `target` ("cpu", "cuda") when it does not: a dpc built
/// without CUDA cannot link CUDA ranks.
void checkRankRuntime(llvm::StringRef target);

/// Links `object` with the runtime libraries of `target` ("cpu", "cuda")
/// into the executable `output`. The libraries are listed in the link
/// recipe the build wrote beside the dpc binary (lib/dpc-link-<target>.rsp).
/// Throws ::dpc::Error saying why it could not.
void linkRankExecutable(llvm::StringRef object, llvm::StringRef output,
                        llvm::StringRef target);

} // namespace mlir::dpc

#endif // DPC_BACKENDS_LLVM_OBJECTEMITTER_H
