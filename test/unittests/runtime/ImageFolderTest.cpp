//===- ImageFolderTest.cpp - imagefolder: decoding, transforms, loader ----===//
//
// The decoders against images whose pixels are known (a PNG built here
// byte by byte, a JPEG encoded here with libjpeg at quality 100 from flat
// blocks, which decode exactly); PIL's bilinear resize against values
// worked out by hand from Resample.c's formulas; crops, flips, luma,
// RandomResizedCrop's fallback, center crops' rounding; the folder's
// listing, labels and refusals; and the loader threads against a
// synchronous gather. imagefolder-pil.test compares with PIL itself.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/ImageDecode.h"
#include "lib/runtime/ImageTransforms.h"

#include "dpc/runtime/Data.h"
#include "dpc/runtime/Error.h"
#include "dpc/runtime/Loader.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/TempDir.h"

#include <gtest/gtest.h>

#include <jpeglib.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <malloc.h>
#include <sys/stat.h>

namespace dpc::runtime {
namespace {

using image::Image;

//===----------------------------------------------------------------------===//
// Images made here
//===----------------------------------------------------------------------===//

void appendBig(std::vector<uint8_t> &out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(uint8_t(v >> shift));
}

void appendChunk(std::vector<uint8_t> &out, const char *type,
                 const std::vector<uint8_t> &data) {
  appendBig(out, uint32_t(data.size()));
  std::vector<uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  appendBig(out, uint32_t(crc32(0, body.data(), uInt(body.size()))));
}

/// An 8-bit PNG of `channels` 1 (gray) or 3 (RGB), rows unfiltered.
std::vector<uint8_t> makePng(const Image &img) {
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> header;
  appendBig(header, uint32_t(img.width));
  appendBig(header, uint32_t(img.height));
  header.insert(header.end(), {8, uint8_t(img.channels == 1 ? 0 : 2), 0, 0, 0});
  appendChunk(png, "IHDR", header);
  std::vector<uint8_t> raw;
  const size_t stride = size_t(img.width) * size_t(img.channels);
  for (int y = 0; y < img.height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), img.pixels.begin() + long(y * stride),
               img.pixels.begin() + long((y + 1) * stride));
  }
  uLongf size = compressBound(uLong(raw.size()));
  std::vector<uint8_t> packed(size);
  compress(packed.data(), &size, raw.data(), uLong(raw.size()));
  packed.resize(size);
  appendChunk(png, "IDAT", packed);
  appendChunk(png, "IEND", {});
  return png;
}

/// A JPEG of `img` at quality 100 (gray or RGB).
std::vector<uint8_t> makeJpeg(const Image &img) {
  jpeg_compress_struct info;
  jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  unsigned char *buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = JDIMENSION(img.width);
  info.image_height = JDIMENSION(img.height);
  info.input_components = img.channels;
  info.in_color_space = img.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 100, TRUE);
  jpeg_start_compress(&info, TRUE);
  const size_t stride = size_t(img.width) * size_t(img.channels);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row =
        const_cast<uint8_t *>(img.pixels.data()) + info.next_scanline * stride;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::vector<uint8_t> bytes(buffer, buffer + size);
  std::free(buffer);
  return bytes;
}

Image gray(int width, int height, std::vector<uint8_t> pixels) {
  Image img;
  img.width = width;
  img.height = height;
  img.channels = 1;
  img.pixels = std::move(pixels);
  return img;
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            std::streamsize(bytes.size()));
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

TEST(ImageDecode, PngGrayAndRgbComeOutAsStored) {
  Image g = gray(3, 2, {0, 10, 20, 250, 128, 7});
  std::vector<uint8_t> bytes = makePng(g);
  Image out = image::decodeImage(bytes.data(), bytes.size(), "g.png");
  EXPECT_EQ(out.width, 3);
  EXPECT_EQ(out.height, 2);
  EXPECT_EQ(out.channels, 1);
  EXPECT_EQ(out.pixels, g.pixels);
  Image rgb = g;
  rgb.width = 2;
  rgb.channels = 3;
  rgb.height = 1;
  bytes = makePng(rgb);
  out = image::decodeImage(bytes.data(), bytes.size(), "rgb.png");
  EXPECT_EQ(out.channels, 3);
  EXPECT_EQ(out.pixels, rgb.pixels);
}

