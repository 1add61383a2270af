#include "trainer/config/config_schema.h"

#include <cctype>

namespace turnrl::trainer {

void write_string(YAML::Emitter& out, const std::string& text) {
  const bool edges = !text.empty() && (std::isspace(static_cast<unsigned char>(text.front())) || std::isspace(static_cast<unsigned char>(text.back())));
  if (edges || text.find('\n') != std::string::npos) out << YAML::DoubleQuoted;
  out << text;
}

std::string reference_table(const std::vector<KeyInfo>& rows) {
  const auto code = [](const std::string& text) { return text.empty() ? std::string() : "`" + text + "`"; };
  std::string out = "| key | type | default | |\n|---|---|---|---|\n";
  for (const KeyInfo& row : rows) {
    std::string type = row.type;
    for (size_t at = type.find('|'); at != std::string::npos; at = type.find('|', at + 2)) type.replace(at, 1, "\\|");
    out += "| " + code(row.path) + " | " + type + " | " + code(row.default_value) + " | " + row.doc + " |\n";
  }
  return out;
}

}  // namespace turnrl::trainer
