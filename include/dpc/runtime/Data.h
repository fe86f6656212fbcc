//===- Data.h - Training data: IDX, npy, text, tokens, synthetic *- C++ -*-===//
//
// The first stage of a pipeline needs a microbatch's inputs and the last
// stage its labels. Both load the same dataset from the same `--data` spec
// and pick samples with the same Sampler (Sampler.h), so labels never travel
// through the pipeline. Data specs:
//
//   fashion-mnist:DIR, mnist:DIR   IDX files (gzip or not) in DIR: the train
//                                  split reads train-*, the test split t10k-*
//   npy:INPUTS.npy,LABELS.npy      inputs [N,...] of float32, float16,
//                                  float64 or uint8 (images; scale=S
//                                  divides them by S, mean=M1/M2/..
//                                  ,std=D1/D2/.. normalize each channel,
//                                  the first axis of a sample), or token
//                                  ids of int8/16/32/64 or uint16 (uint8
//                                  too for a model reading ids); integer
//                                  labels [N] (a class per sample) or
//                                  [N,...] (a class per position,
//                                  token-level losses). Each file may be a
//                                  glob pattern naming shards, read in
//                                  sorted order as one array. The files
//                                  are memory-mapped: samples are read as
//                                  they are gathered
//   npy:INPUTS.npy,TARGETS.npy     float32 inputs and float32 targets
//                                  [N,...] of the model's output shape,
//                                  for --loss mse (regression)
//   npy:INPUTS.npy                 inputs alone, for what needs no labels
//                                  (predictions of an inference build)
//   npy:A.npy,B.npy,...,LABELS.npy for a model of several inputs (BERT's
//                                  ids, attention mask and token types):
//                                  one array a graph input, in the
//                                  graph's order, then the labels; each is
//                                  checked against its input's dtype
//                                  (integer ids or floats) and
//                                  per-sample shape
//   text:FILE[,stride=N][,vocab=V] a plain-text file as character tokens
//                                  for a model reading token ids [B, T]:
//                                  sample k is the window of T tokens at
//                                  k * stride (default stride T), its
//                                  labels the next token of each position;
//                                  vocab=ascii64 (default; upper-cased ASCII
//                                  32-95 as ids 0-63, any other byte 0, as
//                                  test/e2e/oracle/text.py) or bytes (ids
//                                  0-255); the train split is the first 90%
//                                  of the tokens, the test split the last
//                                  10%, windows never crossing the cut
//   text:FILE,docs=MODE[,vocab=V]  one sample per document of the text
//                                  (fortune: separated by lines "%"; line:
//                                  each non-blank line; blank: paragraphs
//                                  between blank lines): inputs the
//                                  document's first min(n-1, T) tokens,
//                                  labels the tokens one later, padded to T
//                                  (input 0, label the ignore index); the
//                                  test split is the last 10% of documents
//   npy:TOKENS.npy,LABELS.npy,lengths=LENGTHS.npy
//                                  token ids and labels [N, T] with the
//                                  real length of each sample [N], 1..T
//   tokens:FILE[,dtype=uint16|uint32][,seq=N][,stride=S]
//                                  a flat binary file of token ids (as
//                                  nanoGPT's prepare scripts write them;
//                                  default uint16), memory-mapped: sample
//                                  k is the window of T tokens at k * S
//                                  (default S = T), its labels the next
//                                  tokens; T is the model's sequence
//                                  length (seq= must agree); the train
//                                  split is the first 90% of the tokens,
//                                  the test split the last 10%; an id
//                                  outside the model's vocabulary stops
//                                  the run naming the file and sample
//   tokens:FILE,eot=ID[,dtype=..]  one sample per document: the ids
//                                  between two end-of-text ids ID, as
//                                  text docs= (padded to T, variable
//                                  length); the last tenth of the
//                                  documents is the test split
//   imagefolder:DIR[,resize=N][,mean=M1/..,std=D1/..][,augment=none]
//                                  a folder of JPEG and PNG images, one
//                                  subfolder a class (torchvision's
//                                  ImageFolder); DIR/train with DIR/val or
//                                  DIR/test splits it. Decoded as gathered:
//                                  train samples by RandomResizedCrop and a
//                                  horizontal flip keyed by (seed, epoch,
//                                  sample), test samples by a resize of the
//                                  shorter side to N and a center crop
//                                  (augment=none: in training too);
//                                  then /255 and mean=, std= per channel
//                                  (DataImageFolder.cpp)
//   synthetic[:N]                  N seeded random samples shaped like the
//                                  model's input (default 4096 train, 1024
//                                  test); token ids and labels below the
//                                  model's class count
//
// Pixels from IDX files become float32(byte)/255, exactly what PyTorch's
// `tensor.float() / 255` gives, so a run can be compared bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_DATA_H
#define DPC_RUNTIME_DATA_H

