//===- ProfileTest.cpp - graph.txt and profile.json -----------------------===//

#include "dpc/planner/Profile.h"

#include "test/unittests/runtime/ErrorOf.h"

#include <gtest/gtest.h>

using namespace dpc::planner;
using dpc::inputErrorOf;

namespace {

const char *kSmall =
    "node1 -- Input -- forward_compute_time=635.902, "
    "backward_compute_time=0.000, activation_size=100.0, "
    "parameter_size=0.000\n"
    "node2 -- Conv2d(3, 64) -- forward_compute_time=2.5, "
    "backward_compute_time=1.5, activation_size=[6.0; 1.0; 1.0], "
    "parameter_size=10.000\n"
    "node3 -- Attn(a -- b) -- forward_compute_time=1, "
    "backward_compute_time=2, activation_size=5, parameter_size=7\n"
    "\tnode1 -- node2\n"
    "\tnode2 -- node3\n"
    "\tnode1 -- node3\n";

/// The InputError parsePipeDreamProfile throws for `text`, "(no error)" when
/// it throws none.
std::string pipeDreamError(const std::string &text) {
  return inputErrorOf([&] { parsePipeDreamProfile(text, "p.txt"); });
}

TEST(ProfileTest, ParsesPipeDreamNodesAndEdges) {
  Graph g = parsePipeDreamProfile(kSmall, "small.txt");
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g.numEdges(), 3u);
  NodeId n1 = *g.find("node1"), n2 = *g.find("node2"), n3 = *g.find("node3");
  EXPECT_TRUE(g.node(n1).isInput);
  EXPECT_DOUBLE_EQ(g.computeSeconds(n1), 0.0); // inputs are free
  EXPECT_DOUBLE_EQ(g.activationBytes(n1), 0.0);
  EXPECT_DOUBLE_EQ(g.node(n2).activationBytes, 8.0); // bracketed list summed
  EXPECT_DOUBLE_EQ(g.computeSeconds(n2), 0.004);
  EXPECT_DOUBLE_EQ(g.parameterBytes(n2), 10.0);
  // The description may contain the separator.
  EXPECT_EQ(g.node(n3).description, "Attn(a -- b)");
  EXPECT_EQ(g.successors(n1).size(), 2u);
}

TEST(ProfileTest, MalformedLinesNameTheLine) {
  std::string text = kSmall;
  text.insert(text.find("\tnode1"), "node4 -- Relu -- forward_compute_time=x, "
                                    "backward_compute_time=0, "
                                    "activation_size=0, parameter_size=0\n");
  EXPECT_EQ(pipeDreamError(text),
            "p.txt:4: bad value 'x' for forward_compute_time "
            "(expected a decimal number from 0 to 1e18, or a "
            "[a; b] list of them)");

  // Hex, infinity and values past 1e18 are refused: they would be nonsense
  // or overflow the cost model's sums.
  for (const char *bad : {"0x10", "inf", "nan", "1e19", "-1", "1e999"}) {
    std::string line = std::string("node1 -- R -- forward_compute_time=") +
                       bad +
                       ", backward_compute_time=1, activation_size=[1; 2], "
                       "parameter_size=1\n";
    std::string message = pipeDreamError(line);
    EXPECT_EQ(message.rfind(std::string("p.txt:1: bad value '") + bad, 0), 0u)
        << bad << ": " << message;
  }

  EXPECT_NE(
      pipeDreamError("node1 -- Relu\n").find("p.txt:1: malformed node line"),
      std::string::npos);

  EXPECT_EQ(pipeDreamError("node1 -- R -- forward_compute_time=1, "
                           "backward_compute_time=1, activation_size=1\n"),
            "p.txt:1: node 'node1' has no parameter_size");

  EXPECT_EQ(pipeDreamError(std::string(kSmall) + "\tnode3 -- node9\n"),
            "p.txt:7: edge to unknown node 'node9'");

  EXPECT_NE(pipeDreamError(std::string(kSmall) + "\tnode3\n")
                .find("p.txt:7: malformed edge line"),
            std::string::npos);

  EXPECT_EQ(pipeDreamError(""), "p.txt: profile has no nodes");
}

