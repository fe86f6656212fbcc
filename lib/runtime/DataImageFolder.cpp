//===- DataImageFolder.cpp - A folder of images: imagefolder:DIR ----------===//
//
// `imagefolder:DIR[,resize=N][,mean=M1/..,std=D1/..][,augment=none]`: one
// subfolder of DIR a class, as torchvision's ImageFolder reads it: classes
// are the subfolders' names sorted (class k the k-th), a class's samples
// every file under its folder, walked recursively, sorted by folder and
// then by name. A DIR holding `train` and `val` (or `test`) folders is split by
// them: the train split reads DIR/train, the test split DIR/val (else
// DIR/test); any other DIR is both splits.
//
// Only the listing is held; an image is read and decoded as its sample is
// gathered (ImageDecode.h), then transformed to the model's input [C, H,
// W] (ImageTransforms.h): to C channels first (gray repeated to RGB, RGB to
// PIL's luma), then, for the train split, torchvision's RandomResizedCrop
// (scale 0.08-1, ratio 3/4-4/3) to H x W and a horizontal flip with
// probability 1/2, both drawn from SplitMix64 keyed by (seed, epoch,
// sample), so that any stage split, replica count or resume sees the same
// pixels; for the test split, Resize(N) (the shorter side to N, default
// max(H, W)) and CenterCrop(H, W), which augment=none makes the train
// split's too (data prepared beforehand; exact comparisons). Then ToTensor's x
// / 255 and Normalize's (x - mean[c]) / std[c], in float32 as torch computes
// them.
//
// Checked at load, before training, on a rank that reads inputs: DIR and
// its class folders exist, no class folder is empty, every file is named
// .jpg, .jpeg or .png (any case; hidden files are skipped) and starts
// with a JPEG or PNG signature. A file that fails to decode stops the run
// when its sample is gathered, naming the file and the sample. A rank that
// reads only labels (the last stage) lists the folders and opens nothing.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/Data.h"

#include "DataSources.h"
#include "ImageTransforms.h"
#include "Random.h"
#include "dpc/runtime/Error.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

