#pragma once
// Splits a reply into reasoning segments for training-free process rewards (rewards.md section 2):
// a segment starts where a discourse marker starts a word; a segment that would grow past
// max_segment_tokens without a marker ends at its last sentence boundary instead, or is cut hard
// at the limit when it has none.
#include <cstddef>
#include <string>
#include <vector>

namespace turnrl::trainer::rewards {

struct SegmentationConfig {
  /** Case-sensitive; matched where they start a word (at the reply's start or after whitespace). */
  std::vector<std::string> markers = {"Wait,", "Alternatively,", "Actually,", "Hmm,", "Let me ", "I need to ", "So ", "But "};
  size_t max_segment_tokens = 256;
};

/**
 * `token_texts`: the reply's tokens decoded one by one (their concatenation is the reply). The token
 * holding a marker's first character opens a new segment. A sentence boundary is a token whose text,
 * trailing whitespace removed, ends in '.', '!' or '?', or that holds a newline. Returns the index of
 * each segment's last token, ascending; the last is always the reply's last token (none for an empty
 * reply). Throws std::invalid_argument when max_segment_tokens is 0.
 */
std::vector<size_t> segment_ends(const std::vector<std::string>& token_texts, const SegmentationConfig& config);

}  // namespace turnrl::trainer::rewards
