//===- NpyRows.cpp - Rows of memory-mapped .npy shards --------------------===//

#include "NpyRows.h"

#include "DataSources.h"
#include "dpc/runtime/Error.h"
#include "dpc/support/HalfFloat.h"
#include "dpc/support/MappedFile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <glob.h>

namespace dpc::runtime {

using namespace data_detail;

/// Finds `'key':` in a npy header dict and returns the text after the colon.
static std::string npyField(const std::string &header, const std::string &key,
                            const std::string &name) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    throw Error(name + ": npy header has no '" + key + "'");
  at = header.find(':', at);
  if (at == std::string::npos)
    throw Error(name + ": malformed npy header");
  size_t begin = header.find_first_not_of(' ', at + 1);
  return begin == std::string::npos ? "" : header.substr(begin);
}

/// The dims of a npy header's shape tuple, "(3, 4)" or "(3,)" or "()".
static std::vector<int64_t> npyShape(const std::string &header,
                                     const std::string &name) {
  std::string shape = npyField(header, "shape", name);
  if (shape.empty() || shape[0] != '(' || shape.find(')') == std::string::npos)
    throw Error(name + ": malformed npy shape");
  shape = shape.substr(1, shape.find(')') - 1);
  std::vector<int64_t> dims;
  for (size_t pos = 0; pos < shape.size();) {
    size_t comma = shape.find(',', pos);
    std::string item = shape.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    item.erase(0, item.find_first_not_of(' '));
    if (!item.empty()) {
      char *end = nullptr;
      long long dim = std::strtoll(item.c_str(), &end, 10);
      if (dim < 0 || (*end != '\0' && *end != ' ' && *end != 'L'))
        throw Error(name + ": malformed npy shape");
      dims.push_back(dim);
    }
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return dims;
}

static size_t npyItemSize(const std::string &descr) {
  static const std::pair<const char *, size_t> kTypes[] = {
      {"|u1", 1}, {"|i1", 1}, {"<i2", 2}, {"<u2", 2}, {"<i4", 4},
      {"<i8", 8}, {"<f2", 2}, {"<f4", 4}, {"<f8", 8}};
  for (const auto &[name, size] : kTypes)
    if (descr == name)
      return size;
  return 0;
}

NpyHeader parseNpyHeader(const uint8_t *bytes, size_t size,
                         const std::string &name) {
  static const char kMagic[] = "\x93NUMPY";
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0)
    throw Error(name + ": not a .npy file (bad magic)");
  int major = bytes[6];
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = bytes[8] | (size_t(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12)
      throw Error(name + ": truncated npy header");
    headerLength = bytes[8] | (size_t(bytes[9]) << 8) |
                   (size_t(bytes[10]) << 16) | (size_t(bytes[11]) << 24);
    headerStart = 12;
  } else {
    throw Error(name + ": unsupported npy format version " +
                std::to_string(major));
  }
  if (size < headerStart + headerLength)
    throw Error(name + ": truncated npy header");
  std::string header(reinterpret_cast<const char *>(bytes) + headerStart,
                     headerLength);

  NpyHeader result;
  std::string descr = npyField(header, "descr", name);
  if (descr.size() < 2 || descr[0] != '\'')
    throw Error(name + ": malformed npy descr");
  result.descr = descr.substr(1, descr.find('\'', 1) - 1);
  if (npyField(header, "fortran_order", name).rfind("False", 0) != 0)
    throw Error(name + ": Fortran-order arrays are not supported; save with "
                       "numpy.ascontiguousarray");
  result.shape = npyShape(header, name);
  result.itemSize = npyItemSize(result.descr);
  if (result.itemSize == 0)
    throw Error(name + ": unsupported npy dtype '" + result.descr +
                "' (dpc reads uint8, int8, int16, uint16, int32, int64, "
                "float16, float32 and float64)");
  result.dataOffset = headerStart + headerLength;
  uint64_t expected = uint64_t(product(result.shape)) * result.itemSize;
  uint64_t payload = size - result.dataOffset;
  if (payload != expected)
    throw Error(name + ": " + (payload < expected ? "truncated: " : "") +
                std::to_string(payload) + " bytes of data, shape and dtype " +
                "need " + std::to_string(expected));
  return result;
}

std::vector<std::string> expandShards(const std::string &pattern) {
  if (pattern.find_first_of("*?[") == std::string::npos)
    return {pattern};
  glob_t found;
  int status = ::glob(pattern.c_str(), 0, nullptr, &found);
  std::vector<std::string> paths;
  if (status == 0)
    paths.assign(found.gl_pathv, found.gl_pathv + found.gl_pathc);
  ::globfree(&found);
  if (paths.empty())
    throw Error(pattern + ": no file matches");
  std::sort(paths.begin(), paths.end());
  return paths;
}

/// The mapped pages are unmapped after every this many bytes read.
static constexpr size_t kReleaseBytes = size_t(16) << 20;
/// What a read is counted beyond its bytes: the kernel maps up to
/// fault_around_bytes (64 KiB by default) of cached pages around a fault.
static constexpr size_t kFaultAround = size_t(64) << 10;

/// A shard's bytes: mapped, or inflated from a gzipped file.
struct NpyRows::Shard {
  std::string path;
  std::unique_ptr<MappedFile> mapped;
  std::vector<uint8_t> inflated;
  NpyHeader header;

  explicit Shard(const std::string &file) : path(file) {
    mapped = std::make_unique<MappedFile>(file);
    const uint8_t *bytes = mapped->data();
    size_t size = mapped->size();
    if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
      inflated = readMaybeGzipFile(file);
      mapped.reset();
      bytes = inflated.data();
      size = inflated.size();
    }
    header = parseNpyHeader(bytes, size, file);
    if (mapped)
      mapped->advise(MappedFile::Access::Random);
  }
  const uint8_t *data() const {
    return (mapped ? mapped->data() : inflated.data()) + header.dataOffset;
  }
};

