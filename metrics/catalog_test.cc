// The catalog against what users read and run: docs/metrics.md documents every metric with its
// labels, and the Grafana dashboard and the alert rules query only metrics the exporter makes.
#include "metrics/catalog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

namespace ncclrec::metrics {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path << " is missing";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every name the exporter writes: histograms as their _bucket, _sum and _count series.
std::set<std::string> exportedNames() {
  std::set<std::string> names;
  for (const MetricSpec& m : allMetrics()) {
    const std::string name(m.name);
    if (m.kind == Kind::kHistogram) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) names.insert(name + suffix);
    } else {
      names.insert(name);
    }
  }
  return names;
}

// The ncclrec_* names a PromQL expression selects (labels never start with "ncclrec_").
std::set<std::string> namesIn(const std::string& expr) {
  static const std::regex kName("ncclrec_[a-z0-9_]+");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kName);
       it != std::sregex_iterator(); ++it) {
    out.insert(it->str());
  }
  return out;
}

TEST(CatalogTest, NamesFollowPrometheusConventions) {
  std::set<std::string> seen;
  for (const MetricSpec& m : allMetrics()) {
    const std::string name(m.name);
    EXPECT_TRUE(std::regex_match(name, std::regex("ncclrec_[a-z_]+"))) << name;
    EXPECT_TRUE(seen.insert(name).second) << name << " twice";
    EXPECT_EQ(name.ends_with("_total"), m.kind == Kind::kCounter) << name;
    EXPECT_EQ(name.ends_with("_info"), m.kind == Kind::kInfo) << name;
    if (m.kind == Kind::kStateSet) {
      EXPECT_TRUE(std::string(m.labels).ends_with(",state")) << name;
    }
    EXPECT_FALSE(m.help.empty()) << name;
    // No label names a single op or sequence number: the series stay bounded.
    for (const char* unbounded : {"seq", "index", "stack"}) {
      EXPECT_EQ(std::string(m.labels).find(unbounded), std::string::npos) << name;
    }
  }
}

TEST(CatalogTest, DocsListEveryMetricWithItsKindAndLabels) {
  const std::string doc = readFile(std::string(NCCLREC_DOCS_DIR) + "/metrics.md");
  for (const MetricSpec& m : allMetrics()) {
    const size_t at = doc.find("| `" + std::string(m.name) + "` |");
    ASSERT_NE(at, std::string::npos) << m.name << " is not in docs/metrics.md";
    const std::string row = doc.substr(at, doc.find('\n', at) - at);
    EXPECT_NE(row.find("| " + std::string(kindName(m.kind)) + " |"), std::string::npos)
        << m.name << ": kind " << kindName(m.kind) << " not in " << row;
    std::string labels(m.labels);
    for (size_t p = 0; (p = labels.find(',', p)) != std::string::npos; p += 2)
      labels.replace(p, 1, ", ");
    EXPECT_NE(row.find(labels.empty() ? "(none)" : labels), std::string::npos)
        << m.name << ": labels " << labels << " not in " << row;
  }
}

TEST(CatalogTest, TheDashboardIsGrafanaJsonThatQueriesOnlyExportedMetrics) {
  const std::string text =
      readFile(std::string(NCCLREC_METRICS_DIR) + "/grafana/ncclrec-dashboard.json");
  const nlohmann::json d = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(d.is_discarded()) << "ncclrec-dashboard.json is not valid JSON";
  EXPECT_TRUE(d.contains("uid") && d["uid"].is_string());
  EXPECT_TRUE(d.contains("title") && d["title"].is_string());
  ASSERT_TRUE(d.contains("panels") && d["panels"].is_array());
  ASSERT_FALSE(d["panels"].empty());
  const std::set<std::string> exported = exportedNames();
  std::set<std::string> used, ids;
  for (const auto& p : d["panels"]) {
    ASSERT_TRUE(p.contains("title") && p.contains("targets") && p["targets"].is_array())
        << p.dump();
    EXPECT_TRUE(ids.insert(p["id"].dump()).second) << "panel id " << p["id"] << " twice";
    EXPECT_FALSE(p["targets"].empty()) << p["title"];
    for (const auto& t : p["targets"]) {
      ASSERT_TRUE(t.contains("expr") && t["expr"].is_string()) << p["title"];
      const std::set<std::string> names = namesIn(t["expr"]);
      EXPECT_FALSE(names.empty()) << p["title"] << ": " << t["expr"];
      for (const std::string& n : names) {
        EXPECT_TRUE(exported.contains(n)) << p["title"] << " queries " << n << ", not exported";
        used.insert(n);
      }
    }
  }
  for (const auto& v : d["templating"]["list"]) {
    if (v["type"] != "query") continue;
    for (const std::string& n : namesIn(v["definition"].get<std::string>()))
      EXPECT_TRUE(exported.contains(n)) << "variable " << v["name"] << " queries " << n;
  }
  // The job's hang, its verdict and each rank's state are on it.
  for (const char* n : {"ncclrec_job_hang_state", "ncclrec_job_verdict_info", "ncclrec_rank_state"})
    EXPECT_TRUE(used.contains(n)) << n << " is on no panel";
}

TEST(CatalogTest, TheAlertRulesQueryOnlyExportedMetrics) {
  const std::string text =
      readFile(std::string(NCCLREC_METRICS_DIR) + "/prometheus/ncclrec.rules.yml");
  const std::set<std::string> exported = exportedNames();
  std::istringstream lines(text);
  size_t exprs = 0;
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("expr:");
    if (at == std::string::npos) continue;
    ++exprs;
    const std::set<std::string> names = namesIn(line.substr(at));
    EXPECT_FALSE(names.empty()) << line;
    for (const std::string& n : names) EXPECT_TRUE(exported.contains(n)) << line;
  }
  EXPECT_EQ(exprs, 4u);
}

}  // namespace
}  // namespace ncclrec::metrics
