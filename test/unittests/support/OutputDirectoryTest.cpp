//===- OutputDirectoryTest.cpp - Output that never loses data -------------===//

#include "dpc/support/OutputDirectory.h"
#include "test/unittests/runtime/ErrorOf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace fs = std::filesystem;
using dpc::support::checkOutputTarget;
using dpc::support::kOutputMarker;
using dpc::support::OutputDirectory;

namespace {

// The InputError checkOutputTarget throws for `target`, "(no error)" when it
// may be used.
std::string targetError(const fs::path &target,
                        const std::vector<fs::path> &inputs) {
  return dpc::inputErrorOf([&] { checkOutputTarget(target, inputs); });
}

class OutputDirectoryTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern =
        (fs::temp_directory_path() / "dpc-output-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root = pattern;
  }
  void TearDown() override { fs::remove_all(root); }

  static void write(const fs::path &path, const std::string &text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  static std::string read(const fs::path &path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Writes an output with `files` through OutputDirectory and commits it.
  std::string produce(const fs::path &target,
                      const std::vector<std::string> &files,
                      const std::string &text) {
    return dpc::errorOf([&] {
      OutputDirectory out(target);
      out.open({});
      for (const std::string &file : files)
        write(out.path() / file, text);
      out.commit();
    });
  }
  // The entries directly in `root`, to see that no staging directory stayed.
  std::vector<std::string> rootEntries() const {
    std::vector<std::string> names;
    for (const fs::directory_entry &entry : fs::directory_iterator(root))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path root;
};

TEST_F(OutputDirectoryTest, NewTargetAppearsOnlyOnCommit) {
  fs::path target = root / "out";
  {
    OutputDirectory out(target);
    ASSERT_EQ(dpc::errorOf([&] { out.open({}); }), "");
    write(out.path() / "plan.json", "{}");
    EXPECT_FALSE(fs::exists(target));
    ASSERT_EQ(dpc::errorOf([&] { out.commit(); }), "");
  }
  EXPECT_EQ(read(target / "plan.json"), "{}");
  EXPECT_EQ(read(target / kOutputMarker), "dpc-output 1\nplan.json\n");
  EXPECT_EQ(rootEntries(), std::vector<std::string>{"out"});
}

TEST_F(OutputDirectoryTest, AbandonedOutputLeavesNothing) {
  {
    OutputDirectory out(root / "out");
    ASSERT_EQ(dpc::errorOf([&] { out.open({}); }), "");
    write(out.path() / "mlir" / "00-import.mlir", "module {}");
  }
  EXPECT_TRUE(rootEntries().empty());
}

TEST_F(OutputDirectoryTest, ReplacesItsOwnEarlierOutput) {
  fs::path target = root / "out";
  ASSERT_EQ(produce(target, {"a", "sub/b"}, "old"), "");
  ASSERT_EQ(produce(target, {"c"}, "new"), "");
  EXPECT_EQ(read(target / "c"), "new");
  EXPECT_FALSE(fs::exists(target / "a"));
  EXPECT_FALSE(fs::exists(target / "sub"));
  EXPECT_EQ(rootEntries(), std::vector<std::string>{"out"});
}

TEST_F(OutputDirectoryTest, TrailingSeparatorNamesTheSameTarget) {
  ASSERT_EQ(produce(root / "out/", {"a"}, "x"), "");
  EXPECT_EQ(rootEntries(), std::vector<std::string>{"out"});
}

TEST_F(OutputDirectoryTest, EmptyDirectoryIsReplaced) {
  fs::create_directory(root / "out");
  ASSERT_EQ(produce(root / "out", {"a"}, "x"), "");
  EXPECT_EQ(read(root / "out" / "a"), "x");
}

TEST_F(OutputDirectoryTest, RefusesAUsersDirectory) {
  write(root / "out" / "notes.txt", "mine");
  std::string problem = produce(root / "out", {"a"}, "x");
  EXPECT_NE(problem.find("is not empty and was not written by dpc"),
            std::string::npos)
      << problem;
  EXPECT_EQ(read(root / "out" / "notes.txt"), "mine");
  EXPECT_EQ(rootEntries(), std::vector<std::string>{"out"});
}

TEST_F(OutputDirectoryTest, RefusesAnOutputThatGainedFiles) {
  fs::path target = root / "out";
  ASSERT_EQ(produce(target, {"plan.json"}, "{}"), "");
  write(target / "checkpoints" / "stage0.safetensors", "weights");
  write(target / "checkpoints" / "stage1.safetensors", "weights");
  write(target / "plan.json", "{\"measured\": 1}");
  std::string problem = targetError(target, {});
  EXPECT_NE(problem.find("holds files dpc did not write there (checkpoints)"),
            std::string::npos)
      << problem;
  EXPECT_NE(produce(target, {"x"}, "x"), "");
  EXPECT_EQ(read(target / "checkpoints" / "stage0.safetensors"), "weights");
}

TEST_F(OutputDirectoryTest, RefusesAFileALinkAndAForgedMarker) {
  write(root / "file", "mine");
  EXPECT_NE(targetError(root / "file", {}).find("is not a directory"),
            std::string::npos);
  fs::create_directory(root / "dir");
  fs::create_directory_symlink(root / "dir", root / "link");
  EXPECT_NE(targetError(root / "link", {}).find("symbolic link"),
            std::string::npos);
  write(root / "forged" / kOutputMarker, "something else\n");
  EXPECT_NE(targetError(root / "forged", {}).find("not written by dpc"),
            std::string::npos);
  EXPECT_EQ(read(root / "file"), "mine");
}

TEST_F(OutputDirectoryTest, RefusesATargetHoldingAnInput) {
  fs::path target = root / "out";
  ASSERT_EQ(produce(target, {"model.onnx"}, "model"), "");
  std::string problem = targetError(root / "out", {target / "model.onnx"});
  EXPECT_NE(problem.find("holds the input"), std::string::npos) << problem;
  // The same input named through another spelling of the path.
  problem =
      targetError(root / "out", {root / "out" / ".." / "out" / "model.onnx"});
  EXPECT_NE(problem.find("holds the input"), std::string::npos) << problem;
}

TEST_F(OutputDirectoryTest, RefusesTheWorkingDirectoryAndItsParents) {
  fs::create_directories(root / "work");
  fs::path previous = fs::current_path();
  fs::current_path(root / "work");
  std::string here = targetError(".", {});
  std::string parent = targetError("..", {});
  fs::current_path(previous);
  EXPECT_NE(here.find("contains the working directory"), std::string::npos);
  EXPECT_NE(parent.find("contains the working directory"), std::string::npos);
}

TEST_F(OutputDirectoryTest, RecheckedAtCommit) {
  fs::path target = root / "out";
  OutputDirectory out(target);
  ASSERT_EQ(dpc::errorOf([&] { out.open({}); }), "");
  write(out.path() / "a", "new");
  // Someone else puts a directory of their own there meanwhile.
  write(target / "theirs.txt", "theirs");
  EXPECT_NE(dpc::errorOf([&] { out.commit(); }), "");
  EXPECT_EQ(read(target / "theirs.txt"), "theirs");
}

} // namespace
