//===- DataRegistryTest.cpp - The table of data source kinds --------------===//
//
// Every kind of --data spec is a row of the table its Data<Kind>.cpp fills
// (DataKinds.h). These tests check that no row can be forgotten: the
// "unknown kind" message and --data's help list every row, each row's
// prefixes parse to it, and the checks every kind shares read its flags.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/DataKinds.h"
#include "dpc/runtime/RankOptions.h"

#include "test/unittests/runtime/ErrorOf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

using namespace dpc::runtime;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

namespace {

/// The help of the rank option --data.
std::string dataOptionHelp() {
  for (const RankOptionInfo &row : rankOptionTable())
    if (std::string(row.name) == "data")
      return row.help;
  return "";
}

/// Whether `text` names spec prefix `prefix` as a word: "prefix:" or
/// "prefix[" after the start, a space or a comma.
bool namesPrefix(const std::string &text, const std::string &prefix) {
  for (size_t at = text.find(prefix); at != std::string::npos;
       at = text.find(prefix, at + 1)) {
    size_t end = at + prefix.size();
    bool starts = at == 0 || text[at - 1] == ' ' || text[at - 1] == ',';
    if (starts && end < text.size() && (text[end] == ':' || text[end] == '['))
      return true;
  }
  return false;
}

TEST(DataKinds, EveryKindIsARowWithItsPieces) {
  const std::vector<DataSourceKind> &kinds = dataSourceKinds();
  std::set<std::string> names, prefixes;
  for (const DataSourceKind &kind : kinds) {
    SCOPED_TRACE(kind.name);
    EXPECT_TRUE(names.insert(kind.name).second) << "a second row named so";
    EXPECT_FALSE(kind.prefixes.empty());
    for (const std::string &prefix : kind.prefixes)
      EXPECT_TRUE(prefixes.insert(prefix).second)
          << "prefix '" << prefix << "' of two kinds";
    EXPECT_NE(kind.parse, nullptr);
    EXPECT_NE(kind.load, nullptr);
  }
  EXPECT_THAT(names, IsSupersetOf({"idx", "npy", "text", "tokens",
                                   "imagefolder", "synthetic"}));
  EXPECT_TRUE(std::is_sorted(
      kinds.begin(), kinds.end(),
      [](const auto &a, const auto &b) { return a.order < b.order; }));
}

TEST(DataKinds, UnknownKindMessageListsEveryKind) {
  std::string message = errorOf([] { parseDataSpec("cifar:/x"); });
  EXPECT_EQ(message, "data spec 'cifar:/x': unknown kind 'cifar'; expected " +
                         dataKindsUsage());
  for (const DataSourceKind &kind : dataSourceKinds()) {
    SCOPED_TRACE(kind.name);
    EXPECT_THAT(message, HasSubstr(kind.usage));
    for (const std::string &prefix : kind.prefixes)
      EXPECT_TRUE(namesPrefix(kind.usage, prefix)) << kind.usage;
  }
  // The last kind follows " or ", the others ", ".
  EXPECT_THAT(message, HasSubstr(" or " + dataSourceKinds().back().usage));
}

TEST(DataKinds, DataHelpListsEveryKind) {
  std::string help = dataOptionHelp();
  EXPECT_EQ(help, "training data (inference builds: the samples to predict): " +
                      dataKindsHelp());
  for (const DataSourceKind &kind : dataSourceKinds()) {
    SCOPED_TRACE(kind.name);
    EXPECT_THAT(help, HasSubstr(kind.help));
    for (const std::string &prefix : kind.prefixes)
      EXPECT_TRUE(namesPrefix(kind.help, prefix)) << kind.help;
  }
  EXPECT_THAT(help, HasSubstr(" or " + dataSourceKinds().back().help));
}

TEST(DataKinds, EveryPrefixParsesToItsKind) {
  for (const DataSourceKind &kind : dataSourceKinds())
    for (const std::string &prefix : kind.prefixes) {
      SCOPED_TRACE(prefix);
      try {
        EXPECT_EQ(parseDataSpec(prefix + ":f").kind, kind.name);
      } catch (const Error &e) {
        // A kind may refuse "f" as its options, but it is the kind that
        // refuses it.
        EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("unknown kind")));
      }
    }
}

TEST(DataKinds, ClassLabelKindsAreRefusedForFloatTargets) {
  ModelDataShape mse{{4}, 0, false, {2}};
  mse.floatLabels = true;
  std::set<std::string> classKinds;
  for (const DataSourceKind &kind : dataSourceKinds()) {
    if (!kind.classLabels)
      continue;
    SCOPED_TRACE(kind.name);
    classKinds.insert(kind.name);
    // Refused before the kind's loader looks for the missing file.
    EXPECT_THAT(inputErrorOf([&] {
                  loadDataset(parseDataSpec(kind.prefixes[0] + ":/no/such"),
                              Split::Train, mse);
                }),
                HasSubstr("the data has class labels but the model's loss "
                          "takes float targets"));
  }
  // npy: and synthetic give float targets when the model asks for them.
  EXPECT_THAT(classKinds,
              IsSupersetOf({"idx", "text", "tokens", "imagefolder"}));
  EXPECT_EQ(classKinds.count("npy") + classKinds.count("synthetic"), 0u);
}

} // namespace
