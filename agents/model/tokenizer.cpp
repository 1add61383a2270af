#include "agents/model/tokenizer.h"

#include <filesystem>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace turnrl::agents {
namespace {

using nlohmann::json;

json read_json(const std::string& path, bool required) {
  std::ifstream in(path);
  if (!in) {
    if (required) throw std::runtime_error(path + ": cannot open");
    return json();
  }
  try {
    return json::parse(in);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw std::runtime_error(path + ": invalid JSON: " + e.what());
  }
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/** GPT-2's byte-to-printable-character table, and its inverse as a UTF-8 string -> byte map. */
struct ByteLevelTable {
  std::array<std::string, 256> byte_to_text;
  std::unordered_map<std::string, uint8_t> text_to_byte;

  ByteLevelTable() {
    std::array<uint32_t, 256> code{};
    std::array<bool, 256> printable{};
    for (int b = '!'; b <= '~'; ++b) printable[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) code[b] = printable[b] ? b : next++;
    for (int b = 0; b < 256; ++b) {
      append_utf8(byte_to_text[b], code[b]);
      text_to_byte[byte_to_text[b]] = static_cast<uint8_t>(b);
    }
  }

  /** Byte-level token text -> raw bytes; nullopt-like empty flag when a character is not in the table. */
  bool to_bytes(const std::string& text, std::string& out) const {
    out.clear();
    size_t i = 0;
    while (i < text.size()) {
      const unsigned char lead = text[i];
      const size_t len = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : 4;
      const auto found = text_to_byte.find(text.substr(i, len));
      if (found == text_to_byte.end()) return false;
      out.push_back(static_cast<char>(found->second));
      i += len;
    }
    return true;
  }
};

const ByteLevelTable& byte_level() {
  static const ByteLevelTable table;
  return table;
}

struct RegexDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};

}  // namespace

struct Tokenizer::Impl {
  enum class Model { kBpe, kWordLevel };
  Model model = Model::kBpe;
  std::unordered_map<std::string, int32_t> vocab;  // raw bytes (BPE) or word (WordLevel) -> id
  std::vector<std::string> id_to_text;             // id -> raw bytes or word
  std::unordered_map<std::string, int32_t> decoded_words;  // text a Replace decoder rewrote -> its token
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // (left, right) -> (rank, merged id)
  std::array<int32_t, 256> byte_ids{};
  int32_t unk_id = -1;
  bool nfc = false;
  std::unique_ptr<pcre2_code, RegexDeleter> split;
  bool drop_gaps = false;  // Whitespace pre-tokenizers discard the text between matches
  struct Added {
    std::string text;
    int32_t id;
  };
  std::vector<Added> added;  // longest first
  std::array<bool, 256> added_first_byte{};
  std::vector<int32_t> stop;
  int32_t pad = 0;
  std::string default_system;  // prepended when the folder's template does so (Qwen2.5)
  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
  void encode_segment(std::string_view segment, std::vector<int32_t>& out) const;
};

void Tokenizer::Impl::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (model == Model::kWordLevel) {
    const auto found = vocab.find(std::string(piece));
    if (found != vocab.end()) {
      out.push_back(found->second);
    } else if (unk_id >= 0) {
      out.push_back(unk_id);
    } else {
      throw std::runtime_error("tokenizer: word '" + std::string(piece) + "' is not in the vocabulary and there is no unk_token");
    }
    return;
  }
  const std::string key(piece);
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (const auto hit = cache.find(key); hit != cache.end()) {
      out.insert(out.end(), hit->second.begin(), hit->second.end());
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  for (unsigned char byte : piece) symbols.push_back(byte_ids[byte]);
  // Merge the lowest-ranked adjacent pair, every occurrence left to right, until none applies.
  for (;;) {
    int32_t best_rank = INT32_MAX;
    uint64_t best_pair = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const uint64_t pair = (static_cast<uint64_t>(static_cast<uint32_t>(symbols[i])) << 32) | static_cast<uint32_t>(symbols[i + 1]);
      const auto found = merges.find(pair);
      if (found != merges.end() && found->second.first < best_rank) {
        best_rank = found->second.first;
        best_pair = pair;
      }
    }
    if (best_rank == INT32_MAX) break;
    const int32_t merged = merges.at(best_pair).second;
    const auto left = static_cast<int32_t>(best_pair >> 32), right = static_cast<int32_t>(best_pair & 0xFFFFFFFF);
    size_t write = 0;
    for (size_t read = 0; read < symbols.size(); ++read) {
      if (read + 1 < symbols.size() && symbols[read] == left && symbols[read + 1] == right) {
        symbols[write++] = merged;
        ++read;
      } else {
        symbols[write++] = symbols[read];
      }
    }
    symbols.resize(write);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (cache.size() > 200000) cache.clear();
  cache.emplace(key, std::move(symbols));
}

