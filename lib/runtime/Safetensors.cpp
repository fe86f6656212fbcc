//===- Safetensors.cpp - Weights and checkpoints --------------------------===//

#include "dpc/runtime/Safetensors.h"

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/support/CommandLine.h"
#include "dpc/support/Crc32c.h"
#include "dpc/support/HalfFloat.h"
#include "dpc/support/MappedFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <set>
#include <unistd.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; a big-endian host would "
              "need byte swapping");

namespace dpc::runtime {

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t size;
};
const DTypeInfo kDTypes[] = {
    {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2}, {DType::F32, "F32", 4},
    {DType::F64, "F64", 8}, {DType::I8, "I8", 1},     {DType::I32, "I32", 4},
    {DType::I64, "I64", 8}, {DType::U8, "U8", 1},     {DType::Bool, "BOOL", 1},
};

// dpc's writer stores each tensor's CRC-32C in the metadata as
// "crc32c:NAME": "8 lowercase hex digits". Other tools keep metadata they do
// not know, and a file without these keys (an older output, a file another
// tool wrote) still loads; a file with them loads only when every tensor
// matches its checksum.
const std::string kChecksumPrefix = "crc32c:";

std::string formatChecksum(uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", crc);
  return text;
}

bool parseChecksum(const std::string &text, uint32_t &crc) {
  if (text.size() != 8)
    return false;
  crc = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
    if (digit < 0)
      return false;
    crc = crc << 4 | uint32_t(digit);
  }
  return true;
}

// Checks every tensor of `file` against `checksums` (tensor name -> stored
// text), when the file has any.
void verifyChecksums(const TensorFile &file,
                     const std::map<std::string, std::string> &checksums,
                     const std::string &name) {
  if (checksums.empty())
    return;
  for (const auto &[tensorName, tensor] : file.tensors) {
    std::string where = name + ": tensor '" + tensorName + "'";
    auto stored = checksums.find(tensorName);
    if (stored == checksums.end())
      throw Error(where + " has no checksum though the file's other tensors "
                          "have one (the header is corrupt)");
    uint32_t expected = 0;
    if (!parseChecksum(stored->second, expected))
      throw Error(where + " has a malformed checksum '" + stored->second +
                  "' (8 lowercase hex digits expected)");
    uint32_t actual = support::crc32c(tensor.data(), tensor.size());
    tensor.release();
    if (actual != expected)
      throw Error(where + " fails its CRC-32C checksum (stored " +
                  stored->second + ", data gives " + formatChecksum(actual) +
                  "): the file is corrupt");
  }
  for (const auto &entry : checksums)
    if (!file.tensors.count(entry.first))
      throw Error(name + ": a checksum names tensor '" + entry.first +
                  "', which the file does not hold (the header is corrupt)");
}
} // namespace

const char *dtypeName(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.name;
  return "?";
}

size_t dtypeSize(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.size;
  return 0;
}

bool parseDType(const std::string &name, DType &dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name) {
      dtype = info.dtype;
      return true;
    }
  return false;
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

const uint8_t *Tensor::data() const {
  return file ? file->data() + offset : bytes.data();
}

size_t Tensor::size() const {
  return file ? size_t(numElements()) * dtypeSize(dtype) : bytes.size();
}

Tensor Tensor::mapped(DType dtype, std::vector<int64_t> shape,
                      std::shared_ptr<const support::MappedFile> file,
                      uint64_t offset, const std::string &name) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  uint64_t need = uint64_t(t.numElements()) * dtypeSize(dtype);
  if (offset > file->size() || need > file->size() - offset)
    throw Error(file->path() + ": tensor '" + name + "' needs " +
                std::to_string(need) + " bytes at offset " +
                std::to_string(offset) + ", but the file has " +
                std::to_string(file->size()) + " bytes");
  t.file = std::move(file);
  t.offset = offset;
  return t;
}

void Tensor::release() const {
  if (file)
    file->release(offset, size());
}

Tensor Tensor::fromF32(std::vector<int64_t> shape, const float *data) {
  Tensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.bytes.resize(size_t(t.numElements()) * sizeof(float));
  if (!t.bytes.empty())
    std::memcpy(t.bytes.data(), data, t.bytes.size());
  return t;
}

Tensor Tensor::fromI64(std::vector<int64_t> shape, const int64_t *data) {
  Tensor t;
  t.dtype = DType::I64;
  t.shape = std::move(shape);
  t.bytes.resize(size_t(t.numElements()) * sizeof(int64_t));
  if (!t.bytes.empty())
    std::memcpy(t.bytes.data(), data, t.bytes.size());
  return t;
}

