#include "analyzer/report.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>

#include "analyzer/frames.h"
#include "analyzer/whereabouts.h"
#include "base/text.h"

namespace ncclrec::analyzer {
namespace {

using Json = nlohmann::ordered_json;

std::string stateWord(format::EventState s) {
  switch (s) {
    case format::EventState::kCompleted:
      return "ok";
    case format::EventState::kFailed:
      return "FAILED";
    case format::EventState::kEnqueued:
    case format::EventState::kStarted:
      return "PENDING";
    default:
      return "?";
  }
}

// "trainStep:27", "libx.so+0x12", "?".
std::string shortSite(const CallSite& s) {
  if (!s.known()) return "?";
  if (s.function.empty()) return describeCallSite(s);
  return siteFunctionName(s) + (s.line > 0 ? ":" + std::to_string(s.line) : "");
}

// "invalid-usage" (the names of --events).
std::string resultWord(int result) {
  static constexpr std::string_view kNames[] = {
      "ok",          "cuda-error",    "system-error", "internal-error",
      "invalid-arg", "invalid-usage", "remote-error", "in-progress"};
  if (result >= 0 && static_cast<size_t>(result) < std::size(kNames))
    return std::string(kNames[result]);
  return "error " + std::to_string(result);
}

std::string cell(const EvidenceOp& o) {
  std::string c = std::string(format::opName(o.op));
  // Calls that move no data (init, ...) have no count worth showing.
  if (format::isCollective(o.op) || format::isP2p(o.op)) c += " " + std::to_string(o.count);
  if (o.dtype >= 0) c += " " + std::string(format::dataTypeName(o.dtype));
  if (o.root >= 0) c += " root " + std::to_string(o.root);
  c += " " + shortSite(o.site) + " " + stateWord(o.state);
  if (o.state == format::EventState::kFailed && o.result != 0)
    c += " (" + resultWord(o.result) + ")";
  return c;
}

std::string tableCellText(const TableCell& c) {
  switch (c.kind) {
    case TableCell::Kind::kNumber:
      return std::to_string(c.number);
    case TableCell::Kind::kText:
      return c.text;
    case TableCell::Kind::kOp:
      return cell(c.op);
    case TableCell::Kind::kNone:
      break;
  }
  return "-";
}

// One aligned table: numbers to the right, the rest to the left, '>' before marked rows.
void printTable(const EvidenceTable& t, std::ostream& out) {
  out << '\n' << t.title << ":\n";
  std::vector<size_t> width(t.columns.size());
  // Right-aligned: columns of numbers (with gaps); a column of gaps alone is text.
  std::vector<bool> numeric(t.columns.size(), true), any_number(t.columns.size(), false);
  std::vector<std::string> head;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    std::string h = t.columns[c];
    std::replace(h.begin(), h.end(), '_', ' ');
    width[c] = h.size();
    head.push_back(std::move(h));
  }
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], tableCellText(row[c]).size());
      if (row[c].kind == TableCell::Kind::kNumber) any_number[c] = true;
      if (row[c].kind != TableCell::Kind::kNumber && row[c].kind != TableCell::Kind::kNone)
        numeric[c] = false;
    }
  }
  for (size_t c = 0; c < numeric.size(); ++c) numeric[c] = numeric[c] && any_number[c];
  const auto align = [&](const std::string& s, size_t c) {
    const std::string fill(width[c] > s.size() ? width[c] - s.size() : 0, ' ');
    return numeric[c] ? fill + s : s + fill;
  };
  const auto emit = [&](const std::string& marker, const std::vector<std::string>& cells) {
    std::string line = "  " + marker + " ";
    for (size_t c = 0; c < cells.size(); ++c) line += (c == 0 ? "" : "  ") + align(cells[c], c);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  emit(" ", head);
  for (size_t r = 0; r < t.rows.size(); ++r) {
    std::vector<std::string> cells;
    for (const TableCell& c : t.rows[r]) cells.push_back(tableCellText(c));
    cells.resize(t.columns.size(), "-");
    emit(r < t.marked.size() && t.marked[r] ? ">" : " ", cells);
  }
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

Json siteJson(const CallSite& s) {
  Json j;
  j["function"] = s.function.empty() ? Json(nullptr) : Json(siteFunctionName(s));
  j["file"] = s.file.empty() ? Json(nullptr) : Json(s.file);
  j["line"] = s.line > 0 ? Json(s.line) : Json(nullptr);
  j["full_function"] = s.function.empty() ? Json(nullptr) : Json(s.function);
  j["module"] = s.module.empty() ? Json(nullptr) : Json(s.module);
  j["module_offset"] = s.module_offset;
  j["python"] = s.python;
  j["frame"] = s.frame >= 0 ? Json(s.frame) : Json(nullptr);
  return j;
}

Json opJson(const EvidenceOp& op) {
  Json e;
  e["seq"] = op.seq;
  e["op"] = format::opName(op.op);
  e["count"] = op.count;
  e["dtype"] = op.dtype >= 0 ? Json(format::dataTypeName(op.dtype)) : Json(nullptr);
  e["redop"] = op.redop >= 0 ? Json(format::redOpName(op.redop)) : Json(nullptr);
  e["root"] = op.root >= 0 ? Json(op.root) : Json(nullptr);
  e["state"] = format::stateName(op.state);
  const bool returned =
      op.state == format::EventState::kCompleted || op.state == format::EventState::kFailed;
  e["result"] = returned ? Json(resultWord(op.result)) : Json(nullptr);
  e["callsite"] = op.site.known() ? siteJson(op.site) : Json(nullptr);
  return e;
}

Json cellJson(const TableCell& c) {
  switch (c.kind) {
    case TableCell::Kind::kNumber:
      return c.number;
    case TableCell::Kind::kText:
      return c.text;
    case TableCell::Kind::kOp:
      return opJson(c.op);
    case TableCell::Kind::kNone:
      break;
  }
  return nullptr;
}

// The evidence table: one column per group of ranks, one row per sequence number, the verdict's
// marked with '>'.
void printEvidence(const Verdict& v, std::ostream& out) {
  uint64_t first = UINT64_MAX, last = 0;
  for (const EvidenceRow& r : v.evidence) {
    for (const EvidenceOp& op : r.ops) {
      first = std::min(first, op.seq);
      last = std::max(last, op.seq);
    }
  }
  out << "\nevidence on comm " << base::shortHex(v.comm_id) << ":\n";
  std::vector<std::string> head;
  for (const EvidenceRow& r : v.evidence) {
    head.push_back((r.ranks.size() == 1 ? "rank " : "ranks ") + formatRanks(r.ranks) +
                   (r.note.empty() ? "" : " (" + r.note + ")"));
  }
  std::vector<size_t> width(v.evidence.size());
  for (size_t i = 0; i < v.evidence.size(); ++i) {
    width[i] = head[i].size();
    for (const EvidenceOp& op : v.evidence[i].ops) width[i] = std::max(width[i], cell(op).size());
  }
  std::string line = "    seq  ";
  for (size_t i = 0; i < head.size(); ++i) line += pad(head[i], width[i] + 3);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out << line << '\n';
  if (first != UINT64_MAX) {
    for (uint64_t seq = first; seq <= last; ++seq) {
      char num[32];
      std::snprintf(num, sizeof(num), "%s %5llu  ", seq == v.seq ? ">" : " ",
                    static_cast<unsigned long long>(seq));
      line = std::string("  ") + num;
      for (size_t i = 0; i < v.evidence.size(); ++i) {
        const auto& ops = v.evidence[i].ops;
        const auto it =
            std::find_if(ops.begin(), ops.end(), [&](const EvidenceOp& x) { return x.seq == seq; });
        line += pad(it == ops.end() ? "-" : cell(*it), width[i] + 3);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << '\n';
    }
  }
}

// The stacks of the differing call sites, innermost frame first.
void printStacks(const Verdict& v, std::ostream& out) {
  out << "\nstacks:\n";
  for (const CallSite& s : v.stacks) {
    out << "  " << describeCallSite(s) << '\n';
    printFrames(s.frames, s.frame, "  ", out);
  }
}

}  // namespace

void printVerdictText(const Verdict& v, const ReportOptions& o, std::ostream& out) {
  const char* bold = o.color ? "\033[1m" : "";
  const char* red = o.color ? "\033[1;31m" : "";
  const char* green = o.color ? "\033[1;32m" : "";
  const char* reset = o.color ? "\033[0m" : "";
  const bool bad = exitCodeFor(v.cls) != 0;
  out << (bad ? red : green) << verdictClassName(v.cls) << reset << ": " << bold << v.headline
      << reset << '\n';
  if (!v.waiting.empty()) out << "waiting: " << ranksWord(v.waiting) << '\n';
  for (const std::string& m : v.missing) out << "missing: " << m << '\n';

  if (!v.evidence.empty()) printEvidence(v, out);

  for (const EvidenceTable& t : v.tables) printTable(t, out);

  if (!v.stacks.empty()) printStacks(v, out);

  printThreadsText(v, out);

  if (!v.status.empty()) {
    out << "\nranks:\n";
    for (const RankStatus& s : v.status) {
      char head[48];
      std::snprintf(head, sizeof(head), "  %5d  %-13s", s.rank,
                    std::string(rankStateName(s.state)).c_str());
      std::string line = std::string(head) + " " + s.detail;
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << '\n';
    }
  }
}

Json verdictJson(const Verdict& v, const std::vector<std::string>& warnings) {
  Json doc;
  Json& j = doc["verdict"];
  j["class"] = verdictClassName(v.cls);
  j["ranks"] = v.ranks;
  j["waiting"] = v.waiting;
  j["comm"] = v.comm_id != 0 ? Json(base::hex16(v.comm_id)) : Json(nullptr);
  j["seq"] = v.seq != 0 ? Json(v.seq) : Json(nullptr);
  j["op"] = v.op != format::OpType::kUnknown ? Json(format::opName(v.op)) : Json(nullptr);
  j["callsite"] = v.site.known() ? siteJson(v.site) : Json(nullptr);
  j["headline"] = v.headline;
  j["exit_code"] = exitCodeFor(v.cls);
  doc["evidence"] = Json::array();
  for (const EvidenceRow& r : v.evidence) {
    Json row;
    row["ranks"] = r.ranks;
    row["note"] = r.note.empty() ? Json(nullptr) : Json(r.note);
    row["ops"] = Json::array();
    for (const EvidenceOp& op : r.ops) row["ops"].push_back(opJson(op));
    doc["evidence"].push_back(std::move(row));
  }
  doc["tables"] = Json::array();
  for (const EvidenceTable& t : v.tables) {
    Json table;
    table["title"] = t.title;
    table["columns"] = t.columns;
    table["rows"] = Json::array();
    for (size_t r = 0; r < t.rows.size(); ++r) {
      Json row;
      row["marked"] = r < t.marked.size() && t.marked[r];
      for (size_t c = 0; c < t.columns.size(); ++c) {
        row[t.columns[c]] = c < t.rows[r].size() ? cellJson(t.rows[r][c]) : Json(nullptr);
      }
      table["rows"].push_back(std::move(row));
    }
    doc["tables"].push_back(std::move(table));
  }
  doc["stacks"] = Json::array();
  for (const CallSite& s : v.stacks) {
    Json st;
    st["callsite"] = siteJson(s);
    st["frames"] = framesJson(s.frames);
    doc["stacks"].push_back(std::move(st));
  }
  doc["ranks"] = Json::array();
  for (const RankStatus& s : v.status) {
    doc["ranks"].push_back(
        {{"rank", s.rank}, {"status", rankStateName(s.state)}, {"detail", s.detail}});
  }
  addThreadsJson(v, doc["ranks"]);
  doc["missing"] = v.missing;
  doc["warnings"] = warnings;
  return doc;
}

void printVerdictJson(const Verdict& v, const std::vector<std::string>& warnings,
                      std::ostream& out) {
  // Strings come from dump files: bad UTF-8 is replaced, never thrown on.
  out << verdictJson(v, warnings).dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
}

}  // namespace ncclrec::analyzer