TEST(ImageDecode, JpegOfFlatBlocksIsExact) {
  // Two 8x8 blocks, 40 and 200: quality 100 keeps a flat block's DC exactly.
  std::vector<uint8_t> pixels(16 * 8);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 16; ++x)
      pixels[size_t(y * 16 + x)] = x < 8 ? 40 : 200;
  std::vector<uint8_t> bytes = makeJpeg(gray(16, 8, pixels));
  Image out = image::decodeImage(bytes.data(), bytes.size(), "flat.jpg");
  EXPECT_EQ(out.channels, 1);
  EXPECT_EQ(out.pixels, pixels);
}

TEST(ImageDecode, TruncatedAndForeignFilesAreRefusedByName) {
  std::vector<uint8_t> jpeg =
      makeJpeg(gray(16, 16, std::vector<uint8_t>(256, 9)));
  jpeg.resize(jpeg.size() / 2);
  EXPECT_NE(errorOf([&] {
              image::decodeImage(jpeg.data(), jpeg.size(), "cut.jpg");
            }).find("cut.jpg: corrupt or truncated JPEG"),
            std::string::npos);
  std::vector<uint8_t> png = makePng(gray(4, 4, std::vector<uint8_t>(16, 1)));
  png.resize(png.size() - 20);
  EXPECT_NE(errorOf([&] {
              image::decodeImage(png.data(), png.size(), "cut.png");
            }).find("cut.png: corrupt or truncated PNG"),
            std::string::npos);
  std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_EQ(
      errorOf([&] { image::decodeImage(text.data(), text.size(), "a.jpg"); }),
      "a.jpg: not a JPEG or PNG image");
}

//===----------------------------------------------------------------------===//
// Transforms
//===----------------------------------------------------------------------===//

TEST(ImageTransforms, BilinearDownscaleAveragesAsPil) {
  // 4 -> 2: weights 3/7, 3/7, 1/7 around centers 1 and 3 (Resample.c's
  // triangle widened by 2), in 22-bit fixed point.
  Image out = image::resizeBilinear(gray(4, 1, {0, 70, 140, 210}), 1, 2);
  EXPECT_EQ(out.pixels, (std::vector<uint8_t>{50, 160}));
  // Both axes: the same weights down the columns after the rows.
  Image square = gray(
      4, 4,
      {0, 70, 140, 210, 0, 70, 140, 210, 0, 70, 140, 210, 0, 70, 140, 210});
  EXPECT_EQ(image::resizeBilinear(square, 2, 2).pixels,
            (std::vector<uint8_t>{50, 160, 50, 160}));
}

TEST(ImageTransforms, BilinearUpscaleInterpolates) {
  // 2 -> 4: centers 0.25, 0.75, 1.25, 1.75; the edges clamp.
  Image out = image::resizeBilinear(gray(2, 1, {0, 100}), 1, 4);
  EXPECT_EQ(out.pixels, (std::vector<uint8_t>{0, 25, 75, 100}));
  Image column = image::resizeBilinear(gray(1, 2, {0, 100}), 4, 1);
  EXPECT_EQ(column.pixels, (std::vector<uint8_t>{0, 25, 75, 100}));
}

TEST(ImageTransforms, CropPadsWithZerosAndFlipMirrors) {
  Image img = gray(3, 2, {1, 2, 3, 4, 5, 6});
  Image c = image::crop(img, {-1, 1, 3, 3});
  EXPECT_EQ(c.pixels, (std::vector<uint8_t>{0, 0, 0, 2, 3, 0, 5, 6, 0}));
  image::flipHorizontal(img);
  EXPECT_EQ(img.pixels, (std::vector<uint8_t>{3, 2, 1, 6, 5, 4}));
}

TEST(ImageTransforms, ChannelsAsPilConverts) {
  Image rgb;
  rgb.width = 3;
  rgb.height = 1;
  rgb.channels = 3;
  rgb.pixels = {255, 0, 0, 0, 255, 0, 0, 0, 255};
  // convert('L'): (19595 R + 38470 G + 7471 B + 32768) >> 16.
  EXPECT_EQ(image::convertChannels(rgb, 1).pixels,
            (std::vector<uint8_t>{76, 150, 29}));
  EXPECT_EQ(image::convertChannels(gray(2, 1, {7, 9}), 3).pixels,
            (std::vector<uint8_t>{7, 7, 7, 9, 9, 9}));
}

