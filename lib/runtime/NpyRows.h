//===- NpyRows.h - Rows of memory-mapped .npy shards ------------*- C++ -*-===//
//
// Private to lib/runtime. The npy: source reads its arrays through NpyRows:
// one or several .npy files (shards) of the same dtype and trailing shape,
// read as one array along axis 0, mapped rather than read (a gzipped file is
// inflated into memory, as it cannot be mapped). Values are converted as
// rows are gathered: to floats, with an optional scale and per-channel
// normalization, or to int64 ids. The mappings are MADV_RANDOM (a fault
// reads its page, not the read-ahead around it), and the pages read are
// unmapped again every kReleaseBytes of reading (the page cache keeps
// them), so that a reader's resident set does not grow with the array.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_NPYROWS_H
#define DPC_LIB_RUNTIME_NPYROWS_H

#include "dpc/runtime/Data.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace dpc::support {
class MappedFile;
} // namespace dpc::support

namespace dpc::runtime {

using support::MappedFile;

/// A .npy header: the dtype, the shape and where the data starts. The
/// bytes after it must be exactly the shape's elements of the dtype.
struct NpyHeader {
  std::string descr;
  std::vector<int64_t> shape;
  size_t dataOffset = 0;
  size_t itemSize = 0;
};

/// Parses the header of the `size` bytes at `bytes`; throws Error naming
/// `name` on a malformed or truncated file or a dtype that is not one of
/// |u1 |i1 <i2 <u2 <i4 <i8 <f2 <f4 <f8.
NpyHeader parseNpyHeader(const uint8_t *bytes, size_t size,
                         const std::string &name);

/// The files a pattern names: the path itself, or, when it holds a glob
/// character (* ? [), the files that match, sorted; none: Error.
std::vector<std::string> expandShards(const std::string &pattern);

/// How float rows are made from stored values: x / scale, then per channel
/// c (the first axis of a sample) (x - mean[c]) / std[c]; one mean and std
/// apply to every channel, none leave x as it is.
struct FloatTransform {
  double scale = 1.0;
  std::vector<double> mean, stddev;
};

class NpyRows : public RowSource {
public:
  /// Opens `paths` (shards in order); throws Error naming the file whose
  /// dtype or trailing shape differs from the first's.
  explicit NpyRows(const std::vector<std::string> &paths,
                   FloatTransform transform = {});
  ~NpyRows() override;

  const std::string &descr() const { return dtype; }
  bool integerType() const;
  /// The whole array's shape: the rows, then a row's shape.
  const std::vector<int64_t> &shape() const { return dims; }
  /// The file the first row comes from, for messages.
  const std::string &firstPath() const;

  int64_t rows() const override { return dims.empty() ? 0 : dims[0]; }
  int64_t rowElements() const override { return perRow; }
  void readFloats(int64_t row, float *out) const override;
  void readInts(int64_t row, int64_t *out) const override;
  std::string where(int64_t row) const override;

private:
  struct Shard;
  std::vector<std::unique_ptr<Shard>> shards;
  std::vector<int64_t> firstRows; // shard k's first row
  std::string dtype;
  size_t itemSize = 0;
  std::vector<int64_t> dims;
  int64_t perRow = 1;
  FloatTransform transform;

  /// The index of the shard holding `row`; Error when out of range.
  size_t shardOf(int64_t row) const;
  /// The address of the row's first value.
  const uint8_t *rowData(int64_t row) const;
  /// Counts a read of `bytes` and, every kReleaseBytes, unmaps the pages
  /// read from this process.
  void afterRead(size_t bytes) const;
  /// Bytes read (and pages faulted around them) since the last release.
  mutable std::atomic<size_t> sinceRelease{0};
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_NPYROWS_H
