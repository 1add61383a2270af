#pragma once
// The agent interface used by rollouts and evaluation: a batch of chat prompts in, one reply per
// prompt out (act), or one prompt in and its reply delivered later (submit). Torch-free and
// fiber-free; token-level agents also return ids and sampling log-probs.
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "envs/env.h"
#include "memory/chat_message.h"
#include "memory/history.h"

namespace turnrl::agents {

struct AgentPrompt {
  std::vector<memory::ChatMessage> messages;
  /** The env's actions (for agents that choose among them directly, e.g. random). */
  const std::vector<envs::ActionSpec>* actions = nullptr;
  /** Per-request seed so that a reply does not depend on which batch the prompt landed in. */
  uint64_t seed = 0;
  /** The env the prompt describes, in its state at this turn, for agents that read the state (the
   *  scripted expert); null where the episode runs elsewhere. */
  const envs::Env* env = nullptr;
};

struct AgentReply {
  std::string text;
  /** Token-level agents only (empty otherwise). */
  std::vector<int32_t> prompt_ids, response_ids;
  std::vector<float> logprobs;  // one per response id, under the sampling distribution
  /** Byte length of `text` once each response token is decoded (token-level agents only). */
  std::vector<uint32_t> token_text_ends;
  bool truncated = false;       // the reply hit the length limit
  /** What the reply cost in tokens: the server's `usage` (http) or the ids counted (token-level
   *  agents); 0 where unknown. */
  size_t prompt_tokens = 0, completion_tokens = 0;
};

/** What a submitted prompt comes back as: its reply, or the error that kept the agent from one
 *  (then `reply` is empty and the caller plays its default action). */
struct AgentResult {
  AgentReply reply;
  std::exception_ptr error;
};
using ReplyHandler = std::function<void(AgentResult)>;

class Agent {
 public:
  virtual ~Agent() = default;
  virtual std::string name() const = 0;
  /** One reply per prompt, in order. May be called from a thread other than the caller's env
   *  work, but never concurrently with itself. */
  virtual std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) = 0;
  /** One prompt, answered through `on_reply` exactly once, with the reply or the error, on any
   *  thread, possibly before submit returns. `prompt.actions` must stay valid until then. Called
   *  from one thread at a time, never concurrently with act(). The default answers at once with
   *  act({prompt}); asynchronous agents queue the request and return, so that many are in flight. */
  virtual void submit(AgentPrompt prompt, ReplyHandler on_reply) {
    AgentResult result;
    try {
      std::vector<AgentReply> replies = act({std::move(prompt)});
      if (replies.size() != 1) {
        throw std::runtime_error("agent " + name() + " returned " + std::to_string(replies.size()) + " replies for 1 prompt");
      }
      result.reply = std::move(replies.front());
    } catch (...) {
      result.error = std::current_exception();
    }
    on_reply(std::move(result));
  }
  /** True when submit() returns before the reply (requests overlap); false when it is the default
   *  above, and callers that want batches gather prompts for act() instead. */
  virtual bool asynchronous() const { return false; }
  /** True when act() does more than submit() each prompt and wait (a local model's batched
   *  forward pass): lock-step calls it. Otherwise lock-step submits a turn's prompts one by one, so
   *  that a failed request costs only its own episode the turn. */
  virtual bool batched_act() const { return true; }
  /** Token counter for the memory budget; null when the agent has no tokenizer. */
  virtual memory::TokenCounter token_counter() const { return nullptr; }
  /** Longest prompt in tokens the agent accepts (0: no limit); memory windows shrink to fit it. */
  virtual size_t max_prompt_tokens() const { return 0; }
  /** Token-level agents (local models) return prompt and response ids, sampling log-probs and
   *  token text ends with every reply: what a learner needs to train on the replies. */
  virtual bool token_level() const { return false; }
  /** Prompt ids as act() would feed them (for bootstrap values); empty without a tokenizer. */
  virtual std::vector<int32_t> encode_prompt(const std::vector<memory::ChatMessage>& /*messages*/) const { return {}; }
};

}  // namespace turnrl::agents