NpyRows::NpyRows(const std::vector<std::string> &paths,
                 FloatTransform floatTransform)
    : transform(std::move(floatTransform)) {
  int64_t total = 0;
  for (const std::string &path : paths) {
    auto shard = std::make_unique<Shard>(path);
    const NpyHeader &h = shard->header;
    if (h.shape.empty())
      throw Error(path + ": the array needs a sample dimension");
    if (shards.empty()) {
      dtype = h.descr;
      itemSize = h.itemSize;
      dims = h.shape;
      perRow = product({h.shape.begin() + 1, h.shape.end()});
    } else if (h.descr != dtype ||
               std::vector<int64_t>(h.shape.begin() + 1, h.shape.end()) !=
                   std::vector<int64_t>(dims.begin() + 1, dims.end())) {
      throw Error(path + ": shard of dtype '" + h.descr + "' and shape " +
                  shapeText(h.shape) + " does not continue " + paths[0] +
                  " ('" + dtype + "', rows of " +
                  shapeText({dims.begin() + 1, dims.end()}) + ")");
    }
    firstRows.push_back(total);
    total += h.shape[0];
    shards.push_back(std::move(shard));
  }
  if (!dims.empty())
    dims[0] = total;
  if (!transform.mean.empty() &&
      transform.mean.size() != transform.stddev.size())
    throw Error(paths[0] + ": mean= and std= need as many values");
  size_t channels = transform.mean.size();
  if (channels > 1 && (dims.size() < 2 || dims[1] != int64_t(channels)))
    throw Error(paths[0] + ": " + std::to_string(channels) +
                " means and stds for samples of shape " +
                shapeText({dims.begin() + 1, dims.end()}) +
                " (one a channel, the first axis of a sample)");
}

NpyRows::~NpyRows() = default;

bool NpyRows::integerType() const { return dtype[1] == 'i' || dtype[1] == 'u'; }

const std::string &NpyRows::firstPath() const { return shards[0]->path; }

size_t NpyRows::shardOf(int64_t row) const {
  if (row < 0 || row >= rows())
    throw Error(firstPath() + ": row " + std::to_string(row) +
                " out of range (" + std::to_string(rows()) + " rows)");
  return size_t(std::upper_bound(firstRows.begin(), firstRows.end(), row) -
                firstRows.begin()) -
         1;
}

const uint8_t *NpyRows::rowData(int64_t row) const {
  size_t k = shardOf(row);
  return shards[k]->data() +
         size_t(row - firstRows[k]) * size_t(perRow) * itemSize;
}

void NpyRows::afterRead(size_t bytes) const {
  const size_t charged = bytes + kFaultAround;
  if (sinceRelease.fetch_add(charged) + charged < kReleaseBytes)
    return;
  sinceRelease = 0;
  for (const auto &shard : shards)
    if (shard->mapped)
      shard->mapped->release(0, shard->mapped->size());
}

std::string NpyRows::where(int64_t row) const {
  size_t k = shardOf(row);
  return shards[k]->path + ": sample " + std::to_string(row - firstRows[k]);
}

/// `n` stored values of type S at `p` (unaligned) as T.
template <typename S, typename T>
static void convertAs(const uint8_t *p, int64_t n, T *out) {
  for (int64_t i = 0; i < n; ++i) {
    S value;
    std::memcpy(&value, p + size_t(i) * sizeof(S), sizeof(S));
    out[i] = T(value);
  }
}

/// `n` values of npy dtype `descr` at `p` as T.
template <typename T>
static void convertRow(const std::string &descr, const uint8_t *p, int64_t n,
                       T *out) {
  const char kind = descr[1], width = descr[2];
  if (kind == 'f' && width == '2') {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, p + size_t(i) * 2, 2);
      out[i] = T(support::halfToFloat(bits));
    }
  } else if (kind == 'f') {
    if (width == '4')
      convertAs<float>(p, n, out);
    else
      convertAs<double>(p, n, out);
  } else if (kind == 'u') {
    if (width == '1')
      convertAs<uint8_t>(p, n, out);
    else
      convertAs<uint16_t>(p, n, out);
  } else if (width == '1') {
    convertAs<int8_t>(p, n, out);
  } else if (width == '2') {
    convertAs<int16_t>(p, n, out);
  } else if (width == '4') {
    convertAs<int32_t>(p, n, out);
  } else {
    convertAs<int64_t>(p, n, out);
  }
}

void NpyRows::readFloats(int64_t row, float *out) const {
  convertRow(dtype, rowData(row), perRow, out);
  afterRead(size_t(perRow) * itemSize);
  if (transform.scale != 1.0) {
    // One correctly rounded division, as PyTorch's `x.float() / 255`.
    const float scale = float(transform.scale);
    for (int64_t i = 0; i < perRow; ++i)
      out[i] /= scale;
  }
  if (transform.mean.empty())
    return;
  const int64_t channels = int64_t(transform.mean.size());
  const int64_t perChannel = perRow / channels;
  for (int64_t i = 0; i < perRow; ++i) {
    size_t c = size_t(i / perChannel);
    out[i] = (out[i] - float(transform.mean[c])) / float(transform.stddev[c]);
  }
}

void NpyRows::readInts(int64_t row, int64_t *out) const {
  if (!integerType())
    throw Error(firstPath() + ": '" + dtype + "' values are not integer ids");
  convertRow(dtype, rowData(row), perRow, out);
  afterRead(size_t(perRow) * itemSize);
}

} // namespace dpc::runtime
