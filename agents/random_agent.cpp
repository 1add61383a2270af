#include "agents/random_agent.h"

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string_view>

namespace turnrl::agents {

namespace {

/** FNV-1a: a hash that is the same on every platform and run, so a text keeps its action. */
uint64_t stable_hash(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

}  // namespace

RandomAgent::RandomAgent(std::string reply_template, double keyed_share)
    : reply_template_(std::move(reply_template)), keyed_share_(keyed_share) {
  if (!(keyed_share_ >= 0.0 && keyed_share_ <= 1.0)) throw std::invalid_argument("random agent: keyed share must be in [0, 1]");
}

std::vector<AgentReply> RandomAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<AgentReply> replies;
  replies.reserve(prompts.size());
  for (const auto& prompt : prompts) {
    if (!prompt.actions || prompt.actions->empty()) throw std::invalid_argument("random agent: prompt without an action list");
    std::mt19937_64 rng(prompt.seed);
    size_t pick = std::uniform_int_distribution<size_t>(0, prompt.actions->size() - 1)(rng);
    if (keyed_share_ > 0.0 && !prompt.messages.empty() && std::uniform_real_distribution<double>(0.0, 1.0)(rng) < keyed_share_) {
      pick = stable_hash(prompt.messages.back().content) % prompt.actions->size();
    }
    AgentReply reply;
    reply.text = reply_template_.fill((*prompt.actions)[pick].name);
    replies.push_back(std::move(reply));
  }
  return replies;
}

}  // namespace turnrl::agents