TEST(ImageTransforms, RandomResizedCropFitsAndFallsBack) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    detail::SplitMix64 random(seed);
    image::CropBox b = image::randomResizedCrop(30, 50, random);
    EXPECT_GE(b.top, 0);
    EXPECT_GE(b.left, 0);
    EXPECT_LE(b.top + b.height, 30);
    EXPECT_LE(b.left + b.width, 50);
    EXPECT_GE(double(b.height) * b.width, 0.08 * 1500 * 0.5);
  }
  // One row of 100: no box of ratio 3/4..4/3 and 8% of the area fits, so
  // the center crop of ratio 4/3 rounded: 1 x round(1.33) = 1 x 1.
  detail::SplitMix64 random(1);
  image::CropBox b = image::randomResizedCrop(1, 100, random);
  EXPECT_EQ(b.top, 0);
  EXPECT_EQ(b.left, 49);
  EXPECT_EQ(b.height, 1);
  EXPECT_EQ(b.width, 1);
}

TEST(ImageTransforms, CenterCropRoundsHalvesToEven) {
  EXPECT_EQ(image::centerCrop(5, 5, 2, 2).top, 2);   // round(1.5)
  EXPECT_EQ(image::centerCrop(7, 7, 2, 2).top, 2);   // round(2.5)
  EXPECT_EQ(image::centerCrop(4, 4, 7, 7).left, -2); // round(-1.5)
  EXPECT_EQ(image::shorterSideTo(30, 20, 10), (std::pair<int, int>{15, 10}));
  EXPECT_EQ(image::shorterSideTo(20, 31, 10), (std::pair<int, int>{10, 15}));
}

//===----------------------------------------------------------------------===//
// The folder
//===----------------------------------------------------------------------===//

TEST(ImageFolder, ParsesItsSpec) {
  DataSpec spec = parseDataSpec(
      "imagefolder:/d,resize=72,mean=0.1/0.2/0.3,std=1/2/3,augment=none");
  EXPECT_EQ(spec.kind, "imagefolder");
  EXPECT_EQ(spec.imageDir, "/d");
  EXPECT_EQ(spec.imageResize, 72);
  EXPECT_EQ(spec.npyMean, (std::vector<double>{0.1, 0.2, 0.3}));
  EXPECT_EQ(spec.npyStd, (std::vector<double>{1, 2, 3}));
  EXPECT_FALSE(spec.imageAugment);
  EXPECT_TRUE(parseDataSpec("imagefolder:/d").imageAugment);
  for (const char *bad :
       {"imagefolder:", "imagefolder:/d,resize=0", "imagefolder:/d,mean=1",
        "imagefolder:/d,std=0,mean=0", "imagefolder:/d,crop=3"})
    EXPECT_NE(errorOf([&] {
                parseDataSpec(bad);
              }).find("expected imagefolder:DIR[,resize=N]"),
              std::string::npos)
        << bad;
}

ModelDataShape imageModel(int64_t channels, int64_t height, int64_t width) {
  ModelDataShape model;
  model.sampleShape = {channels, height, width};
  model.numClasses = 3;
  model.inputs.push_back({"x", model.sampleShape, false});
  return model;
}

/// DIR/b_dog/{1,0}.png and DIR/a_cat/x.jpg, 2x2 gray, pixel value v.
void writeFolder(const std::string &dir) {
  ::mkdir(dir.c_str(), 0777);
  ::mkdir((dir + "/b_dog").c_str(), 0777);
  ::mkdir((dir + "/a_cat").c_str(), 0777);
  writeBytes(dir + "/b_dog/1.png", makePng(gray(2, 2, {10, 20, 30, 40})));
  writeBytes(dir + "/b_dog/0.png", makePng(gray(2, 2, {50, 60, 70, 80})));
  writeBytes(dir + "/a_cat/x.png", makePng(gray(2, 2, {0, 0, 255, 255})));
}

