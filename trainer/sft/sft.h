#pragma once
// Supervised fine-tuning on chat transcripts (`turnrl sft`, a config's format stage): how a model
// learns the reply format before reinforcement learning, the way instruct models get theirs.
// Each assistant message is one example: its prompt is the messages before it, encoded as the
// policy sees them when it acts (chat template + assistant header), its target the message's
// tokens and the end-of-turn token; the loss is the mean negative log-likelihood of the target
// tokens only (user, system and template tokens carry no loss). An assistant message with
// `"weight": 0` (OpenAI's fine-tuning convention) is context only: a past turn in the prompt.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "agents/model/tokenizer.h"
#include "trainer/sft/lr_schedule.h"

namespace turnrl::trainer {

class ProcessGroup;  // trainer/dist/distributed.h

/** The stepping (FineTuning: epochs, lr, lr_schedule, batch_size) and where it runs. */
struct SftSettings : FineTuning {
  double max_grad_norm = 1.0;
  uint64_t seed = 0;  // shuffle order
  std::string device = "cpu";
};

struct SftExample {
  std::vector<int32_t> prompt, target;
};

/** Reads JSON Lines of {"messages": [{"role", "content", "weight" (optional, 0 or 1)}, ...]}; errors name the file and line. */
std::vector<SftExample> read_sft_examples(const std::string& path, const agents::Tokenizer& tokenizer);

/** One epoch's batches of example indices: shuffled, then sorted by prompt length within spans of
 *  `kSftGroupBatches` batches, so a batch's rows are of like length (a forward pads every row to the
 *  longest: about 40% of the work for format data's mixed prompt lengths), the batches in shuffled order. */
inline constexpr size_t kSftGroupBatches = 32;
std::vector<std::vector<size_t>> sft_epoch_batches(const std::vector<SftExample>& examples, size_t batch_size, std::mt19937_64& rng);

struct SftReport {
  size_t examples = 0, target_tokens = 0;
  std::vector<double> epoch_loss;  // mean target-token loss of each epoch
};

/** Fine-tunes the model in `model_dir` on the examples of the `data` files (in order, as one set)
 *  and writes the result, a complete Hugging Face folder, to `out_dir`, with `sft_metrics.jsonl`
 *  (loss and learning rate per step) and `sft_loss.svg` beside it.
 *
 *  Data-parallel (`ranks`): every rank reads the same files and model and draws the same batches;
 *  each computes every `size()`-th row of a batch (from its rank on), the gradients are summed over
 *  the ranks before each step, so every rank takes the step one process takes on the whole batch.
 *  Rank 0 writes `out_dir`; the call returns on every rank once it is written. */
SftReport run_sft(const std::vector<std::string>& data, const std::string& model_dir, const std::string& out_dir, const SftSettings& settings,
                  ProcessGroup* ranks = nullptr);

}  // namespace turnrl::trainer