namespace dpc::runtime {

using namespace data_detail;

namespace {

bool isDirectory(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

/// The entries of `dir` but . and .., hidden ones left out; Error naming
/// the folder when it cannot be read.
std::vector<std::string> entries(const std::string &dir) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    throw InputError(dir + ": cannot read the folder: " + errnoText());
  std::vector<std::string> names;
  while (dirent *e = ::readdir(d))
    if (e->d_name[0] != '.')
      names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool hasImageExtension(const std::string &name) {
  size_t dot = name.rfind('.');
  if (dot == std::string::npos)
    return false;
  std::string ext = name.substr(dot + 1);
  for (char &c : ext)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext == "jpg" || ext == "jpeg" || ext == "png";
}

/// Every file under `dir`, as os.walk sorted visits them: folder by folder
/// in the order of their paths, each folder's files by name.
void walk(const std::string &dir,
          std::vector<std::pair<std::string, std::string>> &files) {
  for (const std::string &name : entries(dir)) {
    std::string path = dir + "/" + name;
    if (isDirectory(path))
      walk(path, files);
    else
      files.emplace_back(dir, name);
  }
}

/// The images of a folder, class by class. A rank holds this for millions
/// of images, so an image costs its name below its class folder and 8
/// bytes (where the name ends in one pool), not a std::string of its path
/// (92 bytes an image for ImageNet's names, ImageFolderTest); its class is
/// found from where each class's images start.
struct Listing {
  std::string root;
  std::vector<std::string> classes;
  std::string names;
  std::vector<uint64_t> nameEnds;
  std::vector<int64_t> classStarts; // each class's first image, then size()

  int64_t size() const { return int64_t(nameEnds.size()); }
  int64_t label(int64_t image) const {
    return int64_t(
               std::upper_bound(classStarts.begin(), classStarts.end(), image) -
               classStarts.begin()) -
           1;
  }
  std::string path(int64_t image) const {
    const size_t begin = image == 0 ? 0 : size_t(nameEnds[size_t(image - 1)]);
    return root + "/" + classes[size_t(label(image))] + "/" +
           names.substr(begin, size_t(nameEnds[size_t(image)]) - begin);
  }
};

Listing listFolder(const std::string &dir) {
  if (!isDirectory(dir))
    throw InputError(dir + ": no such folder, for imagefolder:");
  Listing listing;
  listing.root = dir;
  for (const std::string &name : entries(dir))
    if (isDirectory(dir + "/" + name))
      listing.classes.push_back(name);
  if (listing.classes.empty())
    throw InputError(dir + ": no class folders (imagefolder: reads one "
                           "subfolder of images a class)");
  for (size_t k = 0; k < listing.classes.size(); ++k) {
    std::string classDir = dir + "/" + listing.classes[k];
    std::vector<std::pair<std::string, std::string>> files;
    walk(classDir, files);
    std::sort(files.begin(), files.end());
    if (files.empty())
      throw InputError(classDir + ": an empty class folder (no images)");
    listing.classStarts.push_back(listing.size());
    for (const auto &[folder, name] : files) {
      std::string path = folder + "/" + name;
      if (!hasImageExtension(name))
        throw InputError(path + ": sample " + std::to_string(listing.size()) +
                         ": not a JPEG or PNG image (.jpg, .jpeg or .png)");
      listing.names.append(path, classDir.size() + 1, std::string::npos);
      listing.nameEnds.push_back(listing.names.size());
    }
  }
  listing.classStarts.push_back(listing.size());
  listing.names.shrink_to_fit();
  listing.nameEnds.shrink_to_fit();
  return listing;
}

/// The folder a split reads: DIR/train and DIR/val or DIR/test when DIR
/// has them, DIR itself otherwise.
std::string splitFolder(const std::string &dir, Split split) {
  std::string train = dir + "/train";
  std::string test = isDirectory(dir + "/val") ? dir + "/val" : dir + "/test";
  if (!isDirectory(train) || !isDirectory(test))
    return dir;
  return split == Split::Train ? train : test;
}

/// The listing's class labels, one a sample.
class LabelRows : public RowSource {
public:
  explicit LabelRows(std::shared_ptr<const Listing> listing)
      : listing(std::move(listing)) {}
  int64_t rows() const override { return listing->size(); }
  int64_t rowElements() const override { return 1; }
  void readFloats(int64_t, float *) const override {
    throw Error("imagefolder: labels are class ids");
  }
  void readInts(int64_t row, int64_t *out) const override {
    *out = listing->label(row);
  }
  std::string where(int64_t row) const override {
    return listing->path(row) + ": sample " + std::to_string(row);
  }

private:
  std::shared_ptr<const Listing> listing;
};

struct ImageSettings {
  int channels = 0, height = 0, width = 0;
  bool train = true;
  int resize = 0;
  std::vector<float> mean, stddev;
  uint64_t seed = 0;
};

/// The images of a listing, decoded and transformed as they are read.
class ImageRows : public RowSource {
public:
  ImageRows(std::shared_ptr<const Listing> listing, ImageSettings settings)
      : listing(std::move(listing)), s(std::move(settings)) {}
  int64_t rows() const override { return listing->size(); }
  int64_t rowElements() const override {
    return int64_t(s.channels) * s.height * s.width;
  }
  void readFloats(int64_t row, float *out) const override {
    readFloatsAt(row, 0, out);
  }
  void readInts(int64_t, int64_t *) const override {
    throw Error("imagefolder: the inputs are images, not integer ids");
  }
  std::string where(int64_t row) const override {
    return listing->path(row) + ": sample " + std::to_string(row);
  }
  void readFloatsAt(int64_t row, int64_t epoch, float *out) const override;
  std::string describe(int64_t row, int64_t epoch) const override;
  bool decodes() const override { return true; }

private:
  std::shared_ptr<const Listing> listing;
  ImageSettings s;

  /// The window of a decoded image of `height` x `width` that the sample
  /// takes, and whether it is flipped.
  image::CropBox window(int64_t row, int64_t epoch, int height, int width,
                        bool &flip) const;
  image::Image decode(int64_t row) const;
};

image::CropBox ImageRows::window(int64_t row, int64_t epoch, int height,
                                 int width, bool &flip) const {
  flip = false;
  if (!s.train) {
    int size = s.resize > 0 ? s.resize : std::max(s.height, s.width);
    auto [h, w] = image::shorterSideTo(height, width, size);
    return image::centerCrop(h, w, s.height, s.width);
  }
  detail::SplitMix64 random(detail::mixSeed(
      detail::mixSeed(s.seed ^ 0x696d616765ULL, uint64_t(epoch)),
      uint64_t(row)));
  image::CropBox box = image::randomResizedCrop(height, width, random);
  flip = (random.next() >> 63) != 0;
  return box;
}

image::Image ImageRows::decode(int64_t row) const {
  const std::string path = listing->path(row);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(where(row) + ": cannot open: " + errnoText());
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return image::convertChannels(
      image::decodeImage(bytes.data(), bytes.size(), where(row)), s.channels);
}

void ImageRows::readFloatsAt(int64_t row, int64_t epoch, float *out) const {
  image::Image img = decode(row);
  bool flip = false;
  image::CropBox box = window(row, epoch, img.height, img.width, flip);
  if (s.train) {
    img = image::resizeBilinear(image::crop(img, box), s.height, s.width);
  } else {
    int size = s.resize > 0 ? s.resize : std::max(s.height, s.width);
    auto [h, w] = image::shorterSideTo(img.height, img.width, size);
    img = image::crop(image::resizeBilinear(img, h, w), box);
  }
  if (flip)
    image::flipHorizontal(img);
  // ToTensor: HWC bytes to CHW floats, one correctly rounded division.
  const size_t plane = size_t(s.height) * size_t(s.width);
  for (int c = 0; c < s.channels; ++c) {
    float *channel = out + size_t(c) * plane;
    for (size_t i = 0; i < plane; ++i)
      channel[i] = float(img.pixels[i * size_t(s.channels) + size_t(c)]) / 255;
    if (s.mean.empty())
      continue;
    const float mean = s.mean[s.mean.size() == 1 ? 0 : size_t(c)];
    const float stddev = s.stddev[s.stddev.size() == 1 ? 0 : size_t(c)];
    for (size_t i = 0; i < plane; ++i)
      channel[i] = (channel[i] - mean) / stddev;
  }
}

std::string ImageRows::describe(int64_t row, int64_t epoch) const {
  image::Image img = decode(row);
  bool flip = false;
  image::CropBox box = window(row, epoch, img.height, img.width, flip);
  char text[200];
  std::snprintf(text, sizeof text,
                ": %s %dx%d, crop top=%d left=%d height=%d width=%d flip=%d",
                s.train ? "train" : "test", img.width, img.height, box.top,
                box.left, box.height, box.width, int(flip));
  return where(row) + text;
}

/// The model's input as [C, H, W] with C 1 or 3; InputError otherwise.
ImageSettings settingsFor(const DataSpec &spec, Split split,
                          const ModelDataShape &model, uint64_t seed) {
  const std::vector<int64_t> &shape = model.sampleShape;
  if (shape.size() != 3 || (shape[0] != 1 && shape[0] != 3) ||
      model.integerInputs)
    throw InputError(spec.text +
                     ": imagefolder: needs a model reading float "
                     "images [B, C, H, W] of 1 or 3 channels, "
                     "but this one reads [B, " +
                     shapeText(shape) + "]" +
                     (model.integerInputs ? " integer ids" : ""));
  ImageSettings s;
  s.channels = int(shape[0]);
  s.height = int(shape[1]);
  s.width = int(shape[2]);
  s.train = split == Split::Train && spec.imageAugment;
  s.resize = int(spec.imageResize);
  s.seed = seed;
  if (!spec.npyMean.empty() && spec.npyMean.size() != 1 &&
      spec.npyMean.size() != size_t(s.channels))
    throw InputError(spec.text + ": " + std::to_string(spec.npyMean.size()) +
                     " means and stds for images of " +
                     std::to_string(s.channels) + " channels");
  for (size_t c = 0; c < spec.npyMean.size(); ++c) {
    s.mean.push_back(float(spec.npyMean[c]));
    s.stddev.push_back(float(spec.npyStd[c]));
  }
  return s;
}

/// Every file's first bytes name JPEG or PNG; InputError naming the first
/// that does not.
void checkSignatures(const Listing &listing) {
  for (int64_t i = 0; i < listing.size(); ++i) {
    const std::string path = listing.path(i);
    uint8_t head[8] = {};
    std::FILE *f = std::fopen(path.c_str(), "rb");
    if (!f)
      throw InputError(path + ": sample " + std::to_string(i) +
                       ": cannot open: " + errnoText());
    size_t n = std::fread(head, 1, sizeof head, f);
    std::fclose(f);
    if (image::sniffFormat(head, n) == image::Format::Unknown)
      throw InputError(path + ": sample " + std::to_string(i) +
                       ": not a JPEG or PNG image" +
                       (n == 0 ? " (an empty file)" : ""));
  }
}

} // namespace

static Dataset loadImageFolder(const DataSpec &spec, Split split,
                               const ModelDataShape &model, uint64_t seed,
                               bool readsInputs) {
  ImageSettings settings = model.sampleShape.empty()
                               ? ImageSettings{}
                               : settingsFor(spec, split, model, seed);
  auto listing = std::make_shared<const Listing>(
      listFolder(splitFolder(spec.imageDir, split)));
  const int64_t classes = int64_t(listing->classes.size());
  if (model.numClasses > 0 && classes > model.numClasses)
    throw InputError(spec.imageDir + ": " + std::to_string(classes) +
                     " class folders for a model of " +
                     std::to_string(model.numClasses) + " classes");
  const int64_t numClasses = model.numClasses > 0 ? model.numClasses : classes;
  if (!readsInputs || model.sampleShape.empty()) {
    std::vector<int64_t> labels(size_t(listing->size()));
    for (int64_t c = 0; c < classes; ++c)
      std::fill(labels.begin() + listing->classStarts[size_t(c)],
                labels.begin() + listing->classStarts[size_t(c + 1)], c);
    return Dataset::labelsOnly(model.sampleShape, std::move(labels),
                               numClasses);
  }
  checkSignatures(*listing);
  auto labels = std::make_shared<const LabelRows>(listing);
  auto images = std::make_shared<const ImageRows>(listing, std::move(settings));
  return Dataset::fromRows(model.sampleShape, std::move(images), false,
                           std::move(labels), {}, numClasses, std::nullopt);
}

static void parseImageFolderSpec(const DataSpecParts &cut, DataSpec &spec) {
  const std::vector<std::string> &parts = cut.options;
  const std::string usage = "data spec '" + spec.text +
                            "': expected imagefolder:DIR[,resize=N]"
                            "[,mean=M1/M2/..,std=D1/D2/..][,augment=none]";
  if (parts[0].empty())
    throw Error(usage);
  spec.imageDir = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string &option = parts[i];
    if (option.rfind("resize=", 0) == 0) {
      spec.imageResize = positiveOption(option, 7, usage);
    } else if (option == "augment=none") {
      spec.imageAugment = false;
    } else if (option.rfind("mean=", 0) == 0) {
      spec.npyMean = numberList(option, 5, usage);
    } else if (option.rfind("std=", 0) == 0) {
      spec.npyStd = numberList(option, 4, usage);
      for (double d : spec.npyStd)
        if (d <= 0)
          throw Error(usage + "; std= takes positive numbers, got '" + option +
                      "'");
    } else {
      throw Error(usage + "; unknown option '" + option + "'");
    }
  }
  if (spec.npyMean.size() != spec.npyStd.size())
    throw Error(usage + "; mean= and std= go together, with as many values");
}

DataSourceKind data_detail::dataSourceKindImageFolder() {
  DataSourceKind kind;
  kind.name = "imagefolder";
  kind.prefixes = {"imagefolder"};
  kind.order = 50;
  kind.usage = "imagefolder:DIR";
  kind.help = "imagefolder:DIR[,resize=N][,mean=M1/..,std=D1/..]";
  kind.classLabels = true;
  kind.parse = parseImageFolderSpec;
  kind.load = loadImageFolder;
  return kind;
}

} // namespace dpc::runtime
