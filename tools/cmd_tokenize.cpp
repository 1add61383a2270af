// JSON Lines in, JSON Lines out: {"text": ...} -> {"text": ..., "ids": [...]}, or the reverse.
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "agents/model/tokenizer.h"
#include "tools/cli.h"
#include "tools/command.h"

namespace turnrl::tools {

int run_tokenize(int argc, char** argv) {
  CLI::App app{"Tokenize JSON Lines from stdin: {\"text\": ...} -> {\"text\": ..., \"ids\": [...]};\n"
               "with --decode: {\"ids\": [...]} -> {\"ids\": [...], \"text\": ...}",
               "turnrl tokenize"};
  std::string dir;
  bool decode = false;
  app.add_option("--tokenizer", dir, "folder with tokenizer.json")->required()->check(CLI::ExistingDirectory);
  app.add_flag("--decode", decode, "decode ids to text instead");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;

  const agents::Tokenizer tokenizer = agents::Tokenizer::load(dir);
  std::string line;
  long line_number = 0;
  while (std::getline(std::cin, line)) {
    ++line_number;
    if (line.empty()) continue;
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    const char* field = decode ? "ids" : "text";
    if (!record.is_object() || !record.contains(field)) {
      std::fprintf(stderr, "error: stdin line %ld: expected a JSON object with \"%s\"\n", line_number, field);
      return kExitFailure;
    }
    try {
      if (decode) {
        record["text"] = tokenizer.decode(record["ids"].get<std::vector<int32_t>>());
      } else {
        record["ids"] = tokenizer.encode(record["text"].get<std::string>());
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: stdin line %ld: %s\n", line_number, e.what());
      return kExitFailure;
    }
    // Partial UTF-8 from decoding is written with replacement characters rather than failing.
    std::printf("%s\n", record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return 0;
}

}  // namespace turnrl::tools