TEST(ImageFolder, ListsClassesAndFilesSortedAndGathersPixels) {
  test::TempDir tmp;
  writeFolder(tmp.path);
  Dataset data = loadDataset(parseDataSpec("imagefolder:" + tmp.path +
                                           ",augment=none,mean=0.5,std=0.5"),
                             Split::Train, imageModel(1, 2, 2));
  ASSERT_EQ(data.size(), 3);
  EXPECT_EQ(data.label(0), 0);
  EXPECT_EQ(data.label(1), 1);
  EXPECT_EQ(data.label(2), 1);
  EXPECT_TRUE(data.decodesInputs());
  std::vector<float> out(8);
  data.gatherInputs({2, 0}, out.data(), 5);
  // b_dog/1.png, then a_cat/x.png; (x / 255 - 0.5) / 0.5.
  std::vector<float> expected;
  for (int v : {10, 20, 30, 40, 0, 0, 255, 255})
    expected.push_back((float(v) / 255 - 0.5f) / 0.5f);
  EXPECT_EQ(out, expected);
  EXPECT_NE(data.describeSample(2, 0).find("b_dog/1.png: sample 2: test 2x2"),
            std::string::npos);
}

TEST(ImageFolder, AugmentationDependsOnSeedEpochAndSampleOnly) {
  test::TempDir tmp;
  writeFolder(tmp.path);
  DataSpec spec = parseDataSpec("imagefolder:" + tmp.path);
  Dataset a = loadDataset(spec, Split::Train, imageModel(3, 8, 8), 7);
  Dataset b = loadDataset(spec, Split::Train, imageModel(3, 8, 8), 7);
  std::vector<float> x(3 * 64), y(3 * 64), z(3 * 2 * 64);
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    a.gatherInputs({1}, x.data(), epoch);
    b.gatherInputs({0, 1}, z.data(), epoch);
    EXPECT_EQ(std::vector<float>(z.begin() + 3 * 64, z.end()), x);
    EXPECT_EQ(a.describeSample(1, epoch), b.describeSample(1, epoch));
  }
  // Over epochs the crops differ.
  EXPECT_NE(a.describeSample(1, 0), a.describeSample(1, 1));
}

TEST(ImageFolder, SplitsByTrainAndValFolders) {
  test::TempDir tmp;
  writeFolder(tmp.path + "/train");
  ::mkdir((tmp.path + "/val").c_str(), 0777);
  ::mkdir((tmp.path + "/val/z").c_str(), 0777);
  writeBytes(tmp.path + "/val/z/a.png", makePng(gray(2, 2, {1, 2, 3, 4})));
  DataSpec spec = parseDataSpec("imagefolder:" + tmp.path);
  EXPECT_EQ(loadDataset(spec, Split::Train, imageModel(1, 2, 2)).size(), 3);
  EXPECT_EQ(loadDataset(spec, Split::Test, imageModel(1, 2, 2)).size(), 1);
}

TEST(ImageFolder, LabelsOnlyOpensNoImage) {
  test::TempDir tmp;
  writeFolder(tmp.path);
  // Not an image, but a rank that reads only labels never opens it.
  writeBytes(tmp.path + "/b_dog/2.png", {'n', 'o'});
  Dataset data = loadDataset(parseDataSpec("imagefolder:" + tmp.path),
                             Split::Train, imageModel(1, 2, 2), 0, false);
  EXPECT_FALSE(data.hasInputs());
  EXPECT_EQ(data.size(), 4);
  EXPECT_EQ(data.label(3), 1);
}

// The listing is all a rank holds of a folder of millions of images, so it
// must be small: names as ImageNet's (n01440764/n01440764_10026.JPEG), the
// heap the loaded data set holds (glibc's count of allocated bytes), per
// image. A std::string a path took 92 bytes an image here.
TEST(ImageFolder, TheListingCostsFewBytesAnImage) {
  test::TempDir tmp;
  constexpr int kClasses = 3, kPerClass = 1000;
  for (int c = 0; c < kClasses; ++c) {
    char name[32];
    std::snprintf(name, sizeof name, "n0144076%d", c);
    const std::string dir = tmp.path + "/" + name;
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    for (int i = 0; i < kPerClass; ++i) {
      char file[64];
      std::snprintf(file, sizeof file, "/%s_%05d.JPEG", name, 10000 + i);
      writeBytes(dir + file, {0xff, 0xd8, 0xff});
    }
  }
  const DataSpec spec = parseDataSpec("imagefolder:" + tmp.path);
  const size_t before = ::mallinfo2().uordblks;
  Dataset data = loadDataset(spec, Split::Train, imageModel(1, 2, 2));
  const double perImage =
      double(::mallinfo2().uordblks - before) / (kClasses * kPerClass);
  ASSERT_EQ(data.size(), kClasses * kPerClass);
  EXPECT_EQ(data.label(kPerClass), 1);
  EXPECT_LT(perImage, 48) << perImage << " bytes an image";
}

