// Data of a model with several graph inputs (#43), npy:A.npy,B.npy,...,
// LABELS.npy or by name, npy:NAME=A.npy,...,LABELS.npy: each array is
// gathered as its input, and a missing file, a
// count, dtype, shape or sample-count mismatch is refused as an InputError
// (exit 2) whose one line names the file and the input.

#include "dpc/runtime/Data.h"
#include "dpc/runtime/Error.h"

#include "test/unittests/runtime/ErrorOf.h"
#include "test/unittests/runtime/NpyFile.h"
#include "test/unittests/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

using namespace dpc::runtime;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

namespace {

using dpc::test::TempDir;
using dpc::test::writeNpy;

/// BERT's three inputs of 3 positions: int64 ids, a float mask, int64
/// token types, and a label per position.
ModelDataShape bertModel() {
  ModelDataShape model;
  model.inputs = {
      {"input0", {3}, true}, {"input1", {3}, false}, {"input2", {3}, true}};
  model.sampleShape = {3};
  model.integerInputs = true;
  model.numClasses = 10;
  model.labelShape = {3};
  model.ignoreIndex = -100;
  return model;
}

/// Two samples of each array, written into `dir`.
struct BertFiles {
  explicit BertFiles(const TempDir &dir)
      : ids(dir.file("ids.npy")), mask(dir.file("mask.npy")),
        types(dir.file("types.npy")), labels(dir.file("labels.npy")) {
    writeNpy<int64_t>(ids, "<i8", {2, 3}, {1, 2, 3, 4, 5, 6});
    writeNpy<float>(mask, "<f4", {2, 3}, {1, 1, 0, 1, 0.5f, 0});
    writeNpy<int32_t>(types, "<i4", {2, 3}, {0, 1, 1, 0, 0, 1});
    writeNpy<int64_t>(labels, "<i8", {2, 3}, {-100, 7, -100, 9, -100, -100});
  }
  std::string spec() const {
    return "npy:" + ids + "," + mask + "," + types + "," + labels;
  }
  std::string ids, mask, types, labels;
};

TEST(SeveralInputs, ParsesInputsInOrderThenLabels) {
  DataSpec spec = parseDataSpec("npy:a.npy,b.npy,c.npy,l.npy");
  EXPECT_EQ(spec.inputsPath, "a.npy");
  EXPECT_THAT(spec.moreInputPaths, ElementsAre("b.npy", "c.npy"));
  EXPECT_EQ(spec.labelsPath, "l.npy");
  EXPECT_THAT(inputErrorOf(
                  [] { parseDataSpec("npy:a.npy,b.npy,l.npy,lengths=n.npy"); }),
              HasSubstr("several inputs (npy:A.npy,B.npy,...,LABELS.npy) "
                        "take none of them"));
}

TEST(SeveralInputs, GathersEachArrayAsItsInput) {
  TempDir dir;
  BertFiles files(dir);
  Dataset data =
      loadDataset(parseDataSpec(files.spec()), Split::Train, bertModel());
  ASSERT_EQ(data.inputCount(), 3u);
  EXPECT_TRUE(data.inputInteger(0));
  EXPECT_FALSE(data.inputInteger(1));
  EXPECT_TRUE(data.inputInteger(2));
  std::vector<int64_t> ids(6), types(6), labels(6);
  std::vector<float> mask(6);
  data.gatherInput(0, {1, 0}, ids.data());
  data.gatherInput(1, {1, 0}, mask.data());
  data.gatherInput(2, {1, 0}, types.data());
  data.gatherLabels({1, 0}, labels.data());
  EXPECT_THAT(ids, ElementsAre(4, 5, 6, 1, 2, 3));
  EXPECT_THAT(mask, ElementsAre(1, 0.5f, 0, 1, 1, 0));
  EXPECT_THAT(types, ElementsAre(0, 0, 1, 0, 1, 1));
  EXPECT_THAT(labels, ElementsAre(9, -100, -100, -100, 7, -100));
}

TEST(SeveralInputs, RefusesAMissingFileNamingItsInput) {
  TempDir dir;
  BertFiles files(dir);
  std::string spec = "npy:" + files.ids + "," + dir.file("nope.npy") + "," +
                     files.types + "," + files.labels;
  EXPECT_EQ(inputErrorOf([&] {
              loadDataset(parseDataSpec(spec), Split::Train, bertModel());
            }),
            dir.file("nope.npy") +
                ": no such file, for input 1 (input1: 3 float32) of the "
                "model");
}

TEST(SeveralInputs, RefusesACountMismatchListingTheInputs) {
  TempDir dir;
  BertFiles files(dir);
  std::string two = "npy:" + files.ids + "," + files.mask + "," + files.labels;
  std::string message = inputErrorOf(
      [&] { loadDataset(parseDataSpec(two), Split::Train, bertModel()); });
  EXPECT_THAT(message, HasSubstr(": 2 input arrays for a model of 3 inputs "
                                 "(input 0 (input0: 3 int64 ids), input 1 "
                                 "(input1: 3 float32), input 2 (input2: 3 "
                                 "int64 ids)); give npy:A.npy,B.npy,..."));
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  // One input array for three inputs: the single-input form.
  std::string one = "npy:" + files.ids + "," + files.labels;
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec(one), Split::Train, bertModel());
              }),
              HasSubstr(": 1 input array for a model of 3 inputs"));
}

