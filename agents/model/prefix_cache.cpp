#include "agents/model/prefix_cache.h"

#include <map>
#include <set>
#include <stdexcept>

#include "agents/model/qwen2_model.h"

namespace turnrl::agents {
namespace {

/** A copy of tokens [from, from + count) of a block. */
KVBlock slice(const KVBlock& block, int64_t from, int64_t count) { return {block.kv.narrow(3, from, count).clone()}; }

}  // namespace

struct PrefixCache::Impl {
  struct Node {
    std::vector<int32_t> tokens;  // the edge's run of tokens
    KVBlock kv;                   // and their entries
    Node* parent = nullptr;
    std::map<int32_t, std::unique_ptr<Node>> children;  // by their first token
    uint64_t used = 0;            // the clock at its last use
  };
  struct Match {
    Node* deepest = nullptr;  // the last node matched, perhaps in part (nullptr: none)
    int64_t length = 0;       // tokens matched
    int64_t in_deepest = 0;   // of them, the deepest node's
  };

  Impl(uint64_t capacity, uint64_t bytes_per_token) : bytes_per_token(bytes_per_token) {
    if (bytes_per_token == 0) throw std::invalid_argument("prefix cache: bytes per token must be > 0");
    stats.capacity_bytes = capacity;
  }

  /** Walks tokens[0, limit) down the tree. */
  Match walk(const std::vector<int32_t>& tokens, int64_t limit) const {
    Match match;
    const Node* node = &root;
    while (match.length < limit) {
      const auto child = node->children.find(tokens[static_cast<size_t>(match.length)]);
      if (child == node->children.end()) break;
      const Node& next = *child->second;
      int64_t same = 0;
      while (same < static_cast<int64_t>(next.tokens.size()) && match.length + same < limit &&
             next.tokens[static_cast<size_t>(same)] == tokens[static_cast<size_t>(match.length + same)]) {
        ++same;
      }
      match.deepest = child->second.get();
      match.length += same;
      match.in_deepest = same;
      if (same < static_cast<int64_t>(next.tokens.size())) break;
      node = &next;
    }
    return match;
  }

  /** Marks `node` and its ancestors used now. */
  void touch(Node* node) {
    ++clock;
    for (; node != &root; node = node->parent) {
      if (node->children.empty()) {
        leaves.erase({node->used, node});
        leaves.insert({clock, node});
      }
      node->used = clock;
    }
  }

  /** Splits `node` after its first `head` tokens; returns the new node holding them (its parent). */
  Node* split(Node* node, int64_t head) {
    auto front = std::make_unique<Node>();
    front->tokens.assign(node->tokens.begin(), node->tokens.begin() + head);
    front->kv = slice(node->kv, 0, head);
    front->parent = node->parent;
    front->used = node->used;
    const int64_t rest = static_cast<int64_t>(node->tokens.size()) - head;
    node->tokens.erase(node->tokens.begin(), node->tokens.begin() + head);
    node->kv = slice(node->kv, head, rest);
    std::unique_ptr<Node>& place = node->parent->children.at(front->tokens.front());
    node->parent = front.get();
    front->children.emplace(node->tokens.front(), std::move(place));
    place = std::move(front);
    return place.get();
  }

  void evict() {
    while (stats.bytes > stats.capacity_bytes && !leaves.empty()) {
      Node* leaf = leaves.begin()->second;
      leaves.erase(leaves.begin());
      const uint64_t tokens = leaf->tokens.size();
      stats.evicted_tokens += tokens;
      stats.cached_tokens -= tokens;
      stats.bytes -= tokens * bytes_per_token;
      Node* parent = leaf->parent;
      const int32_t key = leaf->tokens.front();  // a copy: erasing destroys the leaf
      parent->children.erase(key);
      if (parent != &root && parent->children.empty()) leaves.insert({parent->used, parent});
    }
  }

  Node root;
  uint64_t clock = 0;
  uint64_t bytes_per_token;
  PrefixCacheStats stats;
  std::set<std::pair<uint64_t, Node*>> leaves;  // by last use: the eviction order
};

PrefixCache::PrefixCache(uint64_t capacity_bytes, uint64_t bytes_per_token)
    : impl_(std::make_unique<Impl>(capacity_bytes, bytes_per_token)) {}
PrefixCache::~PrefixCache() = default;

int64_t PrefixCache::restore(const std::vector<int32_t>& tokens, int64_t limit, SlotCache& cache, int64_t slot) {
  Impl& impl = *impl_;
  ++impl.stats.lookups;
  impl.stats.prompt_tokens += tokens.size();
  const Impl::Match match = impl.walk(tokens, std::min<int64_t>(limit, static_cast<int64_t>(tokens.size())));
  if (match.length == 0) return 0;
  // The path from the root, restored in order.
  std::vector<Impl::Node*> path;
  for (Impl::Node* node = match.deepest; node != &impl.root; node = node->parent) path.push_back(node);
  int64_t at = 0;
  for (auto node = path.rbegin(); node != path.rend(); ++node) {
    const int64_t count = *node == match.deepest ? match.in_deepest : static_cast<int64_t>((*node)->tokens.size());
    cache.copy_in(slot, at, (*node)->kv, count);
    at += count;
  }
  ++impl.stats.hits;
  impl.stats.reused_tokens += static_cast<uint64_t>(at);
  impl.touch(match.deepest);
  return at;
}

void PrefixCache::store(const std::vector<int32_t>& tokens, int64_t count, const SlotCache& cache, int64_t slot) {
  Impl& impl = *impl_;
  const Impl::Match match = impl.walk(tokens, count);
  Impl::Node* parent = &impl.root;
  if (match.deepest) {
    const bool whole = match.in_deepest == static_cast<int64_t>(match.deepest->tokens.size());
    parent = whole ? match.deepest : impl.split(match.deepest, match.in_deepest);
  }
  Impl::Node* deepest = parent;
  if (match.length < count) {
    KVBlock added = cache.copy_out(slot, match.length, count - match.length);
    const uint64_t tokens_added = static_cast<uint64_t>(count - match.length);
    if (parent != &impl.root && parent->children.empty()) {  // a leaf grows in place: a chain stays one node, one copy to restore
      parent->tokens.insert(parent->tokens.end(), tokens.begin() + match.length, tokens.begin() + count);
      parent->kv.kv = torch::cat({parent->kv.kv, added.kv}, 3);
    } else {
      auto leaf = std::make_unique<Impl::Node>();
      leaf->tokens.assign(tokens.begin() + match.length, tokens.begin() + count);
      leaf->kv = std::move(added);
      leaf->parent = parent;
      deepest = leaf.get();
      impl.leaves.insert({leaf->used, deepest});
      parent->children.emplace(leaf->tokens.front(), std::move(leaf));
    }
    impl.stats.cached_tokens += tokens_added;
    impl.stats.bytes += tokens_added * impl.bytes_per_token;
  }
  if (deepest != &impl.root) impl.touch(deepest);
  impl.evict();
}

int64_t PrefixCache::match(const std::vector<int32_t>& tokens) const {
  return impl_->walk(tokens, static_cast<int64_t>(tokens.size())).length;
}

const PrefixCacheStats& PrefixCache::stats() const { return impl_->stats; }

uint64_t kv_bytes_per_token(const ModelConfig& config, uint64_t element_bytes) {
  return 2 * static_cast<uint64_t>(config.num_hidden_layers) * static_cast<uint64_t>(config.num_key_value_heads) *
         static_cast<uint64_t>(config.head_dim()) * element_bytes;
}

}  // namespace turnrl::agents
