//===- ImageDecode.cpp - JPEG and PNG files to pixels ---------------------===//
//
// Both libraries report errors by longjmp from a callback (libjpeg's
// error_exit, libpng's error_fn): C++ exceptions must not unwind through
// their C frames, so each decoder keeps the message, jumps back to its
// setjmp point and throws from there, after releasing the library's state.
// What a decoder changes after its setjmp lives behind a pointer set before
// it (a local changed between setjmp and longjmp is indeterminate after).
//
//===----------------------------------------------------------------------===//

#include "ImageDecode.h"

#include "dpc/runtime/Error.h"

#include <jpeglib.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

namespace dpc::runtime::image {

Format sniffFormat(const uint8_t *bytes, size_t size) {
  static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff)
    return Format::Jpeg;
  if (size >= 8 && std::memcmp(bytes, png, 8) == 0)
    return Format::Png;
  return Format::Unknown;
}

//===----------------------------------------------------------------------===//
// JPEG
//===----------------------------------------------------------------------===//

namespace {

struct JpegErrors {
  jpeg_error_mgr manager; // first: libjpeg casts the pointer back
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void jpegErrorExit(j_common_ptr info) {
  auto *errors = reinterpret_cast<JpegErrors *>(info->err);
  info->err->format_message(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// Level -1 is a warning (a premature end of the data, a corrupt segment
// libjpeg skipped): an error here. Higher levels are trace messages.
void jpegEmitMessage(j_common_ptr info, int level) {
  if (level < 0)
    jpegErrorExit(info);
}

} // namespace

static Image decodeJpeg(const uint8_t *bytes, size_t size,
                        const std::string &name) {
  const auto infoState = std::make_unique<jpeg_decompress_struct>();
  const auto errorState = std::make_unique<JpegErrors>();
  jpeg_decompress_struct &info = *infoState;
  JpegErrors &errors = *errorState;
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = jpegErrorExit;
  errors.manager.emit_message = jpegEmitMessage;
  const auto result = std::make_unique<Image>();
  Image &image = *result;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&info);
    throw InputError(name + ": corrupt or truncated JPEG (" +
                     std::string(errors.message) + ")");
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes, static_cast<unsigned long>(size));
  jpeg_read_header(&info, TRUE);
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&info);
    throw InputError(name + ": a CMYK JPEG; dpc reads gray and RGB JPEGs");
  }
  // libjpeg's defaults (islow DCT, fancy upsampling) are PIL's.
  info.out_color_space =
      info.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  image.width = int(info.output_width);
  image.height = int(info.output_height);
  image.channels = int(info.output_components);
  const size_t stride = size_t(image.width) * size_t(image.channels);
  image.pixels.resize(stride * size_t(image.height));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = image.pixels.data() + stride * info.output_scanline;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return std::move(image);
}

//===----------------------------------------------------------------------===//
// PNG
//===----------------------------------------------------------------------===//

namespace {

struct PngReader {
  const uint8_t *bytes = nullptr;
  size_t size = 0, offset = 0;
  std::string message;
};

void pngRead(png_structp png, png_bytep out, png_size_t length) {
  auto *reader = static_cast<PngReader *>(png_get_io_ptr(png));
  if (length > reader->size - reader->offset)
    png_error(png, "the file ends inside the image data");
  std::memcpy(out, reader->bytes + reader->offset, length);
  reader->offset += length;
}

[[noreturn]] void pngError(png_structp png, png_const_charp message) {
  auto *reader = static_cast<PngReader *>(png_get_error_ptr(png));
  reader->message = message;
  png_longjmp(png, 1);
}

void pngWarning(png_structp png, png_const_charp message) {
  pngError(png, message);
}

} // namespace

static Image decodePng(const uint8_t *bytes, size_t size,
                       const std::string &name) {
  const auto readerState = std::make_unique<PngReader>();
  PngReader &reader = *readerState;
  reader.bytes = bytes;
  reader.size = size;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader,
                                           pngError, pngWarning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw InputError(name + ": out of memory reading the PNG");
  }
  struct Decoded {
    Image image;
    std::vector<png_bytep> rows;
  };
  const auto result = std::make_unique<Decoded>();
  Image &image = result->image;
  std::vector<png_bytep> &rows = result->rows;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw InputError(name + ": corrupt or truncated PNG (" + reader.message +
                     ")");
  }
  png_set_read_fn(png, &reader, pngRead);
  png_read_info(png, info);
  int color = png_get_color_type(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE)
    png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_bit_depth(png, info) == 16)
    png_set_strip_16(png);
  // A tRNS chunk would add an alpha channel on expansion; none is wanted.
  png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  image.width = int(png_get_image_width(png, info));
  image.height = int(png_get_image_height(png, info));
  image.channels = int(png_get_channels(png, info));
  const size_t stride = png_get_rowbytes(png, info);
  image.pixels.resize(stride * size_t(image.height));
  rows.resize(size_t(image.height));
  for (size_t y = 0; y < rows.size(); ++y)
    rows[y] = image.pixels.data() + y * stride;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  if (image.channels != 1 && image.channels != 3)
    throw InputError(name + ": a PNG of " + std::to_string(image.channels) +
                     " channels after conversion; expected gray or RGB");
  return std::move(image);
}

Image decodeImage(const uint8_t *bytes, size_t size, const std::string &name) {
  switch (sniffFormat(bytes, size)) {
  case Format::Jpeg:
    return decodeJpeg(bytes, size, name);
  case Format::Png:
    return decodePng(bytes, size, name);
  case Format::Unknown:
    break;
  }
  throw InputError(name + ": not a JPEG or PNG image");
}

Image readImageFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return decodeImage(bytes.data(), bytes.size(), path);
}

} // namespace dpc::runtime::image