// Found by fuzz-profile: a byte that is not UTF-8 in a description made
// plan.json's serialisation throw, and dpc plan abort.
TEST(ProfileTest, RefusesTextThatIsNotUtf8) {
  for (const char *bytes :
       {"\xff", "\xc0\x80", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80"}) {
    EXPECT_EQ(
        pipeDreamError(std::string("node1 -- Relu") + bytes +
                       " -- forward_compute_time=1, backward_compute_time=1, "
                       "activation_size=1, parameter_size=1\n"),
        "p.txt:1: not UTF-8 text");
  }
  EXPECT_EQ(pipeDreamError("node1 -- Conv 3\xc3\x97"
                           "3 \xe2\x86\x92 \xf0\x9f\x98\x80 -- "
                           "forward_compute_time=1, backward_compute_time=1, "
                           "activation_size=1, parameter_size=1\n"),
            "(no error)");
}

TEST(ProfileTest, CycleIsReported) {
  Graph g = parsePipeDreamProfile(std::string(kSmall) + "\tnode3 -- node2\n",
                                  "p.txt");
  EXPECT_EQ(inputErrorOf([&] { g.topologicalOrder(); }),
            "graph has a cycle: node2 -> node3 -> node2");
}

TEST(ProfileTest, JsonRoundTrip) {
  Graph g = parsePipeDreamProfile(kSmall, "small.txt");
  std::string json = writeJsonProfile(g);
  Graph back = parseJsonProfile(json, "small.json");
  ASSERT_EQ(back.size(), g.size());
  EXPECT_EQ(back.numEdges(), g.numEdges());
  for (NodeId v = 0; v < g.size(); ++v) {
    const Node &a = g.node(v), &b = back.node(v);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.description, b.description);
    EXPECT_EQ(a.forwardMs, b.forwardMs);
    EXPECT_EQ(a.backwardMs, b.backwardMs);
    EXPECT_EQ(a.activationBytes, b.activationBytes);
    EXPECT_EQ(a.parameterBytes, b.parameterBytes);
    EXPECT_EQ(a.isInput, b.isInput);
    EXPECT_EQ(g.successors(v), back.successors(v));
  }
}

TEST(ProfileTest, JsonErrors) {
  auto error = [](const std::string &text) {
    return inputErrorOf([&] { parseJsonProfile(text, "p.json"); });
  };
  EXPECT_EQ(error("{"), "p.json: not valid JSON");
  EXPECT_EQ(error("{\"nodes\": 3}"),
            "p.json: expected an object with a \"nodes\" array");
  EXPECT_EQ(error("{\"nodes\": [{\"name\": \"a\", \"forward_ms\": -1}]}"),
            "p.json: nodes[0] ('a') has a bad \"forward_ms\" (expected a "
            "number from 0 to 1e18)");
  EXPECT_EQ(error("{\"nodes\": [{\"name\": \"a\", \"forward_ms\": 1e300}]}"),
            "p.json: nodes[0] ('a') has a bad \"forward_ms\" (expected a "
            "number from 0 to 1e18)");
  EXPECT_EQ(error("{\"nodes\": [{\"name\": \"a\"}], \"edges\": [[\"a\", "
                  "\"b\"]]}"),
            "p.json: edges[0] names unknown node 'b'");
  EXPECT_EQ(error("{\"nodes\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}"),
            "p.json: nodes[1] ('a') is defined twice");
  EXPECT_EQ(error("{\"nodes\": [{\"name\": \"a\"}]}"), "(no error)");
}

TEST(ProfileTest, SharedProfilesParse) {
  for (const char *name :
       {"alexnet", "vgg16", "resnet18", "resnet50", "gnmt"}) {
    Graph g = loadProfile(std::string(DPC_PROFILES_DIR) + "/" + name + ".txt");
    EXPECT_GT(g.size(), 10u) << name;
    EXPECT_NO_THROW(g.topologicalOrder()) << name;
  }
}