bool isFloatDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 ||
         dtype == DType::F64;
}

void Tensor::readF32(float *out, size_t first, size_t count) const {
  using support::FloatFormat;
  FloatFormat format;
  switch (dtype) {
  case DType::F32:
    format = FloatFormat::F32;
    break;
  case DType::F16:
    format = FloatFormat::F16;
    break;
  case DType::BF16:
    format = FloatFormat::BF16;
    break;
  case DType::F64:
    format = FloatFormat::F64;
    break;
  default:
    throw Error(std::string("tensor: expected a float dtype, got ") +
                dtypeName(dtype));
  }
  support::widenToFloat(format, data() + first * dtypeSize(dtype), count, out);
}

std::vector<float> Tensor::toF32() const {
  if (!isFloatDType(dtype))
    throw Error(std::string("tensor: expected a float dtype, got ") +
                dtypeName(dtype));
  std::vector<float> out(size() / dtypeSize(dtype));
  readF32(out.data(), 0, out.size());
  return out;
}

std::vector<int64_t> Tensor::toI64() const {
  if (dtype != DType::I64)
    throw Error(std::string("tensor: expected I64, got ") + dtypeName(dtype));
  std::vector<int64_t> out(size() / sizeof(int64_t));
  if (!out.empty())
    std::memcpy(out.data(), data(), size());
  return out;
}