#include <any>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dpc::runtime {

/// Reads a whole file, inflating it when it is gzip-compressed (zlib passes
/// uncompressed files through unchanged). Throws Error naming the path.
std::vector<uint8_t> readMaybeGzipFile(const std::string &path);

/// An IDX array of unsigned bytes (the only element type MNIST uses).
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

/// Parses IDX bytes; `expectedRank` (images 3, labels 1) is checked against
/// the magic number. `name` is used in error messages.
IdxArray parseIdx(const std::vector<uint8_t> &bytes, int expectedRank,
                  const std::string &name);
IdxArray readIdxFile(const std::string &path, int expectedRank);

/// A .npy array (format versions 1 to 3, C order, little-endian).
struct NpyArray {
  std::string descr; // numpy dtype string, e.g. "<f4", "<i8"
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

NpyArray parseNpy(const std::vector<uint8_t> &bytes, const std::string &name);
NpyArray readNpyFile(const std::string &path);
/// Writes a version 1.0 .npy file; used by tests and tools that hand data to
/// a run.
void writeNpyFile(const std::string &path, const std::string &descr,
                  const std::vector<int64_t> &shape, const void *data,
                  size_t bytes);

/// Rows of samples read as they are gathered instead of held in memory: the
/// npy: and tokens: sources map their files, so that a rank's resident
/// memory does not grow with the dataset. Row i holds rowElements() values
/// of sample i (its inputs, or its labels), converted from the stored type.
class RowSource {
public:
  virtual ~RowSource() = default;
  virtual int64_t rows() const = 0;
  virtual int64_t rowElements() const = 0;
  /// Row `row` as floats (inputs, float targets).
  virtual void readFloats(int64_t row, float *out) const = 0;
  /// Row `row` as integers (token ids, class labels); a source of floats
  /// throws.
  virtual void readInts(int64_t row, int64_t *out) const = 0;
  /// Where row `row` comes from, for messages: "FILE: sample N".
  virtual std::string where(int64_t row) const = 0;
  /// Row `row` as training epoch `epoch` sees it: rows augmented at random
  /// (image folders) draw from (seed, epoch, row); others ignore the epoch.
  virtual void readFloatsAt(int64_t row, int64_t epoch, float *out) const {
    (void)epoch;
    readFloats(row, out);
  }
  /// What readFloatsAt(row, epoch) reads, for tools and tests: where(),
  /// with the augmentation's parameters where there are some.
  virtual std::string describe(int64_t row, int64_t epoch) const {
    (void)epoch;
    return where(row);
  }
  /// Whether reading a row costs real work (decoding an image), so that a
  /// pool of loader threads should read ahead (Loader.h).
  virtual bool decodes() const { return false; }
  /// The real length of row `row` of a source of variable-length token
  /// sequences (Dataset::fromSequenceRows), which fills the rest of the
  /// row with padding; rowElements() for fixed rows.
  virtual int64_t rowLength(int64_t row) const {
    (void)row;
    return rowElements();
  }
};

/// Samples held in memory, or read from RowSources as they are gathered. IDX
/// pixels stay bytes until gathered, a quarter of the memory of floats,
/// which matters with several ranks on one machine.
class Dataset {
public:
  static Dataset fromBytes(std::vector<int64_t> sampleShape,
                           std::vector<uint8_t> pixels,
                           std::vector<int64_t> labels, int64_t numClasses);
  /// `labelShape` is the shape of one sample's labels: {} for a class per
  /// sample, e.g. {T} for a class per position of a sequence.
  static Dataset fromFloats(std::vector<int64_t> sampleShape,
                            std::vector<float> inputs,
                            std::vector<int64_t> labels, int64_t numClasses,
                            std::vector<int64_t> labelShape = {});
  /// Integer inputs: token ids, which the model's embedding checks.
  static Dataset fromInts(std::vector<int64_t> sampleShape,
                          std::vector<int64_t> inputs,
                          std::vector<int64_t> labels, int64_t numClasses,
                          std::vector<int64_t> labelShape = {});
  /// Float targets (regression, --loss mse) instead of class labels:
  /// `targetShape` is one sample's, the model output's without the batch.
  /// gatherFloatLabels() reads them; label() and gatherLabels() throw.
  static Dataset fromFloatTargets(std::vector<int64_t> sampleShape,
                                  std::vector<float> inputs,
                                  std::vector<float> targets,
                                  std::vector<int64_t> targetShape);
  /// Float inputs computed as they are gathered: element j of sample i is
  /// the (i * sampleElements() + j + 1)-th SplitMix64 unit float after
  /// `stream` (synthetic data), which costs no memory and no time up front.
  static Dataset fromFloatStream(std::vector<int64_t> sampleShape,
                                 uint64_t stream, std::vector<int64_t> labels,
                                 int64_t numClasses,
                                 std::vector<int64_t> labelShape = {});
  /// Labels without inputs, for a rank that reads only labels (the last
  /// stage): gatherInputs() and gatherIntInputs() throw.
  static Dataset labelsOnly(std::vector<int64_t> sampleShape,
                            std::vector<int64_t> labels, int64_t numClasses,
                            std::vector<int64_t> labelShape = {});
  bool hasInputs() const { return withInputs; }
  /// Samples read as they are gathered: inputs (null: labels only) and
  /// labels (null: unlabelled) of the same row count; integer inputs are
  /// token ids. Class labels are checked as they are gathered: outside
  /// [0, numClasses) and not `ignoreIndex`, InputError naming the row.
  /// `floatTargets`: the labels are float targets (--loss mse).
  static Dataset fromRows(std::vector<int64_t> sampleShape,
                          std::shared_ptr<const RowSource> inputs,
                          bool integerInputs,
                          std::shared_ptr<const RowSource> labels,
                          std::vector<int64_t> labelShape, int64_t numClasses,
                          std::optional<int64_t> ignoreIndex,
                          bool floatTargets = false);
  /// Inputs without labels; label() and gatherLabels() then throw.
  static Dataset unlabelled(std::vector<int64_t> sampleShape,
                            std::vector<float> inputs);