TEST(SeveralInputs, RefusesAWrongDtype) {
  TempDir dir;
  BertFiles files(dir);
  // int64 ids where the float mask goes.
  writeNpy<int64_t>(files.mask, "<i8", {2, 3}, {1, 1, 0, 1, 1, 0});
  EXPECT_EQ(inputErrorOf([&] {
              loadDataset(parseDataSpec(files.spec()), Split::Train,
                          bertModel());
            }),
            files.mask + ": dtype '<i8' for input 1 (input1: 3 float32), "
                         "which takes floats (float32, float16 or float64)");
  // Floats where the int64 token types go.
  BertFiles again(dir);
  writeNpy<float>(again.types, "<f4", {2, 3}, {0, 1, 1, 0, 0, 1});
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec(again.spec()), Split::Train,
                            bertModel());
              }),
              HasSubstr(again.types + ": dtype '<f4' for input 2 (input2: 3 "
                                      "int64 ids), which takes integer ids"));
}

TEST(SeveralInputs, RefusesAShapeMismatch) {
  TempDir dir;
  BertFiles files(dir);
  writeNpy<float>(files.mask, "<f4", {2, 1, 3}, {1, 1, 0, 1, 1, 0});
  EXPECT_EQ(inputErrorOf([&] {
              loadDataset(parseDataSpec(files.spec()), Split::Train,
                          bertModel());
            }),
            files.mask + ": samples of shape 1x3 for input 1 (input1: 3 "
                         "float32) of the model");
}

TEST(SeveralInputs, RefusesASampleCountMismatch) {
  TempDir dir;
  BertFiles files(dir);
  writeNpy<int64_t>(files.types, "<i8", {1, 3}, {0, 1, 1});
  EXPECT_EQ(inputErrorOf([&] {
              loadDataset(parseDataSpec(files.spec()), Split::Train,
                          bertModel());
            }),
            files.types +
                ": 1 samples for input 2 (input2: 3 int64 ids) but "
                "2 in " +
                files.ids);
}

TEST(SeveralInputs, SyntheticDataIsRefusedForSeveralInputs) {
  EXPECT_THAT(inputErrorOf([] {
                loadDataset(parseDataSpec("synthetic:8"), Split::Train,
                            bertModel());
              }),
              HasSubstr("synthetic:8: the model reads 3 inputs and this data "
                        "gives one a sample"));
}

TEST(SeveralInputs, ParsesInputsByNameThenLabels) {
  DataSpec spec = parseDataSpec("npy:input_ids=a.npy,mask=/d/b.npy,l.npy");
  EXPECT_THAT(spec.namedInputPaths, ElementsAre(Pair("input_ids", "a.npy"),
                                                Pair("mask", "/d/b.npy")));
  EXPECT_EQ(spec.labelsPath, "l.npy");
  // A '/' before the '=' makes it a path.
  DataSpec path = parseDataSpec("npy:/d/a=b.npy,l.npy");
  EXPECT_EQ(path.inputsPath, "/d/a=b.npy");
  EXPECT_TRUE(path.namedInputPaths.empty());
  EXPECT_THAT(inputErrorOf([] { parseDataSpec("npy:a=x.npy,a=y.npy,l.npy"); }),
              HasSubstr("input 'a' is given twice"));
  EXPECT_THAT(inputErrorOf([] { parseDataSpec("npy:a=x.npy,b.npy,l.npy"); }),
              HasSubstr("name every input and give the labels last"));
}

TEST(SeveralInputs, GathersInputsByNameInTheGraphsOrder) {
  TempDir dir;
  BertFiles files(dir);
  std::string spec = "npy:input2=" + files.types + ",input0=" + files.ids +
                     ",input1=" + files.mask + "," + files.labels;
  Dataset data = loadDataset(parseDataSpec(spec), Split::Train, bertModel());
  ASSERT_EQ(data.inputCount(), 3u);
  std::vector<int64_t> ids(6), types(6);
  std::vector<float> mask(6);
  data.gatherInput(0, {1, 0}, ids.data());
  data.gatherInput(1, {1, 0}, mask.data());
  data.gatherInput(2, {1, 0}, types.data());
  EXPECT_THAT(ids, ElementsAre(4, 5, 6, 1, 2, 3));
  EXPECT_THAT(mask, ElementsAre(1, 0.5f, 0, 1, 1, 0));
  EXPECT_THAT(types, ElementsAre(0, 0, 1, 0, 1, 1));
}

TEST(SeveralInputs, RefusesAMissingOrUnknownName) {
  TempDir dir;
  BertFiles files(dir);
  std::string missing =
      "npy:input0=" + files.ids + ",input2=" + files.types + "," + files.labels;
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec(missing), Split::Train, bertModel());
              }),
              HasSubstr(": no array for the model's input 'input1' (its "
                        "inputs: input0, input1, input2)"));
  std::string unknown = "npy:input0=" + files.ids + ",input1=" + files.mask +
                        ",input2=" + files.types + ",extra=" + files.types +
                        "," + files.labels;
  EXPECT_THAT(inputErrorOf([&] {
                loadDataset(parseDataSpec(unknown), Split::Train, bertModel());
              }),
              HasSubstr(": the model has no input 'extra' (its inputs: "
                        "input0, input1, input2)"));
}

} // namespace