TEST(ImageFolder, BadFoldersStopNamingTheFile) {
  test::TempDir tmp;
  auto load = [&](const std::string &dir) {
    return errorOf([&] {
      loadDataset(parseDataSpec("imagefolder:" + dir), Split::Train,
                  imageModel(1, 2, 2));
    });
  };
  EXPECT_EQ(load(tmp.file("none")),
            tmp.file("none") + ": no such folder, for imagefolder:");
  writeFolder(tmp.file("empty"));
  ::mkdir(tmp.file("empty/c_owl").c_str(), 0777);
  EXPECT_EQ(load(tmp.file("empty")),
            tmp.file("empty/c_owl") + ": an empty class folder (no images)");
  writeFolder(tmp.file("text"));
  writeBytes(tmp.file("text/b_dog/notes.txt"), {'x'});
  EXPECT_EQ(load(tmp.file("text")),
            tmp.file("text/b_dog/notes.txt") +
                ": sample 3: not a JPEG or PNG image (.jpg, .jpeg or .png)");
  writeFolder(tmp.file("fake"));
  writeBytes(tmp.file("fake/a_cat/y.jpg"), {'x'});
  EXPECT_EQ(load(tmp.file("fake")), tmp.file("fake/a_cat/y.jpg") +
                                        ": sample 1: not a JPEG or PNG image");
  EXPECT_NE(errorOf([&] {
              loadDataset(parseDataSpec("imagefolder:" + tmp.file("fake")),
                          Split::Train, imageModel(2, 2, 2));
            }).find("needs a model reading float images"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// The loader threads
//===----------------------------------------------------------------------===//

TEST(InputLoader, GivesWhatASynchronousGatherGives) {
  test::TempDir tmp;
  writeFolder(tmp.path);
  Dataset data = loadDataset(parseDataSpec("imagefolder:" + tmp.path),
                             Split::Train, imageModel(3, 6, 5), 3);
  // Microbatch seq holds samples {seq % 3, (seq + 1) % 3}, epoch seq / 4.
  auto plan = [](int64_t seq) {
    return InputLoader::Batch{{seq % 3, (seq + 1) % 3}, seq / 4};
  };
  const size_t n = size_t(2 * data.sampleElements());
  for (int threads : {1, 3}) {
    InputLoader loader(data, threads, 3, plan);
    // In order, then a jump back (a resume) and on.
    for (int64_t seq : {0, 1, 2, 3, 4, 5, 6, 7, 2, 3, 9}) {
      std::vector<float> got(n), want(n);
      loader.take(seq, got.data());
      InputLoader::Batch batch = plan(seq);
      data.gatherInputs(batch.indices, want.data(), batch.epoch);
      EXPECT_EQ(got, want) << "seq " << seq << ", " << threads << " threads";
    }
  }
}

TEST(InputLoader, ASampleThatFailsStopsTheTake) {
  test::TempDir tmp;
  writeFolder(tmp.path);
  std::vector<uint8_t> cut = makePng(gray(2, 2, {1, 2, 3, 4}));
  cut.resize(cut.size() - 20);
  writeBytes(tmp.path + "/b_dog/1.png", cut);
  Dataset data = loadDataset(parseDataSpec("imagefolder:" + tmp.path),
                             Split::Train, imageModel(1, 2, 2));
  InputLoader loader(
      data, 2, 2, [](int64_t seq) { return InputLoader::Batch{{seq % 3}, 0}; });
  std::vector<float> out(4);
  loader.take(0, out.data());
  loader.take(1, out.data());
  EXPECT_NE(errorOf([&] {
              loader.take(2, out.data());
            }).find("b_dog/1.png: sample 2: corrupt or truncated PNG"),
            std::string::npos);
}

} // namespace
} // namespace dpc::runtime