  int64_t size() const { return count; }
  bool hasLabels() const { return labelled; }
  /// Shape of one sample, without the batch dimension (e.g. {1, 28, 28}).
  const std::vector<int64_t> &sampleShape() const { return shape; }
  int64_t sampleElements() const { return elements; }
  int64_t numClasses() const { return classes; }
  /// Whether the inputs are integers (token ids) rather than floats.
  bool integerInputs() const { return integer; }
  /// Whether the labels are float targets rather than class ids.
  bool floatLabels() const { return floatTargets; }
  /// The shape of one sample's labels ({} for one class a sample).
  const std::vector<int64_t> &labelShape() const { return labelDims; }
  int64_t labelElements() const { return labelCount; }
  /// The class of a sample that has one label.
  int64_t label(int64_t index) const;

  /// Copies the inputs of `indices`, in order, to `out`, which holds
  /// indices.size() * sampleElements() floats; integer inputs throw.
  /// `epoch` keys the augmentation of an image folder's training split.
  void gatherInputs(const std::vector<int64_t> &indices, float *out,
                    int64_t epoch = 0) const;
  /// Whether gathering the inputs decodes (image folders): a rank then
  /// reads them ahead on loader threads (Loader.h).
  bool decodesInputs() const { return inputRows && inputRows->decodes(); }
  /// Where input sample `index` comes from and, for augmented data, how
  /// epoch `epoch` transforms it (RowSource::describe).
  std::string describeSample(int64_t index, int64_t epoch) const;
  /// The same for integer inputs; float inputs throw.
  void gatherIntInputs(const std::vector<int64_t> &indices, int64_t *out) const;
  /// Copies the labels of `indices`, in order, to `out`, which holds
  /// indices.size() * labelElements() values.
  void gatherLabels(const std::vector<int64_t> &indices, int64_t *out) const;
  /// The same for float targets; class labels throw.
  void gatherFloatLabels(const std::vector<int64_t> &indices, float *out) const;