namespace {

// The JSON header of the `size` bytes at `image`, whose length goes into
// `headerSize`.
nlohmann::json parseHeader(const uint8_t *image, size_t size,
                           const std::string &name, uint64_t &headerSize) {
  if (size < 8)
    throw Error(name + ": truncated safetensors file (" + std::to_string(size) +
                " bytes)");
  headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | image[size_t(i)];
  if (headerSize > size - 8)
    throw Error(name + ": header length " + std::to_string(headerSize) +
                " overruns the file (" + std::to_string(size) + " bytes)");
  nlohmann::json header =
      nlohmann::json::parse(image + 8, image + 8 + headerSize, nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    throw Error(name + ": header is not a JSON object");
  return header;
}

// The header's __metadata__ `entry`: the checksums (by tensor name) into
// `checksums`, the rest into `metadata`.
void readMetadata(const nlohmann::json &entry, const std::string &name,
                  std::map<std::string, std::string> &metadata,
                  std::map<std::string, std::string> &checksums) {
  if (!entry.is_object())
    throw Error(name + ": __metadata__ must be an object");
  for (auto m = entry.begin(); m != entry.end(); ++m) {
    if (!m.value().is_string())
      throw Error(name + ": metadata value of '" + m.key() +
                  "' must be a string");
    if (m.key().compare(0, kChecksumPrefix.size(), kChecksumPrefix) == 0)
      checksums[m.key().substr(kChecksumPrefix.size())] =
          m.value().get<std::string>();
    else
      metadata[m.key()] = m.value().get<std::string>();
  }
}

// Parses the `size` bytes at `image`; with `mapped` (the file `image` lies
// in), each tensor is a view into it rather than a copy.
TensorFile
parseImage(const uint8_t *image, size_t size, const std::string &name,
           const std::shared_ptr<const support::MappedFile> &mapped) {
  uint64_t headerSize = 0;
  nlohmann::json header = parseHeader(image, size, name, headerSize);
  const uint64_t dataSize = size - 8 - headerSize;
  const uint8_t *data = image + 8 + headerSize;
  TensorFile file;
  std::map<std::string, std::string> checksums;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &key = it.key();
    const nlohmann::json &entry = it.value();
    if (key == "__metadata__") {
      readMetadata(entry, name, file.metadata, checksums);
      continue;
    }
    std::string where = name + ": tensor '" + key + "'";
    if (!entry.is_object() || !entry.contains("dtype") ||
        !entry.contains("shape") || !entry.contains("data_offsets"))
      throw Error(where + " needs dtype, shape and data_offsets");
    Tensor tensor;
    if (!entry["dtype"].is_string() ||
        !parseDType(entry["dtype"].get<std::string>(), tensor.dtype))
      throw Error(where + " has unsupported dtype " + entry["dtype"].dump());
    if (!entry["shape"].is_array())
      throw Error(where + ": shape must be an array");
    for (const nlohmann::json &dim : entry["shape"]) {
      if (!dim.is_number_unsigned())
        throw Error(where + ": shape must hold non-negative integers");
      tensor.shape.push_back(dim.get<int64_t>());
    }
    const nlohmann::json &offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 ||
        !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      throw Error(where + ": data_offsets must be [begin, end]");
    uint64_t begin = offsets[0].get<uint64_t>(),
             end = offsets[1].get<uint64_t>();
    if (begin > end || end > dataSize)
      throw Error(where + ": data_offsets [" + std::to_string(begin) + ", " +
                  std::to_string(end) + "] outside the " +
                  std::to_string(dataSize) + " data bytes");
    uint64_t expected =
        uint64_t(tensor.numElements()) * dtypeSize(tensor.dtype);
    if (end - begin != expected)
      throw Error(where + " has " + std::to_string(end - begin) +
                  " bytes, its dtype and shape need " +
                  std::to_string(expected));
    if (mapped) {
      tensor.file = mapped;
      tensor.offset = uint64_t(data - image) + begin;
    } else {
      tensor.bytes.assign(data + begin, data + end);
    }
    ranges.emplace_back(begin, end);
    file.tensors.emplace(key, std::move(tensor));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      throw Error(name + ": tensors overlap in the data section");
  verifyChecksums(file, checksums, name);
  return file;
}

} // namespace

TensorFile parseSafetensors(const std::vector<uint8_t> &bytes,
                            const std::string &name) {
  return parseImage(bytes.data(), bytes.size(), name, nullptr);
}

TensorFile readSafetensors(const std::string &path) {
  auto mapped = std::make_shared<const support::MappedFile>(path);
  return parseImage(mapped->data(), mapped->size(), path, mapped);
}

std::map<std::string, std::string>
readSafetensorsMetadata(const std::string &path) {
  support::MappedFile mapped(path);
  uint64_t headerSize = 0;
  nlohmann::json header =
      parseHeader(mapped.data(), mapped.size(), path, headerSize);
  std::map<std::string, std::string> metadata, checksums;
  if (header.contains("__metadata__"))
    readMetadata(header["__metadata__"], path, metadata, checksums);
  return metadata;
}

namespace {

// The header of `file` (tensors in name order at consecutive offsets, the
// metadata with tensor k's checksum from `checksums[k]`), padded so that
// the data starts 8-byte aligned, as other writers do; readers can then map
// F64/I64 tensors in place. Throws Error for a tensor whose bytes disagree
// with its dtype and shape. `dataSize` receives the data section's size.
std::string headerText(const TensorFile &file,
                       const std::vector<uint32_t> &checksums,
                       uint64_t &dataSize) {
  nlohmann::json header = nlohmann::json::object();
  std::map<std::string, std::string> metadata;
  for (const auto &[key, value] : file.metadata)
    if (key.compare(0, kChecksumPrefix.size(), kChecksumPrefix) != 0)
      metadata[key] = value;
  uint64_t offset = 0;
  size_t k = 0;
  for (const auto &[name, tensor] : file.tensors) {
    uint64_t expected =
        uint64_t(tensor.numElements()) * dtypeSize(tensor.dtype);
    if (tensor.size() != expected)
      throw Error("safetensors: tensor '" + name + "' holds " +
                  std::to_string(tensor.size()) +
                  " bytes, its dtype and shape need " +
                  std::to_string(expected));
    header[name] = {{"dtype", dtypeName(tensor.dtype)},
                    {"shape", tensor.shape},
                    {"data_offsets", {offset, offset + expected}}};
    metadata[kChecksumPrefix + name] = formatChecksum(checksums[k++]);
    offset += expected;
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  dataSize = offset;
  return text;
}

// The 8-byte little-endian length before a header.
std::string lengthPrefix(const std::string &header) {
  std::string prefix(8, '\0');
  for (int i = 0; i < 8; ++i)
    prefix[size_t(i)] = char(uint64_t(header.size()) >> (8 * i));
  return prefix;
}

// Writes all `size` bytes at `data` to `fd` at `offset` (or at its current
// position for offset -1).
bool writeAll(int fd, const void *data, size_t size, off_t offset = -1) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n =
        offset < 0 ? ::write(fd, p, size) : ::pwrite(fd, p, size, offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= size_t(n);
    if (offset >= 0)
      offset += n;
  }
  return true;
}

// Streams `file` to the open `fd`: a header with placeholder checksums, the
// data piece by piece (mapped pieces given back once written) with each
// tensor's checksum computed on the way, then the real header over the
// placeholder (the same length: a checksum is always 8 hex digits).
bool streamSafetensors(int fd, const TensorFile &file) {
  std::vector<uint32_t> checksums(file.tensors.size(), 0);
  uint64_t dataSize = 0;
  std::string header = headerText(file, checksums, dataSize);
  if (!writeAll(fd, lengthPrefix(header).data(), 8) ||
      !writeAll(fd, header.data(), header.size()))
    return false;
  // A piece of a mapped tensor stays resident until given back: small
  // pieces keep a large tensor from counting whole in the writer's RSS.
  constexpr size_t kPiece = size_t(8) << 20;
  size_t k = 0;
  for (const auto &entry : file.tensors) {
    const Tensor &tensor = entry.second;
    uint32_t crc = 0;
    for (size_t done = 0; done < tensor.size(); done += kPiece) {
      size_t n = std::min(kPiece, tensor.size() - done);
      crc = support::crc32c(tensor.data() + done, n, crc);
      if (!writeAll(fd, tensor.data() + done, n))
        return false;
      if (tensor.file)
        tensor.file->release(tensor.offset + done, n);
    }
    checksums[k++] = crc;
  }
  std::string final = headerText(file, checksums, dataSize);
  if (final.size() != header.size())
    throw Error("safetensors: the header changed length once the checksums "
                "were filled in");
  return writeAll(fd, final.data(), final.size(), 8);
}

} // namespace

std::vector<uint8_t> serializeSafetensors(const TensorFile &file) {
  std::vector<uint32_t> checksums;
  for (const auto &entry : file.tensors)
    checksums.push_back(
        support::crc32c(entry.second.data(), entry.second.size()));
  uint64_t dataSize = 0;
  std::string text = headerText(file, checksums, dataSize);
  std::string prefix = lengthPrefix(text);
  std::vector<uint8_t> bytes(prefix.begin(), prefix.end());
  bytes.reserve(8 + text.size() + dataSize);
  bytes.insert(bytes.end(), text.begin(), text.end());
  for (const auto &entry : file.tensors)
    bytes.insert(bytes.end(), entry.second.data(),
                 entry.second.data() + entry.second.size());
  return bytes;
}

void writeSafetensors(const std::string &path, const TensorFile &file) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(path + ": cannot create: " + std::strerror(errno));
  bool written = false;
  try {
    written = streamSafetensors(fd, file);
  } catch (...) {
    ::close(fd);
    std::remove(temp.c_str());
    throw;
  }
  int saved = errno;
  if (::close(fd) != 0 && written) {
    written = false;
    saved = errno;
  }
  if (!written) {
    std::remove(temp.c_str());
    throw Error(path + ": write failed: " + std::strerror(saved));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    saved = errno;
    std::remove(temp.c_str());
    throw Error(path + ": cannot rename into place: " + std::strerror(saved));
  }
}