// A profile of a token model measured at several shapes keeps every shape's
// node times through writeJsonProfile and parseProfileShapes.
TEST(ProfileShapesTest, RoundTrip) {
  Graph graph;
  graph.addNode({"attn", "", 2.0, 4.0, 0, 0, false});
  std::vector<MeasuredShape> shapes = {
      {4, 64, {{"attn", {2.0, 4.0}}, {"fc", {0.5, 1.25}}}},
      {8, 16, {{"attn", {0.25, 0.5}}}},
  };
  std::string text = writeJsonProfile(graph, {shapes});
  std::vector<MeasuredShape> back = parseProfileShapes(text, "p.json");
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_EQ(back[i].batch, shapes[i].batch);
    EXPECT_EQ(back[i].length, shapes[i].length);
    ASSERT_EQ(back[i].nodes.size(), shapes[i].nodes.size());
    for (const auto &[name, t] : shapes[i].nodes) {
      EXPECT_EQ(back[i].nodes.at(name).forwardMs, t.forwardMs);
      EXPECT_EQ(back[i].nodes.at(name).backwardMs, t.backwardMs);
    }
  }
  // The graph still reads as before; a profile without shapes has none.
  EXPECT_NO_THROW(parseJsonProfile(text, "p.json"));
  EXPECT_TRUE(parseProfileShapes(writeJsonProfile(graph), "p.json").empty());
  EXPECT_TRUE(parseProfileShapes("node1 -- a -- forward_compute_time=1.0, "
                                 "backward_compute_time=1.0, "
                                 "activation_size=1.0, parameter_size=0.0",
                                 "graph.txt")
                  .empty());
}

TEST(ProfileShapesTest, ErrorsNameTheShapeAndNode) {
  auto error = [](const std::string &shapes) {
    return inputErrorOf([&] {
      parseProfileShapes(
          "{\"nodes\": [{\"name\": \"a\"}], \"shapes\": " + shapes + "}",
          "p.json");
    });
  };
  EXPECT_EQ(error("{}"), "p.json: \"shapes\" must be an array");
  EXPECT_EQ(error("[{\"batch\": 0, \"length\": 8, \"nodes\": []}]"),
            "p.json: shapes[0] has no \"batch\" (expected an integer from 1 "
            "to 2^30)");
  EXPECT_EQ(error("[{\"batch\": 2, \"length\": 8.5, \"nodes\": []}]"),
            "p.json: shapes[0] has no \"length\" (expected an integer from 1 "
            "to 2^30)");
  EXPECT_EQ(error("[{\"batch\": 2, \"length\": 8}]"),
            "p.json: shapes[0] has no \"nodes\" array");
  EXPECT_EQ(error("[{\"batch\": 2, \"length\": 8, \"nodes\": []}, "
                  "{\"batch\": 2, \"length\": 8, \"nodes\": []}]"),
            "p.json: shapes[1] repeats the shape 2x8");
  EXPECT_EQ(error("[{\"batch\": 2, \"length\": 8, \"nodes\": [{\"name\": "
                  "\"a\", \"backward_ms\": -0.5}]}]"),
            "p.json: shapes[0].nodes[0] ('a') has a bad \"backward_ms\" "
            "(expected a number from 0 to 1e18)");
  EXPECT_EQ(error("[{\"batch\": 2, \"length\": 8, \"nodes\": [{\"name\": "
                  "\"a\"}, {\"name\": \"a\"}]}]"),
            "p.json: shapes[0].nodes[1] ('a') is defined twice");
  EXPECT_EQ(error("[{\"batch\": 2, \"length\": 8, \"nodes\": [{\"name\": "
                  "\"a\", \"forward_ms\": 1}]}]"),
            "(no error)");
}