void Tokenizer::Impl::encode_segment(std::string_view segment, std::vector<int32_t>& out) const {
  if (segment.empty()) return;
  std::string normalized;
  const bool ascii = std::all_of(segment.begin(), segment.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (nfc && !ascii) {
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(segment.data()),
                                            static_cast<utf8proc_ssize_t>(segment.size()), &mapped,
                                            static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (n >= 0) {
      normalized.assign(reinterpret_cast<char*>(mapped), n);
      segment = normalized;
    }
    std::free(mapped);  // invalid UTF-8 is left as it is
  }
  if (!split) {
    encode_piece(segment, out);
    return;
  }
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(split.get(), nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(segment.data());
  size_t offset = 0;
  while (offset < segment.size()) {
    const int rc = pcre2_match(split.get(), subject, segment.size(), offset, 0, match, nullptr);
    if (rc < 0) {
      if (!drop_gaps) encode_piece(segment.substr(offset), out);
      break;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    size_t start = ovector[0], end = ovector[1];
    if (start > offset && !drop_gaps) encode_piece(segment.substr(offset, start - offset), out);
    if (end == start) {  // an empty match cannot make progress: take one byte
      end = start + 1;
    }
    encode_piece(segment.substr(start, end - start), out);
    offset = end;
  }
  pcre2_match_data_free(match);
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  const json root = read_json(path, true);
  auto impl = std::make_unique<Impl>();
  auto field = [&](const json& node, const char* key) -> const json& {
    if (!node.is_object() || !node.contains(key)) throw std::runtime_error(path + ": missing field '" + key + "'");
    return node.at(key);
  };
  try {
    const json& model = field(root, "model");
    const std::string type = model.value("type", "");
    const json& vocab = field(model, "vocab");
    size_t max_id = 0;
    for (const auto& [text, id] : vocab.items()) max_id = std::max<size_t>(max_id, id.get<size_t>());
    for (const auto& token : root.value("added_tokens", json::array())) max_id = std::max<size_t>(max_id, token.at("id").get<size_t>());
    impl->id_to_text.resize(max_id + 1);
    if (type == "BPE") {
      const ByteLevelTable& table = byte_level();
      std::string bytes;
      for (const auto& [text, id] : vocab.items()) {
        if (!table.to_bytes(text, bytes)) throw std::runtime_error(path + ": vocab token '" + text + "' is not byte-level text");
        impl->vocab[bytes] = id.get<int32_t>();
        impl->id_to_text[id.get<size_t>()] = bytes;
      }
      for (int b = 0; b < 256; ++b) {
        const auto found = impl->vocab.find(std::string(1, static_cast<char>(b)));
        if (found == impl->vocab.end()) throw std::runtime_error(path + ": byte-level vocab lacks byte " + std::to_string(b));
        impl->byte_ids[b] = found->second;
      }
      int32_t rank = 0;
      std::string left, right;
      for (const auto& merge : field(model, "merges")) {
        std::string a, b;
        if (merge.is_array()) {
          a = merge.at(0).get<std::string>();
          b = merge.at(1).get<std::string>();
        } else {
          const std::string text = merge.get<std::string>();
          const size_t space = text.find(' ');
          if (space == std::string::npos) throw std::runtime_error(path + ": malformed merge '" + text + "'");
          a = text.substr(0, space);
          b = text.substr(space + 1);
        }
        if (!table.to_bytes(a, left) || !table.to_bytes(b, right)) throw std::runtime_error(path + ": malformed merge");
        const auto l = impl->vocab.find(left), r = impl->vocab.find(right), m = impl->vocab.find(left + right);
        if (l == impl->vocab.end() || r == impl->vocab.end() || m == impl->vocab.end()) {
          throw std::runtime_error(path + ": merge '" + a + " " + b + "' names tokens missing from the vocab");
        }
        const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(l->second)) << 32) | static_cast<uint32_t>(r->second);
        impl->merges.emplace(key, std::make_pair(rank++, m->second));
      }
    } else if (type == "WordLevel") {
      impl->model = Impl::Model::kWordLevel;
      for (const auto& [text, id] : vocab.items()) {
        impl->vocab[text] = id.get<int32_t>();
        impl->id_to_text[id.get<size_t>()] = text;
      }
      if (model.contains("unk_token") && model["unk_token"].is_string()) {
        const auto found = impl->vocab.find(model["unk_token"].get<std::string>());
        if (found != impl->vocab.end()) impl->unk_id = found->second;
      }
      // A Replace decoder (the tiny preset's: joined action names read back with spaces), token by token.
      const json& decoder = root.contains("decoder") ? root["decoder"] : json();
      if (decoder.is_object()) {
        if (decoder.value("type", "") != "Replace") {
          throw std::runtime_error(path + ": decoder '" + decoder.value("type", "") + "' is not supported with WordLevel (Replace)");
        }
        const std::string from = field(field(decoder, "pattern"), "String").get<std::string>();
        const std::string to = field(decoder, "content").get<std::string>();
        if (from.empty()) throw std::runtime_error(path + ": the Replace decoder's pattern is empty");
        for (size_t id = 0; id < impl->id_to_text.size(); ++id) {
          std::string& text = impl->id_to_text[id];
          size_t at = text.find(from);
          if (at == std::string::npos) continue;
          for (; at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
          impl->decoded_words.emplace(text, static_cast<int32_t>(id));
        }
      }
    } else {
      throw std::runtime_error(path + ": model type '" + type + "' is not supported (BPE, WordLevel)");
    }

    const json& normalizer = root.contains("normalizer") ? root["normalizer"] : json();
    if (!normalizer.is_null()) {
      if (normalizer.value("type", "") != "NFC") {
        throw std::runtime_error(path + ": normalizer '" + normalizer.value("type", "") + "' is not supported (NFC)");
      }
      impl->nfc = true;
    }

    // Pre-tokenizer: a Split regex (Isolated) and/or ByteLevel without its own regex, or Whitespace.
    std::string pattern;
    const json& pre = root.contains("pre_tokenizer") ? root["pre_tokenizer"] : json();
    std::vector<json> steps;
    if (pre.is_object() && pre.value("type", "") == "Sequence") {
      for (const auto& step : field(pre, "pretokenizers")) steps.push_back(step);
    } else if (pre.is_object()) {
      steps.push_back(pre);
    }
    for (const json& step : steps) {
      const std::string step_type = step.value("type", "");
      if (step_type == "Split") {
        if (step.value("behavior", "") != "Isolated" || step.value("invert", false)) {
          throw std::runtime_error(path + ": only Isolated, non-inverted Split pre-tokenizers are supported");
        }
        pattern = field(field(step, "pattern"), "Regex").get<std::string>();
      } else if (step_type == "ByteLevel") {
        if (step.value("use_regex", true)) {
          pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
        }
      } else if (step_type == "Whitespace") {
        pattern = R"(\w+|[^\w\s]+)";
        impl->drop_gaps = true;
      } else if (step_type == "WhitespaceSplit") {
        pattern = R"(\S+)";
        impl->drop_gaps = true;
      } else {
        throw std::runtime_error(path + ": pre-tokenizer '" + step_type + "' is not supported");
      }
    }
    if (impl->model == Impl::Model::kWordLevel && pattern.empty()) {
      pattern = R"(\S+)";
      impl->drop_gaps = true;
    }
    if (!pattern.empty()) {
      int error = 0;
      PCRE2_SIZE error_offset = 0;
      pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(),
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &error_offset, nullptr);
      if (!code) throw std::runtime_error(path + ": pre-tokenizer regex does not compile");
      pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
      impl->split.reset(code);
    }

    for (const auto& token : root.value("added_tokens", json::array())) {
      const int32_t id = token.at("id").get<int32_t>();
      const std::string content = token.at("content").get<std::string>();
      impl->added.push_back({content, id});
      impl->id_to_text[id] = content;
      if (!content.empty()) impl->added_first_byte[static_cast<unsigned char>(content[0])] = true;
      if (impl->model == Impl::Model::kWordLevel) impl->vocab[content] = id;
    }
    std::stable_sort(impl->added.begin(), impl->added.end(),
                     [](const Impl::Added& a, const Impl::Added& b) { return a.text.size() > b.text.size(); });
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": malformed tokenizer: " + e.what());
  }

  Tokenizer tokenizer(std::move(impl));
  Impl& self = *tokenizer.impl_;
  auto add_stop = [&](int32_t id) {
    if (id >= 0 && std::find(self.stop.begin(), self.stop.end(), id) == self.stop.end()) self.stop.push_back(id);
  };
  const json config = read_json(dir + "/tokenizer_config.json", false);
  const json generation = read_json(dir + "/generation_config.json", false);
  if (generation.is_object() && generation.contains("eos_token_id")) {
    const json& eos = generation["eos_token_id"];
    if (eos.is_number_integer()) add_stop(eos.get<int32_t>());
    if (eos.is_array()) {
      for (const auto& id : eos) add_stop(id.get<int32_t>());
    }
  }
  if (config.is_object() && config.contains("eos_token") && config["eos_token"].is_string()) {
    add_stop(tokenizer.token_id(config["eos_token"].get<std::string>()));
  }
  add_stop(tokenizer.token_id("<|im_end|>"));
  self.pad = tokenizer.token_id("<|endoftext|>");
  if (config.is_object() && config.contains("pad_token") && config["pad_token"].is_string()) {
    const int32_t pad = tokenizer.token_id(config["pad_token"].get<std::string>());
    if (pad >= 0) self.pad = pad;
  }
  if (self.pad < 0) self.pad = 0;
  static constexpr const char* kQwen25System = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
  if (config.is_object() && config.value("chat_template", "").find(kQwen25System) != std::string::npos) {
    self.default_system = kQwen25System;
  }
  return tokenizer;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  size_t segment_start = 0;
  if (!impl_->added.empty()) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (!impl_->added_first_byte[static_cast<unsigned char>(text[i])]) continue;
      for (const auto& token : impl_->added) {
        if (text.compare(i, token.text.size(), token.text) == 0) {
          impl_->encode_segment(text.substr(segment_start, i - segment_start), out);
          out.push_back(token.id);
          i += token.text.size() - 1;
          segment_start = i + 1;
          break;
        }
      }
    }
  }
  impl_->encode_segment(text.substr(segment_start), out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_reply(std::string_view text) const {
  const auto word = impl_->decoded_words.find(std::string(text));
  return word != impl_->decoded_words.end() ? std::vector<int32_t>{word->second} : encode(text);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, std::vector<uint32_t>* token_ends) const {
  std::string out;
  if (token_ends) token_ends->clear();
  for (int32_t id : ids) {
    if (space_before(id) && !out.empty()) out.push_back(' ');  // space_before checks the id's range
    out += impl_->id_to_text[id];
    if (token_ends) token_ends->push_back(static_cast<uint32_t>(out.size()));
  }
  return out;
}

std::string Tokenizer::chat_text(const std::vector<memory::ChatMessage>& messages, bool add_generation_prompt) const {
  std::string text;
  if (!impl_->default_system.empty() && (messages.empty() || messages.front().role != "system")) {
    text += "<|im_start|>system\n" + impl_->default_system + "<|im_end|>\n";
  }
  for (const auto& message : messages) text += "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n";
  if (add_generation_prompt) text += "<|im_start|>assistant\n";
  return text;
}

std::vector<int32_t> Tokenizer::encode_chat(const std::vector<memory::ChatMessage>& messages, bool add_generation_prompt) const {
  return encode(chat_text(messages, add_generation_prompt));
}

const std::vector<int32_t>& Tokenizer::stop_ids() const { return impl_->stop; }
int32_t Tokenizer::pad_id() const { return impl_->pad; }
bool Tokenizer::space_before(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_to_text.size()) {
    throw std::out_of_range("tokenizer: token id " + std::to_string(id) + " is outside the vocabulary");
  }
  if (impl_->model != Impl::Model::kWordLevel) return false;
  const std::string& text = impl_->id_to_text[id];
  return text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return std::ispunct(static_cast<unsigned char>(c)); });
}
size_t Tokenizer::vocab_size() const { return impl_->id_to_text.size(); }

