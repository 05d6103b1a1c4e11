// third_party/nccl/nccl.h against NVIDIA's nccl.h: every enumerator, type size and alignment,
// struct layout, initializer, macro and function type must be equal, and both headers must declare
// nothing the table does not cover.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "hostnccl/tests/abi_table.h"

namespace ncclrec::hostnccl {
namespace {

using Names = std::set<std::string>;

std::map<std::string, std::string> asMap(const AbiTable& table) {
  std::map<std::string, std::string> map;
  for (const auto& [key, value] : table) {
    EXPECT_TRUE(map.emplace(key, value).second) << "duplicate key " << key;
  }
  return map;
}

Names namesOfKind(const AbiTable& table, const std::string& kind) {
  Names names;
  for (const auto& [key, value] : table) {
    if (key.starts_with(kind + " ")) names.insert(key.substr(kind.size() + 1));
  }
  return names;
}

std::string headerText(const char* path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Comments may mention names; drop them.
  static const std::regex kComments(R"(/\*[\s\S]*?\*/|//[^\n]*)");
  return std::regex_replace(text, kComments, " ");
}

Names matches(const std::string& text, const std::string& pattern) {
  Names names;
  const std::regex re(pattern);
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

// What a header declares, read from its text: it must all be covered by the table.
struct Declared {
  Names functions, enumerators, types, macros;
};

Declared declaredBy(const std::string& text) {
  Declared d;
  d.functions =
      matches(text, R"((?:^|\n)\s*(?:ncclResult_t|const\s+char\s*\*)\s*(p?nccl\w+)\s*\()");
  // hostnccl's header declares both names through one macro.
  for (const std::string& name : matches(text, R"(NCCL_API_DECLARE\(\s*[^,]+,\s*(nccl\w+)\s*,)")) {
    d.functions.insert(name);
    d.functions.insert("p" + name);
  }
  d.enumerators = matches(text, R"(\b(nccl\w+)\s*=[^=])");
  d.types = matches(text, R"(\}\s*(nccl\w+)\s*;)");
  d.types.merge(matches(text, R"(typedef\s+struct\s+\w+\s*\*\s*(nccl\w+)\s*;)"));
  d.macros = matches(text, R"(#\s*define\s+(NCCL_\w+))");
  for (const std::string& undefined : matches(text, R"(#\s*undef\s+(NCCL_\w+))")) {
    d.macros.erase(undefined);
  }
  return d;
}

Names withPrefix(const Names& names, const std::string& prefix) {
  Names out;
  for (const std::string& name : names) {
    if (name.starts_with(prefix)) out.insert(name);
  }
  return out;
}

TEST(HostncclAbiTest, EveryEntryEqualsTheRealHeader) {
  const auto real = asMap(realNcclAbiTable());
  const auto ours = asMap(ourNcclAbiTable());
  ASSERT_GT(real.size(), 150u);
  for (const auto& [key, value] : real) {
    const auto it = ours.find(key);
    if (it == ours.end()) {
      ADD_FAILURE() << key << ": missing from hostnccl's nccl.h";
      continue;
    }
    EXPECT_EQ(it->second, value) << key << " (left: hostnccl, right: NVIDIA)";
  }
  for (const auto& [key, value] : ours) {
    EXPECT_TRUE(real.contains(key)) << key << ": not in NVIDIA's nccl.h";
  }
}

std::string minus(const Names& a, const Names& b) {
  std::string out;
  for (const std::string& name : a) {
    if (!b.contains(name)) out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

void expectSame(const Names& declared, const Names& listed, const char* kind, const char* header) {
  EXPECT_EQ(minus(declared, listed), "")
      << header << " declares these " << kind << " that abi_table.inc does not list";
  EXPECT_EQ(minus(listed, declared), "") << header << " lacks these " << kind;
}

void expectCovered(const Declared& declared, const AbiTable& table, const char* header) {
  EXPECT_GE(declared.functions.size(), 80u) << header;  // the scan itself must work
  expectSame(declared.functions, namesOfKind(table, "function"), "functions", header);
  expectSame(declared.enumerators, namesOfKind(table, "enum"), "enumerators", header);
  expectSame(declared.types, withPrefix(namesOfKind(table, "type"), "nccl"), "types", header);
  expectSame(declared.macros, namesOfKind(table, "macro"), "macros", header);
}

TEST(HostncclAbiTest, TheTableCoversEverythingTheRealHeaderDeclares) {
  expectCovered(declaredBy(headerText(NCCLREC_REAL_NCCL_HEADER)), realNcclAbiTable(),
                NCCLREC_REAL_NCCL_HEADER);
}

TEST(HostncclAbiTest, TheTableCoversEverythingOurHeaderDeclares) {
  expectCovered(declaredBy(headerText(NCCLREC_OUR_NCCL_HEADER)), ourNcclAbiTable(),
                NCCLREC_OUR_NCCL_HEADER);
}

// The comparison must see a change of one parameter type, one enumerator or one field.
TEST(HostncclAbiTest, TheTableIsSensitive) {
  auto real = asMap(realNcclAbiTable());
  EXPECT_EQ(real.at("function ncclAllReduce"),
            "ncclResult_t (void const*, void*, unsigned long, ncclDataType_t, ncclRedOp_t, "
            "ncclComm*, CUstream_st*)");
  EXPECT_EQ(real.at("enum ncclFloat"), "7 of ncclDataType_t");
  EXPECT_EQ(real.at("field ncclConfig_t.nvlinkCentricSched").substr(0, 10), "offset 76,");
  EXPECT_EQ(real.at("macro NCCL_SPLIT_NOCOLOR"), "-1 of int");
}

}  // namespace
}  // namespace ncclrec::hostnccl
