//===- Buckets.cpp - Shape buckets of dpc compile --seq-buckets -----------===//

#include "Buckets.h"

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Manifest.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace dpc::tools {

std::string describe(const ShapeBucket &bucket) {
  return "(batch " + std::to_string(bucket.batch) + ", length " +
         std::to_string(bucket.length) + ")";
}

std::vector<ShapeBucket> shapeBuckets(const std::vector<int64_t> &lengths,
                                      int64_t tokens, ShapeBucket primary) {
  std::vector<ShapeBucket> buckets = {primary};
  for (int64_t length : lengths) {
    int64_t most = tokens / length;
    for (int64_t batch = 1; batch < most; batch *= 2)
      buckets.push_back({batch, length});
    if (most > 0)
      buckets.push_back({most, length});
  }
  std::sort(buckets.begin(), buckets.end(),
            [](const ShapeBucket &a, const ShapeBucket &b) {
              return std::make_pair(a.length, a.batch) <
                     std::make_pair(b.length, b.batch);
            });
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  return buckets;
}

namespace {

namespace runtime = dpc::runtime;

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string join(const std::vector<std::string> &items) {
  std::string text;
  for (const std::string &item : items)
    text += (text.empty() ? "" : ", ") + item;
  return "[" + text + "]";
}

// What must agree between buckets of one rank: a parameter's id, name and
// shape, a transfer's tag and peer, a stash's key and name (sizes differ
// with the shapes).
std::vector<std::string> identities(const runtime::RankManifest &m,
                                    const char *list) {
  std::vector<std::string> result;
  auto transfers = [&](const std::vector<runtime::ManifestTransfer> &entries) {
    for (const runtime::ManifestTransfer &t : entries)
      result.push_back("tag " + std::to_string(t.tag) + " with stage " +
                       std::to_string(t.peerStage));
  };
  if (std::string(list) == "params")
    for (const runtime::ManifestParam &p : m.params)
      result.push_back(std::to_string(p.id) + " '" + p.name + "' " +
                       formatShape(p.shape));
  else if (std::string(list) == "sends")
    transfers(m.sends);
  else if (std::string(list) == "recvs")
    transfers(m.recvs);
  else
    for (const runtime::ManifestStash &s : m.stashes)
      result.push_back(std::to_string(s.key) + " '" + s.name + "'");
  return result;
}

} // namespace

std::string mergeBucketManifests(
    const std::vector<ShapeBucket> &buckets, size_t primary,
    const std::vector<std::string> &manifests,
    const std::vector<std::vector<schedule::StageInfo>> &costs) {
  std::vector<runtime::RankManifest> parsed;
  for (auto [index, manifest] : llvm::enumerate(manifests))
    parsed.push_back(
        runtime::parseManifest(manifest, "bucket " + describe(buckets[index])));
  runtime::RankManifest merged = parsed[primary];
  struct Shared {
    const char *list;
    const char *what;
  } shared[] = {{"params", "parameters"},
                {"sends", "sends"},
                {"recvs", "receives"},
                {"stashes", "stash keys"}};
  for (auto [index, manifest] : llvm::enumerate(parsed)) {
    for (const Shared &what : shared) {
      std::vector<std::string> mine = identities(manifest, what.list);
      std::vector<std::string> theirs = identities(merged, what.list);
      if (mine != theirs)
        throw runtime::Error("bucket " + describe(buckets[index]) +
                             " has other " + what.what + " than bucket " +
                             describe(buckets[primary]) + ": " + join(mine) +
                             " against " + join(theirs));
    }
    runtime::ManifestBucket bucket;
    bucket.batch = buckets[index].batch;
    bucket.length = buckets[index].length;
    bucket.inputs = manifest.inputs;
    bucket.labelsShape = manifest.labelsShape;
    bucket.outputShape = manifest.outputShape;
    bucket.sends = manifest.sends;
    bucket.recvs = manifest.recvs;
    bucket.stashes = manifest.stashes;
    for (const schedule::StageInfo &info : costs[index])
      bucket.stageCosts.push_back({info.forward, info.backwardInput,
                                   info.backwardWeight, info.activationBytes,
                                   info.outputBytes});
    merged.buckets.push_back(std::move(bucket));
  }
  return runtime::writeManifest(merged);
}

} // namespace dpc::tools
