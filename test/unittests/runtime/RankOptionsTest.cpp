//===- RankOptionsTest.cpp - Tests of the rank option table ---------------===//

#include "dpc/runtime/RankOptions.h"

#include "dpc/support/CommandLine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

using namespace dpc::runtime;
using dpc::cli::ArgParser;

namespace {

/// Parses `args` as the rank (All) or `dpc run` (Forwarded) would; returns
/// the parser's or the checks' message, "" when accepted.
std::string parse(const std::vector<std::string> &args, RankOptions &options,
                  RankOptionSet set = RankOptionSet::Forwarded) {
  ArgParser parser("test", "rank options", "test [options]");
  addRankOptions(parser, options, set);
  if (parser.parse(args) != ArgParser::Result::Ok)
    return parser.error();
  return finishRankOptions(parser, options, set);
}

std::vector<std::string> words(const std::string &text) {
  std::istringstream in(text);
  std::vector<std::string> result;
  for (std::string word; in >> word;)
    result.push_back(word);
  return result;
}

/// Whether every option of the table has the same value in `a` and `b`.
void expectSameValues(const RankOptions &a, const RankOptions &b) {
  for (const RankOptionInfo &row : rankOptionTable())
    std::visit([&](auto field) { EXPECT_EQ(a.*field, b.*field) << row.name; },
               row.field);
  EXPECT_EQ(a.given, b.given);
}

TEST(RankOptions, DefaultsComeFromTheTable) {
  RankOptions o;
  EXPECT_EQ(o.data, "fashion-mnist:/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(o.transport, "auto");
  EXPECT_EQ(o.microbatching, "dp");
  EXPECT_EQ(o.slowThreshold, 1.5);
  EXPECT_EQ(o.seed, 0);
  EXPECT_TRUE(o.shuffle);
  EXPECT_TRUE(o.eval);
  EXPECT_FALSE(o.resume);
  EXPECT_EQ(o.timeoutSeconds, 0);
  EXPECT_TRUE(o.given.empty());
  EXPECT_TRUE(rankOptionArgs(o, RankOptionSet::All).empty());
}

/// Parses `given` as dpc run, writes it back as arguments and parses those
/// as dpc run and as the rank: the same values every time. Returns the
/// arguments.
std::vector<std::string> roundTrip(const std::vector<std::string> &given) {
  RankOptions first;
  EXPECT_EQ(parse(given, first), "");
  std::vector<std::string> args =
      rankOptionArgs(first, RankOptionSet::Forwarded);
  RankOptions forwarded, rank;
  EXPECT_EQ(parse(args, forwarded), "");
  expectSameValues(first, forwarded);
  EXPECT_EQ(parse(args, rank, RankOptionSet::All), "");
  expectSameValues(first, rank);
  EXPECT_EQ(rankOptionArgs(rank, RankOptionSet::All), args);
  return args;
}

// Every forwarded option survives the round trip (a new one must be added
// here, or this fails).
TEST(RankOptions, ForwardedOptionsRoundTrip) {
  std::vector<std::string> args = roundTrip(
      words("--data synthetic:64 --reduce-grace 2.5 "
            "--eval-data npy:x.npy,y.npy --steps 3 "
            "--seed -7 --loader-threads 3 --metrics m.jsonl --trace t.json "
            "--op-times ops.json "
            "--predictions p.npy --checkpoint-dir ckpt --checkpoint-every 2 "
            "--lr-schedule warmup:steps=3+cosine:steps=9,min=1e-5 "
            "--clip-grad-norm 0.75 --tensorboard tb --eval-every 5 --keep-best "
            "--transport mpi "
            "--slow-threshold 2.25 --test-forward-delay "
            "1:20:50.5 --test-exit-after 1:7 --test-hold-after 0:3 "
            "--stop-on-signal --interfere 1:10:2.5 --adapt "
            "--adapt-threshold 1.25 "
            "--adapt-window 8 --adapt-interval 30 --microbatching sorted "
            "--timeout 1234567.891 "
            "--no-shuffle --resume --no-eval --allow-nonfinite-loss"));
  // --epochs excludes --steps.
  std::vector<std::string> epochs =
      roundTrip({"--epochs", "2", "--shuffle", "--eval"});
  EXPECT_EQ(epochs,
            (std::vector<std::string>{"--epochs", "2", "--shuffle", "--eval"}));
  args.insert(args.end(), epochs.begin(), epochs.end());
  for (const RankOptionInfo &row : rankOptionTable()) {
    std::string name = std::string("--") + row.name;
    bool present =
        std::count(args.begin(), args.end(), name) +
        std::count(args.begin(), args.end(), std::string("--no-") + row.name);
    EXPECT_EQ(present, row.forwarded) << name;
  }
  // The timeout keeps all its digits (no %g rounding to 1.23457e+06).
  EXPECT_NE(std::find(args.begin(), args.end(), "1234567.891"), args.end());
}

// The arguments come in the table's order, whatever the command line's,
// and only the options given.
TEST(RankOptions, ArgumentsInTableOrder) {
  RankOptions o;
  ASSERT_EQ(parse({"--resume", "--checkpoint-dir", "c", "--steps", "3",
                   "--shuffle", "--data", "x", "--seed", "0"},
                  o),
            "");
  EXPECT_EQ(rankOptionArgs(o, RankOptionSet::Forwarded),
            (std::vector<std::string>{"--data", "x", "--steps", "3", "--seed",
                                      "0", "--checkpoint-dir", "c", "--shuffle",
                                      "--resume"}));
}

// --summary and --heartbeat are set by dpc run itself: the rank takes them,
// dpc run's command line does not.
TEST(RankOptions, LauncherOptionsAreNotForwarded) {
  RankOptions run;
  EXPECT_EQ(parse({"--summary", "s.json"}, run),
            "test: unknown option '--summary'");
  RankOptions rank;
  ASSERT_EQ(parse({"--heartbeat", "--summary", "s.json", "--steps", "2"}, rank,
                  RankOptionSet::All),
            "");
  EXPECT_EQ(rankOptionArgs(rank, RankOptionSet::Forwarded),
            (std::vector<std::string>{"--steps", "2"}));
  EXPECT_EQ(rankOptionArgs(rank, RankOptionSet::All),
            (std::vector<std::string>{"--steps", "2", "--summary", "s.json",
                                      "--heartbeat"}));
}

TEST(RankOptions, RefusesBadValues) {
  auto problem = [](std::vector<std::string> args) {
    RankOptions o;
    return parse(args, o);
  };
  EXPECT_EQ(problem({"--steps", "0"}),
            "option '--steps' expects a positive integer");
  EXPECT_EQ(problem({"--epochs", "-1"}),
            "option '--epochs' expects a positive integer");
  EXPECT_EQ(problem({"--checkpoint-every", "0"}),
            "option '--checkpoint-every' expects a positive integer");
  EXPECT_EQ(problem({"--steps", "3", "--epochs", "1"}),
            "give --steps or --epochs, not both");
  EXPECT_EQ(problem({"--timeout", "0"}),
            "option '--timeout' expects seconds from 0.001 to 1e7");
  EXPECT_EQ(problem({"--timeout", "0x10"}),
            "test: option '--timeout' expects a decimal number, got '0x10'");
  EXPECT_EQ(problem({"--slow-threshold", "1"}),
            "--slow-threshold expects a ratio above 1");
  EXPECT_EQ(problem({"--test-forward-delay", "1:0:5"}),
            "--test-forward-delay expects RANK:FROM_STEP:MS, not '1:0:5'");
  EXPECT_EQ(problem({"--test-exit-after", "1:0"}),
            "--test-exit-after expects RANK:STEP, not '1:0'");
  EXPECT_EQ(problem({"--test-exit-after", "1:3x"}),
            "--test-exit-after expects RANK:STEP, not '1:3x'");
  EXPECT_EQ(problem({"--lr-schedule", "cosine"}),
            "--lr-schedule: phase 1 ('cosine'): cosine needs steps=T");
  EXPECT_EQ(problem({"--clip-grad-norm", "0"}),
            "--clip-grad-norm expects a positive norm");
  EXPECT_EQ(problem({"--eval-every", "0"}),
            "option '--eval-every' expects a positive integer");
  EXPECT_EQ(problem({"--keep-best", "--eval-every", "5"}),
            "--keep-best needs --eval-every and --checkpoint-dir");
  EXPECT_EQ(problem({"--interfere", "1:5:0"}),
            "--interfere expects RANK:FROM_STEP:SECONDS, not '1:5:0'");
  EXPECT_EQ(problem({"--interfere", "-1:5:2"}),
            "--interfere expects RANK:FROM_STEP:SECONDS, not '-1:5:2'");
  EXPECT_EQ(problem({"--reduce-grace", "-1"}),
            "--reduce-grace expects milliseconds, at least 0");
  EXPECT_EQ(problem({"--resume"}), "--resume needs --checkpoint-dir");
  EXPECT_EQ(problem({"--adapt", "--adapt-threshold", "1"}),
            "--adapt-threshold expects a ratio above 1");
  EXPECT_EQ(problem({"--adapt", "--adapt-window", "0"}),
            "option '--adapt-window' expects a positive integer");
  EXPECT_EQ(problem({"--adapt-interval", "50"}),
            "--adapt-interval applies to --adapt");
  EXPECT_EQ(problem({"--no-resume"}), "test: unknown option '--no-resume'");
  EXPECT_EQ(problem({"--steps", "2", "--timeout", "0.5"}), "");
}

TEST(RankOptions, TrainingOptions) {
  RankOptions none, metrics;
  ASSERT_EQ(parse({"--data", "x", "--predictions", "p.npy"}, none), "");
  EXPECT_EQ(givenTrainingOption(none), "");
  ASSERT_EQ(parse({"--data", "x", "--metrics", "m"}, metrics), "");
  EXPECT_EQ(givenTrainingOption(metrics), "metrics");
}

TEST(RankOptions, HelpShowsDefaults) {
  RankOptions o;
  ArgParser parser("test", "rank options", "test [options]");
  addRankOptions(parser, o, RankOptionSet::All);
  std::string help = parser.help();
  EXPECT_NE(help.find("--[no-]shuffle"), std::string::npos);
  EXPECT_NE(help.find("(default 1.5)"), std::string::npos);
  EXPECT_NE(help.find("--transport T"), std::string::npos);
  EXPECT_NE(help.find("--summary FILE"), std::string::npos);
}

TEST(RankOptions, ForwardDelay) {
  std::optional<ForwardDelay> delay = parseForwardDelay("1:20:50.5");
  ASSERT_TRUE(delay);
  EXPECT_EQ(delay->rank, 1);
  EXPECT_EQ(delay->fromStep, 20);
  EXPECT_EQ(delay->ms, 50.5);
  EXPECT_FALSE(parseForwardDelay("1:20"));
  EXPECT_FALSE(parseForwardDelay("-1:2:3"));
  EXPECT_FALSE(parseForwardDelay("1:2:3x"));
}

} // namespace
