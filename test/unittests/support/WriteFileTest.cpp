//===- WriteFileTest.cpp - Whole-or-nothing output and per-rank names -----===//

#include "dpc/support/WriteFile.h"

#include <gtest/gtest.h>

using dpc::support::perRankPath;

TEST(WriteFile, PerRankPath) {
  EXPECT_EQ(perRankPath("trace.json", 1), "trace.rank1.json");
  EXPECT_EQ(perRankPath("trace", 0), "trace.rank0");
  EXPECT_EQ(perRankPath("out.d/trace", 2), "out.d/trace.rank2");
  EXPECT_EQ(perRankPath("dir/.trace", 3), "dir/.trace.rank3");
  EXPECT_EQ(perRankPath("dir/a.b.json", 4), "dir/a.b.rank4.json");
}
