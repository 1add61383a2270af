#include "trainer/rewards/segmentation.h"

#include <cctype>
#include <stdexcept>

namespace turnrl::trainer::rewards {
namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

/** Per token: whether a marker starts inside it (at a word start). */
std::vector<bool> marker_starts(const std::vector<std::string>& token_texts, const std::vector<std::string>& markers) {
  std::string text;
  std::vector<size_t> token_of_char;
  for (size_t i = 0; i < token_texts.size(); ++i) {
    text += token_texts[i];
    token_of_char.resize(text.size(), i);
  }
  std::vector<bool> starts(token_texts.size(), false);
  for (const std::string& marker : markers) {
    if (marker.empty()) continue;
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
      if (at == 0 || is_space(text[at - 1])) starts[token_of_char[at]] = true;
    }
  }
  return starts;
}

bool ends_sentence(const std::string& token) {
  if (token.find('\n') != std::string::npos) return true;
  size_t end = token.size();
  while (end > 0 && is_space(token[end - 1])) --end;
  return end > 0 && (token[end - 1] == '.' || token[end - 1] == '!' || token[end - 1] == '?');
}

}  // namespace

std::vector<size_t> segment_ends(const std::vector<std::string>& token_texts, const SegmentationConfig& config) {
  if (config.max_segment_tokens == 0) throw std::invalid_argument("segmentation: max_segment_tokens must be positive");
  const std::vector<bool> opens = marker_starts(token_texts, config.markers);
  const size_t n = token_texts.size();
  std::vector<size_t> ends;
  size_t start = 0;
  while (start < n) {
    size_t end = start;  // the natural end: before the next marker, or the reply's last token
    while (end + 1 < n && !opens[end + 1]) ++end;
    if (end - start + 1 > config.max_segment_tokens) {
      const size_t limit = start + config.max_segment_tokens - 1;
      end = limit;  // hard cut unless a sentence boundary comes earlier
      for (size_t k = limit + 1; k-- > start;) {
        if (ends_sentence(token_texts[k])) {
          end = k;
          break;
        }
      }
    }
    ends.push_back(end);
    start = end + 1;
  }
  return ends;
}

}  // namespace turnrl::trainer::rewards
