// Fuzzes the Qwen tokenizer (../shared/tokenizers/qwen): encodes the input as text, and decodes it
// read as token ids. Encoding any bytes must work; valid UTF-8 must come back from decode(encode())
// exactly when it is in NFC (the tokenizer's normaliser), and as the same NFC text otherwise.
// Decoding raises std::out_of_range exactly for ids outside the vocabulary, and the streaming
// decoder must produce the same text as decode().
#include <utf8proc.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/model/tokenizer.h"
#include "fuzz_util.h"

using namespace turnrl;
using turnrl::fuzz::check;

namespace {

const agents::Tokenizer& qwen() {
  static const agents::Tokenizer tokenizer = agents::Tokenizer::load(TURNRL_SHARED_DIR "/tokenizers/qwen");
  return tokenizer;
}

/** NFC of `text`, or nullopt when it is not valid UTF-8. */
std::optional<std::string> nfc(std::string_view text) {
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &mapped, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::optional<std::string> out;
  if (n >= 0) out.emplace(reinterpret_cast<char*>(mapped), n);
  std::free(mapped);
  return out;
}

void check_round_trip(std::string_view text) {
  const agents::Tokenizer& tokenizer = qwen();
  const std::string decoded = tokenizer.decode(tokenizer.encode(text));
  const std::optional<std::string> normal = nfc(text);
  if (!normal) return;  // invalid UTF-8: encoding it must merely not fail
  if (*normal == text) {
    check(decoded == text, "NFC text round-trips through encode and decode");
  } else {
    check(nfc(decoded) == normal, "text round-trips up to NFC");
  }
}

/** Four bytes per id, spread over the vocabulary and a margin outside it on both sides. */
std::vector<int32_t> ids_of(const uint8_t* data, size_t size) {
  const auto span = static_cast<uint32_t>(qwen().vocab_size() + 64);
  std::vector<int32_t> ids;
  for (size_t at = 0; at + 4 <= size; at += 4) {
    const uint32_t raw = data[at] | data[at + 1] << 8 | data[at + 2] << 16 | static_cast<uint32_t>(data[at + 3]) << 24;
    ids.push_back(static_cast<int32_t>(raw % span) - 32);
  }
  return ids;
}

void check_decode(const std::vector<int32_t>& ids) {
  const agents::Tokenizer& tokenizer = qwen();
  bool in_vocabulary = true;
  for (int32_t id : ids) in_vocabulary = in_vocabulary && id >= 0 && static_cast<size_t>(id) < tokenizer.vocab_size();
  std::string text;
  std::vector<uint32_t> ends;
  try {
    text = tokenizer.decode(ids, &ends);
  } catch (const std::out_of_range&) {
    check(!in_vocabulary, "only ids outside the vocabulary are refused");
    return;
  }
  check(in_vocabulary, "ids outside the vocabulary are refused");
  check(ends.size() == ids.size() && (ends.empty() || ends.back() == text.size()), "one end offset per token");
  agents::StreamingDecoder stream(tokenizer);
  std::string streamed;
  for (int32_t id : ids) streamed += stream.push(id);
  streamed += stream.finish();
  check(streamed == text, "streaming decoding gives decode()'s text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_round_trip(std::string_view(reinterpret_cast<const char*>(data), size));
  check_decode(ids_of(data, size));
  return 0;
}