  /// The further inputs of a model with several (npy:A,B,...,LABELS):
  /// input k (from 1) reads `rows`, samples of `sampleShape`, as integer
  /// ids or floats. The first input is the one the constructors above set.
  void addInput(std::vector<int64_t> sampleShape,
                std::shared_ptr<const RowSource> rows, bool integer);
  /// How many inputs a sample has: 1 plus those addInput added.
  size_t inputCount() const { return 1 + extraInputs.size(); }
  /// Input k's per-sample shape and whether it holds integers.
  const std::vector<int64_t> &inputShape(size_t k) const;
  bool inputInteger(size_t k) const;
  /// Copies input k of `indices`, in order, to `out`: int64 values when
  /// inputInteger(k), floats otherwise (input 0: gatherIntInputs or
  /// gatherInputs).
  void gatherInput(size_t k, const std::vector<int64_t> &indices, void *out,
                   int64_t epoch = 0) const;

  /// Variable-length sequences (text docs=, npy lengths=): every sample is
  /// stored padded to sampleShape()[0] (Lmax), input 0 and label the
  /// model's ignore index past its real length.
  static Dataset fromTokenSequences(int64_t maxLength,
                                    std::vector<int64_t> inputs,
                                    std::vector<int64_t> labels,
                                    std::vector<int64_t> lengths,
                                    int64_t numClasses);
  /// The same from rows read as they are gathered (tokens: eot=): each
  /// row holds maxLength values, padded past its RowSource::rowLength,
  /// which the dataset asks instead of holding the lengths. Labels past a
  /// length are `ignoreIndex`.
  static Dataset fromSequenceRows(int64_t maxLength,
                                  std::shared_ptr<const RowSource> inputs,
                                  std::shared_ptr<const RowSource> labels,
                                  int64_t numClasses, int64_t ignoreIndex);
  bool variableLength() const { return !lengths.empty() || rowLengths; }
  /// The real length of a sample: sampleShape()[0] for fixed-length data.
  int64_t sequenceLength(int64_t index) const;
  /// The first `length` token ids of each of `indices`, as `rows` rows of
  /// `length` (out holds rows * length): rows past indices.size() are all
  /// pad (0). `length` must cover every sample's sequenceLength and not
  /// exceed sampleShape()[0].
  void gatherIntInputsPadded(const std::vector<int64_t> &indices, int64_t rows,
                             int64_t length, int64_t *out) const;
  /// The labels shaped as gatherIntInputsPadded's inputs; positions at or
  /// past a sample's length and rows past indices.size() are `ignore`.
  void gatherLabelsPadded(const std::vector<int64_t> &indices, int64_t rows,
                          int64_t length, int64_t ignore, int64_t *out) const;

private:
  std::vector<int64_t> shape;
  int64_t elements = 0;
  int64_t count = 0;
  bool labelled = true;
  bool withInputs = true;
  int64_t classes = 0;
  std::vector<uint8_t> bytePixels;     // IDX data, scaled by 1/255 on gather
  std::vector<float> floatInputs;      // npy and synthetic data
  std::optional<uint64_t> inputStream; // fromFloatStream
  std::vector<int64_t> intInputs;      // token ids (npy, synthetic)
  bool integer = false;
  std::vector<int64_t> labelDims;
  int64_t labelCount = 1;
  std::vector<int64_t> labels;
  bool floatTargets = false;
  std::vector<float> targets;
  std::vector<int64_t> lengths; // variable-length sequences; empty: fixed
  bool rowLengths = false;      // variable lengths asked of the rows
  std::shared_ptr<const RowSource> inputRows, labelRows; // fromRows
  std::optional<int64_t> ignoreLabel; // fromRows: passes the label check
  struct ExtraInput {
    std::vector<int64_t> shape;
    std::shared_ptr<const RowSource> rows;
    bool integer = false;
  };
  std::vector<ExtraInput> extraInputs; // addInput: inputs 1, 2, ...

