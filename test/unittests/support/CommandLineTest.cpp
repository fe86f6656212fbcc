//===- CommandLineTest.cpp - Tests of the dpc option parser ---------------===//

#include "dpc/support/CommandLine.h"

#include <gtest/gtest.h>

using dpc::cli::ArgParser;

namespace {

struct Parsed {
  std::string model, out, name = "default";
  int64_t stages = 1;
  double lr = 0.1;
  bool shuffle = true;
};

ArgParser makeParser(Parsed &p) {
  ArgParser parser("dpc test", "a test command", "dpc test MODEL");
  parser.addPositional("MODEL", &p.model, "model");
  parser.addOption("o", &p.out, "DIR", "output");
  parser.addOption("name", &p.name, "NAME", "a name");
  parser.addOption("stages", &p.stages, "N", "stages");
  parser.addOption("lr", &p.lr, "X", "learning rate");
  parser.addFlag("shuffle", &p.shuffle, "shuffle", /*negatable=*/true);
  return parser;
}

TEST(CommandLine, ParsesBothSpellingsAndPositionals) {
  Parsed p;
  ArgParser parser = makeParser(p);
  ASSERT_EQ(parser.parse({"m.onnx", "--stages", "4", "--lr=0.05", "-o", "out",
                          "--no-shuffle"}),
            ArgParser::Result::Ok)
      << parser.error();
  EXPECT_EQ(p.model, "m.onnx");
  EXPECT_EQ(p.stages, 4);
  EXPECT_DOUBLE_EQ(p.lr, 0.05);
  EXPECT_EQ(p.out, "out");
  EXPECT_FALSE(p.shuffle);
  EXPECT_EQ(p.name, "default");
  EXPECT_TRUE(parser.given("stages"));
  EXPECT_FALSE(parser.given("name"));
}

TEST(CommandLine, OneOfTakesAChoiceAndListsThemWhenRefusing) {
  std::string kind = "unset";
  ArgParser parser("dpc test", "a test command", "dpc test");
  parser.addOption("kind", dpc::cli::oneOf(&kind, {"plain", "blocked"}),
                   "plain|blocked", "a kind");
  ASSERT_EQ(parser.parse({"--kind", "blocked"}), ArgParser::Result::Ok)
      << parser.error();
  EXPECT_EQ(kind, "blocked");
  ArgParser again("dpc test", "a test command", "dpc test");
  again.addOption("kind", dpc::cli::oneOf(&kind, {"plain", "blocked"}),
                  "plain|blocked", "a kind");
  EXPECT_EQ(again.parse({"--kind", "nhwc"}), ArgParser::Result::Error);
  EXPECT_EQ(again.error(), "dpc test: option '--kind' expects one of "
                           "blocked|plain, got 'nhwc'");
  EXPECT_EQ(kind, "blocked");
}

TEST(CommandLine, RejectsUnknownOptionWithItsName) {
  Parsed p;
  ArgParser parser = makeParser(p);
  EXPECT_EQ(parser.parse({"m", "--stagez", "2"}), ArgParser::Result::Error);
  EXPECT_EQ(parser.error(), "dpc test: unknown option '--stagez'");
}

TEST(CommandLine, RejectsBadNumbersMissingValuesAndRepeats) {
  {
    Parsed p;
    ArgParser parser = makeParser(p);
    EXPECT_EQ(parser.parse({"m", "--stages", "four"}),
              ArgParser::Result::Error);
    EXPECT_NE(parser.error().find("expects an integer, got 'four'"),
              std::string::npos);
  }
  {
    Parsed p;
    ArgParser parser = makeParser(p);
    EXPECT_EQ(parser.parse({"m", "--lr"}), ArgParser::Result::Error);
    EXPECT_NE(parser.error().find("expects a value"), std::string::npos);
  }
  {
    Parsed p;
    ArgParser parser = makeParser(p);
    EXPECT_EQ(parser.parse({"m", "--lr", "1", "--lr", "2"}),
              ArgParser::Result::Error);
  }
  {
    Parsed p;
    ArgParser parser = makeParser(p);
    EXPECT_EQ(parser.parse({}), ArgParser::Result::Error);
    EXPECT_EQ(parser.error(), "dpc test: missing argument MODEL");
  }
  {
    Parsed p;
    ArgParser parser = makeParser(p);
    EXPECT_EQ(parser.parse({"m", "extra"}), ArgParser::Result::Error);
  }
  {
    // Only flags declared negatable have a --no- spelling.
    Parsed p;
    ArgParser parser = makeParser(p);
    EXPECT_EQ(parser.parse({"m", "--no-lr"}), ArgParser::Result::Error);
  }
}

TEST(CommandLine, HelpListsOptions) {
  Parsed p;
  ArgParser parser = makeParser(p);
  EXPECT_EQ(parser.parse({"--help"}), ArgParser::Result::Help);
  std::string help = parser.help();
  EXPECT_NE(help.find("--stages N"), std::string::npos);
  EXPECT_NE(help.find("--[no-]shuffle"), std::string::npos);
  EXPECT_NE(help.find("Usage: dpc test MODEL"), std::string::npos);
}

TEST(CommandLine, ParsesByteCounts) {
  double bytes = 0;
  EXPECT_TRUE(dpc::cli::parseByteCount("8e9", bytes));
  EXPECT_DOUBLE_EQ(bytes, 8e9);
  EXPECT_TRUE(dpc::cli::parseByteCount("2GiB", bytes));
  EXPECT_DOUBLE_EQ(bytes, 2.0 * 1024 * 1024 * 1024);
  EXPECT_TRUE(dpc::cli::parseByteCount("512MB", bytes));
  EXPECT_DOUBLE_EQ(bytes, 512e6);
  EXPECT_FALSE(dpc::cli::parseByteCount("12 parsecs", bytes));
  EXPECT_FALSE(dpc::cli::parseByteCount("-1", bytes));
  EXPECT_FALSE(dpc::cli::parseByteCount("", bytes));
  // Hex, infinity and overflow are not byte counts.
  EXPECT_FALSE(dpc::cli::parseByteCount("0x10", bytes));
  EXPECT_FALSE(dpc::cli::parseByteCount("0x1p30", bytes));
  EXPECT_FALSE(dpc::cli::parseByteCount("inf", bytes));
  EXPECT_FALSE(dpc::cli::parseByteCount("1e309", bytes));
  EXPECT_FALSE(dpc::cli::parseByteCount("1e300TiB", bytes));
  EXPECT_FALSE(dpc::cli::parseByteCount(" 8e9", bytes));
  EXPECT_TRUE(dpc::cli::parseByteCount("2e3KB", bytes));
  EXPECT_DOUBLE_EQ(bytes, 2e6);
}

TEST(CommandLine, ParsesOnlyDecimalNumbers) {
  double x = 0;
  EXPECT_TRUE(dpc::cli::parseDecimal("0.01", x));
  EXPECT_DOUBLE_EQ(x, 0.01);
  EXPECT_TRUE(dpc::cli::parseDecimal("-1e-3", x));
  EXPECT_DOUBLE_EQ(x, -1e-3);
  EXPECT_TRUE(dpc::cli::parseDecimal(".5", x));
  EXPECT_DOUBLE_EQ(x, 0.5);
  for (const char *bad :
       {"0x10", "0x1p3", "inf", "-infinity", "nan", "1e999", "1e-999", " 1",
        "1 ", "1e", "e5", ".", "", "+", "1,5"})
    EXPECT_FALSE(dpc::cli::parseDecimal(bad, x)) << bad;

  int64_t n = 0;
  EXPECT_TRUE(dpc::cli::parseInteger("-42", n));
  EXPECT_EQ(n, -42);
  EXPECT_TRUE(dpc::cli::parseInteger("9223372036854775807", n));
  for (const char *bad :
       {"0x10", "9223372036854775808", " 4", "4 ", "4.0", "1e3", "", "-"})
    EXPECT_FALSE(dpc::cli::parseInteger(bad, n)) << bad;
}

TEST(CommandLine, NumberOptionsRefuseHexAndInfinity) {
  double lr = 0;
  int64_t stages = 0;
  ArgParser parser("dpc test", "a test command", "dpc test");
  parser.addOption("lr", &lr, "X", "learning rate");
  parser.addOption("stages", &stages, "N", "stages");
  EXPECT_EQ(parser.parse({"--lr", "0x1p-4"}), ArgParser::Result::Error);
  EXPECT_EQ(parser.error(),
            "dpc test: option '--lr' expects a decimal number, got '0x1p-4'");
  ArgParser again("dpc test", "a test command", "dpc test");
  again.addOption("stages", &stages, "N", "stages");
  EXPECT_EQ(again.parse({"--stages", " 2"}), ArgParser::Result::Error);
}

} // namespace

namespace {

TEST(CommandLine, ByteCountOptionsTakeUnitsAndRejectZero) {
  double limit = 0;
  ArgParser parser("dpc test", "a test command", "dpc test");
  parser.addByteCountOption("memory-limit", &limit, "limit");
  ASSERT_EQ(parser.parse({"--memory-limit", "1.5GiB"}), ArgParser::Result::Ok);
  EXPECT_DOUBLE_EQ(limit, 1.5 * 1024 * 1024 * 1024);
  ArgParser zero("dpc test", "a test command", "dpc test");
  zero.addByteCountOption("memory-limit", &limit, "limit");
  EXPECT_EQ(zero.parse({"--memory-limit", "0"}), ArgParser::Result::Error);
  EXPECT_EQ(zero.error(), "dpc test: option '--memory-limit' expects a byte "
                          "count such as 8e9 or 16GiB, got '0'");
}

} // namespace
