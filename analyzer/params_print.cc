#include "analyzer/params_print.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "format/params_table.h"

namespace ncclrec::analyzer {
namespace {

std::string typeColumn(const format::ParamSpec& p) {
  std::string type(format::paramTypeName(p.type));
  if (!p.choices.empty()) type += " (" + std::string(p.choices) + ")";
  return type;
}

std::string quoted(std::string_view v) { return "\"" + std::string(v) + "\""; }

}  // namespace

void printParams(bool json, std::ostream& out) {
  if (json) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::array();
    for (const format::ParamSpec& p : format::allParams()) {
      doc.push_back({{"name", p.name},
                     {"type", format::paramTypeName(p.type)},
                     {"default", p.default_value},
                     {"choices", p.choices},
                     {"description", p.description}});
    }
    out << doc.dump(2) << '\n';
    return;
  }
  size_t name_width = 4, type_width = 4, default_width = 7;
  for (const format::ParamSpec& p : format::allParams()) {
    name_width = std::max(name_width, p.name.size());
    type_width = std::max(type_width, typeColumn(p).size());
    default_width = std::max(default_width, quoted(p.default_value).size());
  }
  auto row = [&](std::string_view name, const std::string& type, const std::string& def,
                 std::string_view desc) {
    out << name << std::string(name_width - name.size() + 2, ' ') << type
        << std::string(type_width - type.size() + 2, ' ') << def
        << std::string(default_width - def.size() + 2, ' ') << desc << '\n';
  };
  row("name", "type", "default", "description");
  for (const format::ParamSpec& p : format::allParams()) {
    row(p.name, typeColumn(p), quoted(p.default_value), p.description);
  }
}

}  // namespace ncclrec::analyzer
