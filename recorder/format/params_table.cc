#include "recorder/format/params_table.h"

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

}  // namespace ncclrec::format