std::string checkpointPath(const std::string &dir, int stage) {
  return dir + "/stage" + std::to_string(stage) + ".safetensors";
}

std::string previousCheckpointPath(const std::string &dir, int stage) {
  return dir + "/stage" + std::to_string(stage) + ".previous.safetensors";
}

void writeCheckpointFile(const std::string &path, const TensorFile &file) {
  static const std::string kSuffix = ".safetensors";
  if (path.size() < kSuffix.size() ||
      path.compare(path.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
    throw Error(path + ": a checkpoint file name ends in " + kSuffix);
  std::string base = path.substr(0, path.size() - kSuffix.size());
  std::string next = base + ".next" + kSuffix;
  std::string previous = base + ".previous" + kSuffix;
  writeSafetensors(next, file);
  if (std::rename(path.c_str(), previous.c_str()) != 0 && errno != ENOENT)
    throw Error(path + ": cannot keep it as " + previous + ": " +
                std::strerror(errno));
  if (std::rename(next.c_str(), path.c_str()) != 0)
    throw Error(path + ": cannot rename into place: " + std::strerror(errno));
}

namespace {

/// The "step" and "stages" metadata of the checkpoint at `path`, from its
/// header alone; -1 for what is missing or not a number, and for a path
/// with no file.
std::pair<int64_t, int64_t> checkpointStepAt(const std::string &path) {
  if (::access(path.c_str(), F_OK) != 0)
    return {-1, -1};
  std::map<std::string, std::string> metadata = readSafetensorsMetadata(path);
  auto number = [&](const char *key) {
    auto found = metadata.find(key);
    int64_t n = -1;
    if (found == metadata.end() || !cli::parseInteger(found->second, n))
      return int64_t(-1);
    return n;
  };
  return {number("step"), number("stages")};
}

/// A step every stage of a checkpoint has: the file of each stage.
struct CommonStep {
  int64_t step = -1;
  std::vector<std::string> files;
};

/// The newest step that every stage (as many as stage0's file of that step
/// records) has as its newest or previous checkpoint, when the stages'
/// newest files do not all have one step; none when they do, or when no
/// step is common to all (the newest files are then read, and their
/// disagreement reported).
CommonStep findCommonStep(const std::string &dir) {
  std::map<int64_t, std::pair<std::string, int64_t>> stage0;
  for (const std::string &path :
       {checkpointPath(dir, 0), previousCheckpointPath(dir, 0)}) {
    auto [step, stages] = checkpointStepAt(path);
    if (step >= 0)
      stage0.emplace(step, std::make_pair(path, std::max<int64_t>(1, stages)));
  }
  auto newest = checkpointStepAt(checkpointPath(dir, 0));
  bool agree = newest.first >= 0;
  for (int stage = 1; agree && stage < newest.second; ++stage)
    agree = checkpointStepAt(checkpointPath(dir, stage)).first == newest.first;
  if (agree)
    return {};
  for (auto it = stage0.rbegin(); it != stage0.rend(); ++it) {
    CommonStep common{it->first, {it->second.first}};
    for (int stage = 1; stage < it->second.second; ++stage) {
      std::string found;
      for (const std::string &path :
           {checkpointPath(dir, stage), previousCheckpointPath(dir, stage)})
        if (found.empty() && checkpointStepAt(path).first == it->first)
          found = path;
      if (found.empty())
        break;
      common.files.push_back(found);
    }
    if (int64_t(common.files.size()) == it->second.second)
      return common;
  }
  return {};
}

} // namespace

int64_t readCheckpointStep(const std::string &dir) {
  CommonStep common = findCommonStep(dir);
  if (common.step >= 0)
    return common.step;
  int64_t step = checkpointStepAt(checkpointPath(dir, 0)).first;
  if (step < 0)
    throw Error(checkpointPath(dir, 0) + ": no checkpoint step");
  return step;
}

TensorFile readCheckpoint(const std::string &dir, bool optimizerState,
                          std::string *olderStep) {
  CommonStep common = findCommonStep(dir);
  if (common.step >= 0 && olderStep)
    *olderStep = "checkpoint: the stages' newest files in " + dir +
                 " are not of one step (a job stopped while writing them); "
                 "read step " +
                 std::to_string(common.step) +
                 ", which every stage's newest or previous file holds";
  const std::vector<std::string> &chosen = common.files;
  // What every stage of one checkpoint must agree on: a directory that mixes
  // files of two runs (or of one run stopped between two stages' writes)
  // would otherwise resume from weights of different steps.
  static const char *const kShared[] = {"step", "optimizer",
                                        "optimizer_updates"};
  TensorFile merged;
  int stages = 1;
  for (int stage = 0; stage < stages; ++stage) {
    std::string path = size_t(stage) < chosen.size()
                           ? chosen[size_t(stage)]
                           : checkpointPath(dir, stage);
    std::ifstream probe(path);
    if (!probe)
      throw Error(path + ": no such checkpoint" +
                  (stage == 0
                       ? std::string(" (is '" + dir + "' a --checkpoint-dir?)")
                       : " (stage0 says there are " + std::to_string(stages) +
                             " stages)"));
    TensorFile file = readSafetensors(path);
    auto count = file.metadata.find("stages");
    if (stage == 0 && count != file.metadata.end()) {
      int64_t n = 0;
      if (!cli::parseInteger(count->second, n) || n < 1 || n > INT_MAX)
        throw Error(path + ": bad \"stages\" metadata '" + count->second + "'");
      stages = int(n);
    }
    if (stage == 0) {
      merged.metadata = file.metadata;
    } else {
      for (const char *key : kShared) {
        auto mine = file.metadata.find(key);
        auto first = merged.metadata.find(key);
        std::string value = mine == file.metadata.end() ? "" : mine->second;
        std::string expected =
            first == merged.metadata.end() ? "" : first->second;
        if (value != expected)
          throw Error(path + ": \"" + key + "\" is '" + value +
                      "' but stage0's is '" + expected +
                      "' (files of different runs or steps)");
      }
    }
    for (auto &[name, tensor] : file.tensors) {
      if (!optimizerState && isOptimizerState(name))
        continue;
      if (!merged.tensors.emplace(name, tensor).second)
        throw Error(path + ": tensor '" + name +
                    "' is in another stage's checkpoint too");
    }
  }
  merged.metadata.erase("stage");
  return merged;
}

} // namespace dpc::runtime
