// parsePickle (pickle_reader.h): a decoded pickle expanded to an nlohmann JSON document, every
// shared reference copied, bounded by PickleLimits in nodes and depth.
#include <string>

#include "format/pickle_reader.h"  // declares parsePickle

namespace ncclrec::format {
namespace {

using Json = nlohmann::json;
using Kind = PickleKind;

// parsePickle's expansion: every shared reference copied, bounded by `budget` nodes and depth.
class JsonExpander {
 public:
  JsonExpander(const std::string& path, const PickleLimits& limits, size_t input_size)
      : path_(path), limits_(limits) {
    budget_ = limits.min_value_nodes + limits.value_nodes_per_byte * input_size;
  }
  base::Status expand(PickleValue v, size_t depth, Json* out);

 private:
  base::Status fail(const std::string& why) const {
    return base::Status::error(path_ + ": " + why);
  }
  const std::string& path_;
  const PickleLimits& limits_;
  size_t budget_ = 0;
};

base::Status JsonExpander::expand(PickleValue v, size_t depth, Json* out) {
  if (budget_ == 0) return fail("value expands past the size limit (shared references?)");
  --budget_;
  if (depth > limits_.max_depth) {
    return fail("nesting deeper than " + std::to_string(limits_.max_depth) +
                " (or a container that holds itself)");
  }
  switch (v.kind()) {
    case Kind::kNull:
      *out = nullptr;
      return base::okStatus();
    case Kind::kBool:
      *out = v.integer() != 0;
      return base::okStatus();
    case Kind::kInt:
      *out = v.integer();
      return base::okStatus();
    case Kind::kFloat:
      *out = v.real();
      return base::okStatus();
    case Kind::kStr:
      *out = std::string(v.str());
      return base::okStatus();
    case Kind::kList:
    case Kind::kTuple:
      *out = Json::array();
      for (size_t k = 0; k < v.size(); ++k) {
        Json item;
        NCCLREC_RETURN_IF_ERROR(expand(v.at(k), depth + 1, &item));
        out->push_back(std::move(item));
      }
      return base::okStatus();
    case Kind::kDict:
      *out = Json::object();
      for (size_t k = 0; k < v.size(); ++k) {
        Json item;
        NCCLREC_RETURN_IF_ERROR(expand(v.valueAt(k), depth + 1, &item));
        (*out)[std::string(v.keyAt(k).str())] = std::move(item);
      }
      return base::okStatus();
  }
  return fail("internal error: unknown node");
}

}  // namespace

base::StatusOr<nlohmann::json> parsePickle(const void* data, size_t size, const std::string& path,
                                           const PickleLimits& limits) {
  NCCLREC_ASSIGN_OR_RETURN(const PickleDoc doc, decodePickle(data, size, path, limits));
  JsonExpander expander(path, limits, size);
  Json out;
  NCCLREC_RETURN_IF_ERROR(expander.expand(doc.root(), 0, &out));
  return out;
}

}  // namespace ncclrec::format
