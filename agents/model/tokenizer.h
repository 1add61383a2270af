#pragma once
// Hugging Face `tokenizer.json` tokenizers: byte-level BPE (Qwen2/2.5/3) and WordLevel (the tiny
// preset), with added/special tokens matched in text and the ChatML chat format. Torch-free.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "memory/chat_message.h"

namespace turnrl::agents {

/**
 * Immutable after load; encode/decode are safe to call from several threads.
 * Errors (missing file, bad JSON, unsupported model or pre-tokenizer type) throw
 * std::runtime_error naming the file and the field.
 */
class Tokenizer {
 public:
  /** Loads `dir/tokenizer.json` (and `tokenizer_config.json`, `generation_config.json` if present). */
  static Tokenizer load(const std::string& dir);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  /** Special tokens in the text are matched as such; no BOS is added. */
  std::vector<int32_t> encode(std::string_view text) const;
  /** The tokens a policy writes for `text` as a whole reply: the one token that decodes to it
   *  where the decoder spells a word with spaces (the tiny preset's `Move_West` reads `Move West`),
   *  else encode(text). Fine-tuning targets and the action vocabulary use it, so a cloned reply is
   *  the token the policy samples. */
  std::vector<int32_t> encode_reply(std::string_view text) const;
  /** Raw bytes of the tokens; may end in an incomplete UTF-8 sequence. Word-level vocabularies
   *  join words with spaces, punctuation attached to the word before it. `token_ends`, when given,
   *  receives the text's length once each token is decoded. */
  std::string decode(const std::vector<int32_t>& ids, std::vector<uint32_t>* token_ends = nullptr) const;

  /** ChatML: `<|im_start|>role\ncontent<|im_end|>\n` per message, then `<|im_start|>assistant\n`. */
  std::string chat_text(const std::vector<memory::ChatMessage>& messages, bool add_generation_prompt) const;
  std::vector<int32_t> encode_chat(const std::vector<memory::ChatMessage>& messages, bool add_generation_prompt) const;

  /** Tokens that end a reply: the config's EOS token(s) and `<|im_end|>`. */
  const std::vector<int32_t>& stop_ids() const;
  int32_t pad_id() const;
  size_t vocab_size() const;
  /** Whether decoding puts a space before token `id` when text precedes it: word-level
   *  vocabularies join words with spaces, except before punctuation ("ACTION" ":" reads "ACTION:",
   *  the marker the reply parser looks for); byte-level tokens carry their own spaces. */
  bool space_before(int32_t id) const;
  /** Id of an exact token string, or -1. */
  int32_t token_id(std::string_view token) const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/** Copies the files Tokenizer::load reads (tokenizer.json, tokenizer_config.json,
 *  generation_config.json; those present) from one model folder to another. */
void copy_tokenizer_files(const std::string& from_dir, const std::string& to_dir);

/** Turns a stream of token ids into text, holding back bytes of an incomplete UTF-8 character. */
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  /** Returns the complete characters that `id` finishes. */
  std::string push(int32_t id);
  /** The held-back bytes (an incomplete character) at the end of the stream. */
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
  bool started_ = false;
};

}  // namespace turnrl::agents