// Times that follow the fit's own form are recovered at shapes no one
// measured: a fixed cost per call, work per token and per token pair.
TEST(ShapeCostsTest, FitRecoversCallTokenAndPairCosts) {
  auto truth = [](int64_t b, int64_t l) {
    double tokens = double(b * l);
    return 0.05 + 2e-4 * tokens + 3e-7 * tokens * double(l);
  };
  std::vector<MeasuredShape> shapes;
  for (auto [b, l] : {std::pair{16, 16},
                      {4, 16},
                      {1, 16},
                      {8, 32},
                      {2, 32},
                      {4, 64},
                      {1, 64},
                      {2, 128}})
    shapes.push_back(
        {b, l, {{"attn", {truth(b, l), 2 * truth(b, l)}}, {"fc", {1, 1}}}});
  ShapeCosts costs(shapes);
  // Measured shapes give their own times.
  std::optional<NodeTimes> measured = costs.estimate("attn", 4, 64);
  ASSERT_TRUE(measured);
  EXPECT_EQ(measured->forwardMs, truth(4, 64));
  for (auto [b, l] : {std::pair{2, 16}, {1, 32}, {2, 64}, {1, 128}, {8, 64}}) {
    std::optional<NodeTimes> t = costs.estimate("attn", b, l);
    ASSERT_TRUE(t);
    EXPECT_NEAR(t->forwardMs, truth(b, l), 1e-9 * truth(b, l)) << b << "x" << l;
    EXPECT_NEAR(t->backwardMs, 2 * truth(b, l), 2e-9 * truth(b, l));
  }
  // A node that costs the same at every shape is a pure call cost.
  EXPECT_NEAR(costs.estimate("fc", 3, 100)->forwardMs, 1.0, 1e-12);
  EXPECT_FALSE(costs.estimate("nothing", 4, 64));
}

TEST(ShapeCostsTest, CoefficientsStayNonNegative) {
  // Noisy times that fall with the tokens would fit a negative slope; the
  // estimate keeps a non-negative one (here: the mean, a pure call cost).
  std::vector<MeasuredShape> shapes = {{1, 16, {{"x", {3.0, 0}}}},
                                       {2, 16, {{"x", {2.0, 0}}}},
                                       {4, 16, {{"x", {1.0, 0}}}}};
  ShapeCosts costs(shapes);
  std::optional<NodeTimes> t = costs.estimate("x", 64, 64);
  ASSERT_TRUE(t);
  EXPECT_NEAR(t->forwardMs, 2.0, 1e-9);
  EXPECT_GE(t->backwardMs, 0.0);
}

TEST(ShapeCostsTest, FewShapesScaleWithTheNearestShapesTokens) {
  std::vector<MeasuredShape> shapes = {{4, 64, {{"x", {8.0, 16.0}}}},
                                       {1, 16, {{"x", {1.0, 1.0}}}}};
  ShapeCosts costs(shapes);
  // (2, 64) is nearest to (4, 64): half its tokens, half its time.
  std::optional<NodeTimes> t = costs.estimate("x", 2, 64);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->forwardMs, 4.0);
  EXPECT_DOUBLE_EQ(t->backwardMs, 8.0);
  // (1, 32) is nearer to (1, 16): twice its tokens.
  EXPECT_DOUBLE_EQ(costs.estimate("x", 1, 32)->forwardMs, 2.0);
}

} // namespace

