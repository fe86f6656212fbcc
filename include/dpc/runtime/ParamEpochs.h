//===- ParamEpochs.h - When parameter buffers were last written -*- C++ -*-===//
//
// A kernel may keep what it derives from a weight for as long as the weight
// does not change: the CPU target keeps a convolution's filter in oneDNN's
// blocked layout (and in bf16 for a bf16 build) instead of converting it
// every microbatch. Parameter values change only where the runtime writes
// them: the optimizer step, a checkpoint load, the weights a replica
// receives, the running statistics a forward kernel updates in place, and
// the copies of a stashed weight version. The ParamStore marks each such
// buffer here whenever it writes it, with a new epoch from one process-wide
// counter, and forgets it when it releases it. A kernel keys what it
// derived by the buffer's address and epoch; an address that is not the
// start of a marked buffer has no epoch (0), and the kernel derives afresh.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_PARAMEPOCHS_H
#define DPC_RUNTIME_PARAMEPOCHS_H

#include <cstdint>

namespace dpc::runtime {

/// The parameter values at `data` were just written (or first allocated):
/// gives the buffer a new epoch.
void markParamWritten(const void *data);
/// The buffer at `data` no longer holds parameter values.
void forgetParamBuffer(const void *data);
/// The epoch of the parameter values at `data`, never 0; 0 when `data` is
/// not the start of a marked buffer.
uint64_t paramEpoch(const void *data);

} // namespace dpc::runtime

#endif // DPC_RUNTIME_PARAMEPOCHS_H
