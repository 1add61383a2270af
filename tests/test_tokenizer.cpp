// The Qwen tokenizer against 400 golden encodings from an independent implementation.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "agents/model/tokenizer.h"
#include "temp_dir.h"
#include "test_util.h"

using turnrl::agents::Tokenizer;

namespace {

const std::string kQwenDir = turnrl::test::shared_path("tokenizers/qwen");

std::vector<nlohmann::json> golden() {
  std::ifstream in(turnrl::test::shared_path("tokenizers/qwen/golden_encode.jsonl"));
  std::vector<nlohmann::json> records;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) records.push_back(nlohmann::json::parse(line));
  }
  return records;
}

}  // namespace

TEST_CASE("encode reproduces every golden text and decode inverts it") {
  const Tokenizer tokenizer = Tokenizer::load(kQwenDir);
  const auto records = golden();
  REQUIRE(records.size() == 400);
  int exact = 0, round_trips = 0, non_nfc = 0;
  for (const auto& record : records) {
    const std::string text = record["text"].get<std::string>();
    const auto ids = tokenizer.encode(text);
    if (ids == record["ids"].get<std::vector<int32_t>>()) {
      ++exact;
    } else {
      INFO("text: " << text);
      CHECK(ids == record["ids"].get<std::vector<int32_t>>());
    }
    // The NFC normaliser makes decode(encode(x)) == NFC(x): equal to x for every text already in NFC.
    auto* nfc = reinterpret_cast<char*>(utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(text.c_str())));
    REQUIRE(nfc != nullptr);
    const std::string normalized(nfc);
    std::free(nfc);
    CHECK(tokenizer.decode(ids) == normalized);
    round_trips += tokenizer.decode(ids) == text;
    non_nfc += normalized != text;
  }
  CHECK(exact == 400);
  CHECK(round_trips + non_nfc == 400);
  CHECK(non_nfc == 1);  // "a\u0301 combining": decomposed input comes back composed
}

TEST_CASE("turnrl tokenize reproduces the golden file") {
  std::ifstream in(turnrl::test::shared_path("tokenizers/qwen/golden_encode.jsonl"));
  const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto result = turnrl::test::run_turnrl("tokenize --tokenizer '" + kQwenDir + "'", input);
  REQUIRE(result.exit_code == 0);
  std::istringstream lines(result.output);
  const auto records = golden();
  std::string line;
  size_t i = 0;
  for (; std::getline(lines, line) && i < records.size(); ++i) {
    CHECK(nlohmann::json::parse(line)["ids"] == records[i]["ids"]);
  }
  CHECK(i == records.size());
}

TEST_CASE("special tokens, chat format, stop ids and streaming decode") {
  const Tokenizer tokenizer = Tokenizer::load(kQwenDir);
  const int32_t im_start = tokenizer.token_id("<|im_start|>"), im_end = tokenizer.token_id("<|im_end|>");
  CHECK(im_start == 151644);
  CHECK(im_end == 151645);
  const auto ids = tokenizer.encode("<|im_start|>user\nhi<|im_end|>");
  CHECK(ids.front() == im_start);
  CHECK(ids.back() == im_end);
  const std::string chat = tokenizer.chat_text({{"user", "go"}, {"assistant", "turn left"}}, true);
  CHECK(chat == "<|im_start|>user\ngo<|im_end|>\n<|im_start|>assistant\nturn left<|im_end|>\n<|im_start|>assistant\n");
  CHECK(std::find(tokenizer.stop_ids().begin(), tokenizer.stop_ids().end(), im_end) != tokenizer.stop_ids().end());
  CHECK(tokenizer.pad_id() == 151643);

  // A multi-byte character split over tokens comes out whole.
  const auto emoji = tokenizer.encode("🤖!");
  REQUIRE(emoji.size() >= 2);
  turnrl::agents::StreamingDecoder stream(tokenizer);
  std::string streamed;
  for (int32_t id : emoji) {
    const std::string piece = stream.push(id);
    CHECK((piece.empty() || piece == "🤖" || piece == "!" || piece == "🤖!"));
    streamed += piece;
  }
  CHECK(streamed + stream.finish() == "🤖!");
  CHECK_THROWS_AS(tokenizer.decode({-1}), std::out_of_range);
  CHECK_THROWS_AS(tokenizer.decode({1 << 30}), std::out_of_range);
}

TEST_CASE("malformed tokenizer folders give errors naming the file") {
  const turnrl::test::TempDir dir("turnrl_bad_tokenizer");
  CHECK_THROWS_WITH_AS(Tokenizer::load(dir / "no-such-tokenizer"), doctest::Contains("tokenizer.json"), std::runtime_error);
  std::ofstream(dir / "tokenizer.json") << "{\"model\": {\"type\": \"Unigram\", \"vocab\": {}}}";
  CHECK_THROWS_WITH_AS(Tokenizer::load(dir.path()), doctest::Contains("Unigram"), std::runtime_error);
  std::ofstream(dir / "tokenizer.json") << "{\"model\": {\"type\": \"WordLevel\", \"vocab\": {\"a\": 0}}, \"decoder\": {\"type\": \"Strip\"}}";
  CHECK_THROWS_WITH_AS(Tokenizer::load(dir.path()), doctest::Contains("decoder 'Strip'"), std::runtime_error);
  std::ofstream(dir / "tokenizer.json") << "{\"model\": ";
  CHECK_THROWS_WITH_AS(Tokenizer::load(dir.path()), doctest::Contains("invalid JSON"), std::runtime_error);
}
