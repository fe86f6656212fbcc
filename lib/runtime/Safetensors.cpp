//===- Safetensors.cpp - Weights and checkpoints --------------------------===//

#include "dpc/runtime/Safetensors.h"

#include "dpc/runtime/Error.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/support/CommandLine.h"
#include "dpc/support/Crc32c.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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
    uint32_t actual = support::crc32c(tensor.bytes.data(), tensor.bytes.size());
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

std::vector<float> Tensor::toF32() const {
  if (dtype != DType::F32)
    throw Error(std::string("tensor: expected F32, got ") + dtypeName(dtype));
  std::vector<float> out(bytes.size() / sizeof(float));
  if (!out.empty())
    std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<int64_t> Tensor::toI64() const {
  if (dtype != DType::I64)
    throw Error(std::string("tensor: expected I64, got ") + dtypeName(dtype));
  std::vector<int64_t> out(bytes.size() / sizeof(int64_t));
  if (!out.empty())
    std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TensorFile parseSafetensors(const std::vector<uint8_t> &bytes,
                            const std::string &name) {
  if (bytes.size() < 8)
    throw Error(name + ": truncated safetensors file (" +
                std::to_string(bytes.size()) + " bytes)");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | bytes[size_t(i)];
  if (headerSize > bytes.size() - 8)
    throw Error(name + ": header length " + std::to_string(headerSize) +
                " overruns the file (" + std::to_string(bytes.size()) +
                " bytes)");
  nlohmann::json header = nlohmann::json::parse(
      bytes.begin() + 8, bytes.begin() + 8 + long(headerSize), nullptr,
      /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    throw Error(name + ": header is not a JSON object");

  const uint64_t dataSize = bytes.size() - 8 - headerSize;
  const uint8_t *data = bytes.data() + 8 + headerSize;
  TensorFile file;
  std::map<std::string, std::string> checksums;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &key = it.key();
    const nlohmann::json &entry = it.value();
    if (key == "__metadata__") {
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
          file.metadata[m.key()] = m.value().get<std::string>();
      }
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
    tensor.bytes.assign(data + begin, data + end);
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

TensorFile readSafetensors(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad())
    throw Error(path + ": read failed");
  return parseSafetensors(bytes, path);
}

std::vector<uint8_t> serializeSafetensors(const TensorFile &file) {
  nlohmann::json header = nlohmann::json::object();
  std::map<std::string, std::string> metadata;
  for (const auto &[key, value] : file.metadata)
    if (key.compare(0, kChecksumPrefix.size(), kChecksumPrefix) != 0)
      metadata[key] = value;
  uint64_t offset = 0;
  for (const auto &[name, tensor] : file.tensors) {
    uint64_t expected =
        uint64_t(tensor.numElements()) * dtypeSize(tensor.dtype);
    if (tensor.bytes.size() != expected)
      throw Error("safetensors: tensor '" + name + "' holds " +
                  std::to_string(tensor.bytes.size()) +
                  " bytes, its dtype and shape need " +
                  std::to_string(expected));
    header[name] = {{"dtype", dtypeName(tensor.dtype)},
                    {"shape", tensor.shape},
                    {"data_offsets", {offset, offset + expected}}};
    metadata[kChecksumPrefix + name] = formatChecksum(
        support::crc32c(tensor.bytes.data(), tensor.bytes.size()));
    offset += expected;
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string text = header.dump();
  // Pad so that the data section starts 8-byte aligned, as other writers do;
  // readers can then map F64/I64 tensors in place.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<uint8_t> bytes(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i)
    bytes[size_t(i)] = uint8_t(uint64_t(text.size()) >> (8 * i));
  std::memcpy(bytes.data() + 8, text.data(), text.size());
  uint8_t *data = bytes.data() + 8 + text.size();
  for (const auto &entry : file.tensors) {
    const std::vector<uint8_t> &raw = entry.second.bytes;
    if (!raw.empty())
      std::memcpy(data, raw.data(), raw.size());
    data += raw.size();
  }
  return bytes;
}

void writeSafetensors(const std::string &path, const TensorFile &file) {
  std::vector<uint8_t> bytes = serializeSafetensors(file);
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw Error(path + ": cannot create: " + std::strerror(errno));
    out.write(reinterpret_cast<const char *>(bytes.data()),
              std::streamsize(bytes.size()));
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw Error(path + ": write failed: " + std::strerror(errno));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    std::remove(temp.c_str());
    throw Error(path + ": cannot rename into place: " + std::strerror(saved));
  }
}

std::string checkpointPath(const std::string &dir, int stage) {
  return dir + "/stage" + std::to_string(stage) + ".safetensors";
}

TensorFile readCheckpoint(const std::string &dir, bool optimizerState) {
  // What every stage of one checkpoint must agree on: a directory that mixes
  // files of two runs (or of one run stopped between two stages' writes)
  // would otherwise resume from weights of different steps.
  static const char *const kShared[] = {"step", "optimizer",
                                        "optimizer_updates"};
  TensorFile merged;
  int stages = 1;
  for (int stage = 0; stage < stages; ++stage) {
    std::string path = checkpointPath(dir, stage);
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
