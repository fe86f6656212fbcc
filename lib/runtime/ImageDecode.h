//===- ImageDecode.h - JPEG and PNG files to pixels -------------*- C++ -*-===//
//
// Private to lib/runtime. The imagefolder: source decodes its files with
// Debian's libjpeg-turbo (JPEG) and libpng (PNG), the libraries PIL itself
// links on Debian, so that a JPEG decodes to the bytes PIL gives. Decoding
// is strict: a warning of either library (a truncated file, a corrupt
// segment) is an error, since a half-decoded image would train silently on
// gray filler.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_IMAGEDECODE_H
#define DPC_LIB_RUNTIME_IMAGEDECODE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dpc::runtime::image {

/// 8-bit pixels, row after row, channels interleaved: 1 (gray) or 3 (RGB).
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;

  uint8_t at(int y, int x, int c) const {
    return pixels[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) +
                  size_t(c)];
  }
};

enum class Format { Unknown, Jpeg, Png };

/// The format the first bytes announce (JPEG's SOI marker, PNG's
/// signature); `size` may be short.
Format sniffFormat(const uint8_t *bytes, size_t size);

/// Decodes JPEG or PNG bytes to gray or RGB: a PNG's palette is expanded,
/// its alpha dropped (as PIL's convert('RGB') does), 16-bit samples cut to
/// their high byte; a JPEG's CMYK is refused. Throws InputError "NAME: ..."
/// on anything the libraries report, warnings included.
Image decodeImage(const uint8_t *bytes, size_t size, const std::string &name);

/// Reads and decodes `path`.
Image readImageFile(const std::string &path);

} // namespace dpc::runtime::image

#endif // DPC_LIB_RUNTIME_IMAGEDECODE_H
