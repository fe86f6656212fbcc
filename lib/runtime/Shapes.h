//===- Shapes.h - Sizes of a shape the generated code runs in ---*- C++ -*-===//
//
// A fixed-shape build runs every microbatch in the manifest's own shape; a
// variable-length build (manifest "buckets") has one per bucket, and each
// planned microbatch runs in its bucket's. Inputs, labels, transfer packs and
// stash slots are sized by the microbatch's shape.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_SHAPES_H
#define DPC_LIB_RUNTIME_SHAPES_H

#include "Transfers.h"

#include "dpc/runtime/Manifest.h"

#include <map>
#include <optional>
#include <vector>

namespace dpc::runtime {

/// The pointers are into the manifest, which must outlive the Shapes.
struct Shapes {
  int64_t batch = 1;
  int64_t length = 0;
  const std::vector<ManifestTensor> *inputs = nullptr;
  const std::optional<std::vector<int64_t>> *labels = nullptr;
  const std::optional<std::vector<int64_t>> *output = nullptr;
  std::map<Boundary, PackLayout> sendLayouts, recvLayouts;
  std::map<int64_t, int64_t> stashBytes; // key -> bytes per microbatch

  Shapes(int64_t batch, int64_t length,
         const std::vector<ManifestTensor> &inputs,
         const std::optional<std::vector<int64_t>> &labels,
         const std::optional<std::vector<int64_t>> &output,
         const std::vector<ManifestTransfer> &sends,
         const std::vector<ManifestTransfer> &recvs,
         const std::vector<ManifestStash> &stashes)
      : batch(batch), length(length), inputs(&inputs), labels(&labels),
        output(&output), sendLayouts(makeLayouts(sends)),
        recvLayouts(makeLayouts(recvs)) {
    for (const ManifestStash &stash : stashes)
      stashBytes[stash.key] = stash.bytes;
  }
};

/// One Shapes per manifest bucket, or the manifest's own for a fixed-shape
/// build.
inline std::vector<Shapes> bucketShapes(const RankManifest &m) {
  std::vector<Shapes> shapes;
  if (m.buckets.empty()) {
    shapes.emplace_back(m.microbatchSize, 0, m.inputs, m.labelsShape,
                        m.outputShape, m.sends, m.recvs, m.stashes);
    return shapes;
  }
  for (const ManifestBucket &b : m.buckets)
    shapes.emplace_back(b.batch, b.length, b.inputs, b.labelsShape,
                        b.outputShape, b.sends, b.recvs, b.stashes);
  return shapes;
}

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_SHAPES_H