int32_t Tokenizer::token_id(std::string_view token) const {
  for (const auto& added : impl_->added) {
    if (added.text == token) return added.id;
  }
  const auto found = impl_->vocab.find(std::string(token));
  return found == impl_->vocab.end() ? -1 : found->second;
}

void copy_tokenizer_files(const std::string& from_dir, const std::string& to_dir) {
  namespace fs = std::filesystem;
  if (!fs::exists(fs::path(from_dir) / "tokenizer.json")) throw std::runtime_error(from_dir + "/tokenizer.json: missing");
  fs::create_directories(to_dir);
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    const fs::path source = fs::path(from_dir) / file;
    if (fs::exists(source)) fs::copy_file(source, fs::path(to_dir) / file, fs::copy_options::overwrite_existing);
  }
}

std::string StreamingDecoder::push(int32_t id) {
  if (started_ && tokenizer_.space_before(id)) pending_.push_back(' ');
  started_ = true;
  pending_ += tokenizer_.decode({id});
  // Emit everything up to the last complete UTF-8 character.
  size_t keep = 0;
  for (size_t back = 1; back <= std::min<size_t>(3, pending_.size()); ++back) {
    const unsigned char c = pending_[pending_.size() - back];
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    const size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (need > back) keep = back;
    break;
  }
  std::string ready = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return ready;
}

std::string StreamingDecoder::finish() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

}  // namespace turnrl::agents
