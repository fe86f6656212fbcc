//===- Buckets.cpp - Shape buckets of dpc compile --seq-buckets -----------===//

#include "Buckets.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

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

// What must agree between buckets of one rank: a transfer's tag and peer, a
// stash's key and name (sizes differ with the shapes).
llvm::json::Array identities(const llvm::json::Object &manifest,
                             llvm::StringRef list,
                             std::initializer_list<const char *> fields) {
  llvm::json::Array result;
  if (const llvm::json::Array *entries = manifest.getArray(list))
    for (const llvm::json::Value &entry : *entries) {
      llvm::json::Object identity;
      if (const llvm::json::Object *object = entry.getAsObject())
        for (const char *field : fields)
          if (const llvm::json::Value *value = object->get(field))
            identity[field] = *value;
      result.push_back(std::move(identity));
    }
  return result;
}

std::string text(const llvm::json::Value &value) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << value;
  return out;
}

} // namespace

std::string
mergeBucketManifests(const std::vector<ShapeBucket> &buckets, size_t primary,
                     const std::vector<std::string> &manifests,
                     const std::vector<std::vector<schedule::StageInfo>> &costs,
                     std::string &error) {
  std::vector<llvm::json::Object> parsed;
  for (auto [index, manifest] : llvm::enumerate(manifests)) {
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(manifest);
    if (!value || !value->getAsObject()) {
      error = "the manifest of bucket " + describe(buckets[index]) +
              " is not a JSON object";
      if (!value)
        llvm::consumeError(value.takeError());
      return "";
    }
    parsed.push_back(std::move(*value->getAsObject()));
  }
  const llvm::json::Object &top = parsed[primary];
  struct Shared {
    const char *list;
    std::initializer_list<const char *> fields;
    const char *what;
  } shared[] = {{"params", {"id", "name", "shape"}, "parameters"},
                {"sends", {"tag", "peer"}, "sends"},
                {"recvs", {"tag", "peer"}, "receives"},
                {"stashes", {"key", "name"}, "stash keys"}};
  llvm::json::Array entries;
  for (auto [index, manifest] : llvm::enumerate(parsed)) {
    for (const Shared &what : shared) {
      llvm::json::Array mine = identities(manifest, what.list, what.fields);
      llvm::json::Array theirs = identities(top, what.list, what.fields);
      if (mine != theirs) {
        error = "bucket " + describe(buckets[index]) + " has other " +
                what.what + " than bucket " + describe(buckets[primary]) +
                ": " + text(llvm::json::Value(std::move(mine))) + " against " +
                text(llvm::json::Value(std::move(theirs)));
        return "";
      }
    }
    llvm::json::Array stageCosts;
    for (const schedule::StageInfo &info : costs[index])
      stageCosts.push_back(
          llvm::json::Object{{"forward", info.forward},
                             {"backward_input", info.backwardInput},
                             {"backward_weight", info.backwardWeight},
                             {"activation_bytes", info.activationBytes},
                             {"output_bytes", info.outputBytes}});
    llvm::json::Object entry{{"batch", buckets[index].batch},
                             {"length", buckets[index].length},
                             {"stage_costs", std::move(stageCosts)}};
    for (const char *field :
         {"inputs", "labels", "output", "sends", "recvs", "stashes"})
      entry[field] = manifest.get(field) ? *manifest.get(field)
                                         : llvm::json::Value(nullptr);
    entries.push_back(std::move(entry));
  }
  llvm::json::Object merged = top;
  merged["buckets"] = std::move(entries);
  return text(llvm::json::Value(std::move(merged)));
}

} // namespace dpc::tools
