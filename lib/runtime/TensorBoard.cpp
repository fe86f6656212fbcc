//===- TensorBoard.cpp - TensorBoard event files --------------------------===//

#include "dpc/runtime/TensorBoard.h"

#include "dpc/runtime/Error.h"
#include "dpc/support/Crc32c.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace dpc::runtime {
namespace {

// Protocol buffer wire format: a field's key is (number << 3) | wire type.
void varint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out += char(uint8_t(value) | 0x80);
    value >>= 7;
  }
  out += char(uint8_t(value));
}

template <typename T> void fixed(std::string &out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T)); // little-endian hosts only
  out.append(bytes, sizeof(T));
}

void lengthDelimited(std::string &out, int field, const std::string &bytes) {
  varint(out, uint64_t(field) << 3 | 2);
  varint(out, bytes.size());
  out += bytes;
}

/// tensorflow.Event: wall_time = 1 (double), step = 2 (int64), and
/// file_version = 3 (string) or summary = 5 (Summary).
std::string event(double wallTime, int64_t step) {
  std::string out;
  varint(out, 1 << 3 | 1);
  fixed(out, wallTime);
  varint(out, 2 << 3 | 0);
  varint(out, uint64_t(step));
  return out;
}

double now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

} // namespace

uint32_t maskedCrc32c(const void *data, size_t size) {
  uint32_t c = support::crc32c(data, size);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  filePath =
      (std::filesystem::path(dir) /
       ("events.out.tfevents." + std::to_string(int64_t(now())) + "." + host))
          .string();
  file = std::fopen(filePath.c_str(), "wb");
  if (!file)
    throw Error("--tensorboard: cannot write " + filePath + ": " +
                std::strerror(errno));
  std::string first = event(now(), 0);
  lengthDelimited(first, 3, "brain.Event:2");
  record(first);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file)
    std::fclose(file);
}

void TensorBoardWriter::scalars(
    int64_t step, const std::vector<std::pair<std::string, double>> &values) {
  std::string summary;
  for (const auto &[tag, value] : values) {
    // Summary.value = 1: Value { tag = 1 (string), simple_value = 2 (float) }.
    std::string v;
    lengthDelimited(v, 1, tag);
    varint(v, 2 << 3 | 5);
    fixed(v, float(value));
    lengthDelimited(summary, 1, v);
  }
  std::string bytes = event(now(), step);
  lengthDelimited(bytes, 5, summary);
  record(bytes);
}

void TensorBoardWriter::record(const std::string &bytes) {
  std::string framed;
  uint64_t length = bytes.size();
  fixed(framed, length);
  fixed(framed, maskedCrc32c(&length, sizeof length));
  framed += bytes;
  fixed(framed, maskedCrc32c(bytes.data(), bytes.size()));
  if (std::fwrite(framed.data(), 1, framed.size(), file) != framed.size() ||
      std::fflush(file) != 0)
    throw Error("--tensorboard: cannot write " + filePath + ": " +
                std::strerror(errno));
}

} // namespace dpc::runtime