  /// Reads the labels of row `index` from labelRows and checks them.
  void readLabelRow(int64_t index, int64_t *out) const;

  /// Throws unless gathering `indices` at `length` is in range.
  void checkPadded(const std::vector<int64_t> &indices, int64_t rows,
                   int64_t length) const;

  /// A dataset of samples of `sampleShape`, before its inputs and labels.
  static Dataset shaped(std::vector<int64_t> sampleShape, int64_t numClasses);
  void checkIndex(int64_t index) const;
  void setLabels(std::vector<int64_t> values, std::vector<int64_t> shape,
                 int64_t inputCount);
  /// Sets the label shape and the sample count from `values` labels.
  void setLabelShape(size_t values, std::vector<int64_t> shape,
                     int64_t inputCount);
};

/// How the text: source maps bytes to token ids.
enum class TextVocab { Ascii64, Bytes };

/// The token ids of a text: ascii64 upper-cases ASCII letters and maps bytes
/// 32-95 to 0-63 and every other byte (newlines included) to 0 (a space);
/// bytes keeps each byte's value.
std::vector<int64_t> textTokens(const std::vector<uint8_t> &bytes,
                                TextVocab vocab);
int64_t textVocabSize(TextVocab vocab);

/// The number of windows of `length` tokens at multiples of `stride` whose
/// next-token labels stay inside `tokens` tokens.
int64_t textWindowCount(int64_t tokens, int64_t length, int64_t stride);

/// How text docs= cuts a text into documents (Windows: no docs=, fixed
/// windows).
enum class TextDocs { Windows, Fortune, Line, Blank };

/// The documents of a text, in file order, as docs= cuts them. Lines end at
/// '\n'; a line of only spaces, tabs and '\r' is blank. Fortune: the lines
/// between lines "%" (or "%\r"), joined by '\n'; line: every non-blank
/// line; blank: maximal runs of non-blank lines, joined by '\n'. Empty
/// documents are left out; the caller drops those of fewer than 2 tokens.
std::vector<std::string> textDocuments(const std::vector<uint8_t> &bytes,
                                       TextDocs mode);

/// One line on a variable-length dataset's lengths for the rank's start-up
/// output: "lengths of N samples: mean 54.9, max 187 of 256, mean/max 0.29;
/// <=32 10%, <=64 ..." with at most `bins` power-of-two bins, the last ending
/// at the longest sample. Fixed-length data: "lengths: all T".
std::string lengthHistogram(const Dataset &data, int bins = 6);

/// A parsed --data spec. `kind` names its row in the table of source kinds
/// (DataKinds.h). A kind keeps its options in a struct of its own, in
/// `options`, as synthetic does; the fields below are the options of the
/// kinds written before the table, which their tests read.
struct DataSpec {
  /// "idx", "npy", "text", "tokens", "imagefolder", "synthetic", ...
  std::string kind;
  std::string text; // the spec as given, for messages
  /// The options of a kind that holds them in its own struct T (defined in
  /// its Data<Kind>.cpp): its parser sets them, its loader reads
  /// optionsAs<T>().
  std::any options;
  template <typename T> const T &optionsAs() const {
    return std::any_cast<const T &>(options);
  }
  std::string format;                 // "fashion-mnist" or "mnist" for Idx
  std::string dir;                    // Idx
  std::string inputsPath, labelsPath; // Npy; no labelsPath: unlabelled
  /// Npy with several inputs (npy:A,B,...,LABELS): the inputs after the
  /// first (inputsPath), in the graph's order.
  std::vector<std::string> moreInputPaths;
  /// Npy by name (npy:NAME=A.npy,...,LABELS.npy): each graph input's array
  /// by the input's name, in the spec's order; loadDataset puts them in the
  /// graph's order as inputsPath and moreInputPaths.
  std::vector<std::pair<std::string, std::string>> namedInputPaths;
  std::string textPath;   // Text
  int64_t textStride = 0; // Text and Tokens; 0: the sequence length
  TextVocab textVocab = TextVocab::Ascii64;
  TextDocs textDocs = TextDocs::Windows; // Text; docs=
  std::string lengthsPath;               // Npy; lengths=, variable length
  double npyScale = 1.0;                 // Npy; scale=: inputs / scale
  std::vector<double> npyMean, npyStd;   // Npy, ImageFolder; mean=, std=
  std::string imageDir;                  // ImageFolder
  int64_t imageResize = 0;               // ImageFolder; resize=, 0: max(H, W)
  bool imageAugment = true; // ImageFolder; augment=none: the test transform
  std::string tokensPath;   // Tokens
  int tokenBytes = 2;       // Tokens; dtype=uint16 or uint32
  int64_t tokensSeq = 0;    // Tokens; seq=, 0: the model's sequence length
  int64_t tokensEot = -1;   // Tokens; eot=, -1: windows, not documents
};

/// Parses a --data / --eval-data spec; throws Error on a malformed one.
DataSpec parseDataSpec(const std::string &text);

enum class Split { Train, Test };

/// What the compiled model expects of its data: the per-sample input shape
/// and type, the shape of a sample's labels and the number of classes. Used
/// to shape synthetic data and to reject a dataset that does not fit the
/// model; an empty sampleShape skips the checks.
struct ModelDataShape {
  std::vector<int64_t> sampleShape;
  int64_t numClasses = 0;
  bool integerInputs = false;
  std::vector<int64_t> labelShape;
  /// A label the loss leaves out (torch's ignore_index), accepted in the
  /// data though outside [0, numClasses).
  std::optional<int64_t> ignoreIndex;
  /// The loss takes float targets of labelShape (--loss mse), not class ids.
  bool floatLabels = false;
  /// One of the graph's data inputs (the manifest's "inputs").
  struct Input {
    std::string name;
    std::vector<int64_t> sampleShape;
    bool integer = false;
  };
  /// Every input in the graph's order; the first is also sampleShape and
  /// integerInputs. Empty: the checks of the inputs are skipped.
  std::vector<Input> inputs;
};

/// Loads the split of the dataset `spec` names. Npy specs name their files
/// directly, so Split only changes the seed of synthetic data, the files of
/// IDX datasets and the part of a text. A text that cannot serve the model
/// (missing, too short, a model without token ids, a vocabulary above its
/// class count) throws InputError.
///
/// `readsInputs` false: the caller gathers only labels, and synthetic data
/// of float inputs and class labels leaves its inputs out (the labels are
/// the same; a skipped draw costs nothing). Other data loads whole.
Dataset loadDataset(const DataSpec &spec, Split split,
                    const ModelDataShape &model, uint64_t seed = 0,
                    bool readsInputs = true);

} // namespace dpc::runtime

#endif // DPC_RUNTIME_DATA_H
