#include "format/params_table.h"

#include <cstdlib>

namespace ncclrec::format {

std::string_view paramTypeName(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return "string";
    case ParamType::kInt:
      return "int";
    case ParamType::kDouble:
      return "double";
    case ParamType::kBool:
      return "bool";
    case ParamType::kSignal:
      return "signal";
    case ParamType::kChoice:
      return "choice";
  }
  return "unknown";
}

const ParamSpec* findParam(std::string_view name) {
  for (const ParamSpec& p : kParams) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string paramValue(std::string_view name) {
  const ParamSpec* p = findParam(name);
  if (p == nullptr) return "";
  const char* v = std::getenv(std::string(name).c_str());
  return v != nullptr && *v != '\0' ? std::string(v) : std::string(p->default_value);
}

}  // namespace ncclrec::format