// The message latencies dpc profile measured by rank count survive the
// round trip; a job is charged the one measured with the most ranks not
// above its own, else the fewest.
TEST(ProfileMessagesTest, RoundTripAndPick) {
  Graph graph;
  graph.addNode({"fc", "", 1.0, 2.0, 0, 0, false});
  std::string text = writeJsonProfile(graph, {{}, {{2, 0.25}, {4, 0.5}}});
  MessageLatencies back = parseMessageLatencies(text, "p.json");
  EXPECT_EQ(back, (MessageLatencies{{2, 0.25}, {4, 0.5}}));
  EXPECT_NO_THROW(parseJsonProfile(text, "p.json"));
  EXPECT_EQ(messageLatencyFor(back, 1), 0.25);
  EXPECT_EQ(messageLatencyFor(back, 2), 0.25);
  EXPECT_EQ(messageLatencyFor(back, 3), 0.25);
  EXPECT_EQ(messageLatencyFor(back, 4), 0.5);
  EXPECT_EQ(messageLatencyFor(back, 16), 0.5);
  EXPECT_EQ(messageLatencyFor({}, 4), 0.0);

  EXPECT_TRUE(parseMessageLatencies(writeJsonProfile(graph), "p.json").empty());
  auto error = [](const std::string &latencies) {
    return inputErrorOf([&] {
      parseMessageLatencies("{\"message_latency_ms\": " + latencies + "}",
                            "p.json");
    });
  };
  EXPECT_EQ(error("[1]"), "p.json: message_latency_ms: expected an object of "
                          "milliseconds by rank count");
  EXPECT_EQ(error("{\"two\": 1}"),
            "p.json: message_latency_ms: 'two' is not a rank count");
  EXPECT_EQ(error("{\"0\": 1}"),
            "p.json: message_latency_ms: '0' is not a rank count");
  EXPECT_EQ(error("{\"2\": -1}"),
            "p.json: message_latency_ms: 2: expected milliseconds >= 0");
}

// The wake-up latencies of ranks that shared the cores have a section of
// their own, read and checked as the message latencies are.
TEST(ProfileMessagesTest, WakeLatencies) {
  Graph graph;
  graph.addNode({"fc", "", 1.0, 2.0, 0, 0, false});
  std::string text = writeJsonProfile(graph, {{}, {{2, 0.25}}, {{4, 0.75}}});
  EXPECT_EQ(parseMessageLatencies(text, "p.json", kWakeLatencySection),
            (MessageLatencies{{4, 0.75}}));
  EXPECT_EQ(parseMessageLatencies(text, "p.json"),
            (MessageLatencies{{2, 0.25}}));
  EXPECT_TRUE(parseMessageLatencies(writeJsonProfile(graph, {{}, {{2, 0.25}}}),
                                    "p.json", kWakeLatencySection)
                  .empty());
  EXPECT_EQ(inputErrorOf([] {
              parseMessageLatencies(R"({"wake_latency_ms": {"4": -1}})",
                                    "p.json", kWakeLatencySection);
            }),
            "p.json: wake_latency_ms: 4: expected milliseconds >= 0");
}

// The compute factors of the profile's runs on several stages have a
// section of their own; a factor must be positive.
TEST(ProfileMessagesTest, ComputeFactors) {
  Graph graph;
  graph.addNode({"fc", "", 1.0, 2.0, 0, 0, false});
  ProfileSections sections;
  sections.messages = {{2, 0.25}};
  sections.computeFactors = {{2, 1.125}};
  std::string text = writeJsonProfile(graph, sections);
  EXPECT_EQ(parseMessageLatencies(text, "p.json", kComputeFactorSection),
            (MessageLatencies{{2, 1.125}}));
  EXPECT_EQ(parseMessageLatencies(text, "p.json"),
            (MessageLatencies{{2, 0.25}}));
  EXPECT_EQ(inputErrorOf([] {
              parseMessageLatencies(R"({"compute_factor": {"2": 0}})", "p.json",
                                    kComputeFactorSection);
            }),
            "p.json: compute_factor: 2: expected a factor > 0");
}

// A profile of a bf16 build says so; one without the field timed f32.
TEST(ProfilePrecisionTest, RoundTrip) {
  Graph graph;
  graph.addNode({"fc", "", 1.0, 2.0, 0, 0, false});
  ProfileSections bf16;
  bf16.precision = "bf16";
  EXPECT_EQ(parseProfilePrecision(writeJsonProfile(graph, bf16), "p.json"),
            "bf16");
  EXPECT_EQ(parseProfilePrecision(writeJsonProfile(graph), "p.json"), "fp32");
  EXPECT_EQ(writeJsonProfile(graph).find("precision"), std::string::npos);
  EXPECT_EQ(inputErrorOf([] {
              parseProfilePrecision(R"({"precision": "f16"})", "p.json");
            }),
            "p.json: precision: expected \"fp32\" or \"bf16\"");
}
