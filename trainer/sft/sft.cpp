#include "trainer/sft/sft.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "agents/model/device.h"
#include "agents/model/generation.h"
#include "agents/model/qwen2_model.h"
#include "trainer/dist/distributed.h"
#include "trainer/sft/lr_schedule.h"
#include "trainer/algo/ppo_update.h"
#include "trainer/sft/sft_step.h"
#include "trainer/run/svg_chart.h"

namespace turnrl::trainer {

std::vector<SftExample> read_sft_examples(const std::string& path, const agents::Tokenizer& tokenizer) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  const std::vector<int32_t>& stops = tokenizer.stop_ids();
  if (stops.empty()) throw std::runtime_error(path + ": the tokenizer has no end-of-turn token to end replies with");
  std::vector<SftExample> examples;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    std::vector<memory::ChatMessage> messages;
    std::vector<bool> targets;  // an assistant message of weight 1 (the default) is learned; of weight 0, context only
    try {
      const nlohmann::json record = nlohmann::json::parse(line);
      for (const nlohmann::json& message : record.at("messages")) {
        messages.push_back({message.at("role").get<std::string>(), message.at("content").get<std::string>()});
        const nlohmann::json weight = message.value("weight", nlohmann::json(1));
        if (weight != 0 && weight != 1) throw std::runtime_error(where + "a message's weight must be 0 or 1, got " + weight.dump());
        targets.push_back(messages.back().role == "assistant" && weight == 1);
      }
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(where + "expected {\"messages\": [{\"role\": ..., \"content\": ..., \"weight\": 0|1 (optional)}, ...]} (" +
                               e.what() + ")");
    }
    bool any = false;
    for (size_t k = 0; k < messages.size(); ++k) {
      if (!targets[k]) continue;
      any = true;
      SftExample example;
      example.prompt = tokenizer.encode_chat({messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(k)}, true);
      example.target = tokenizer.encode_reply(messages[k].content);
      example.target.push_back(stops.front());
      examples.push_back(std::move(example));
    }
    if (!any) throw std::runtime_error(where + "a transcript without an assistant message of weight 1 teaches nothing");
  }
  if (examples.empty()) throw std::runtime_error(path + ": no transcripts");
  return examples;
}

std::vector<std::vector<size_t>> sft_epoch_batches(const std::vector<SftExample>& examples, size_t batch_size, std::mt19937_64& rng) {
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const size_t span = batch_size * kSftGroupBatches;
  std::vector<std::vector<size_t>> batches;
  for (size_t first = 0; first < order.size(); first += span) {
    const auto begin = order.begin() + static_cast<std::ptrdiff_t>(first);
    const auto end = order.begin() + static_cast<std::ptrdiff_t>(std::min(first + span, order.size()));
    std::stable_sort(begin, end, [&](size_t a, size_t b) { return examples[a].prompt.size() < examples[b].prompt.size(); });
    for (auto it = begin; it < end;) {
      const auto next = it + static_cast<std::ptrdiff_t>(std::min(batch_size, static_cast<size_t>(end - it)));
      batches.emplace_back(it, next);
      it = next;
    }
  }
  std::shuffle(batches.begin(), batches.end(), rng);
  return batches;
}

SftStepResult sft_step(agents::Qwen2Model& model, torch::optim::Optimizer& optimizer, const std::vector<std::vector<int32_t>>& prompts,
                       const std::vector<std::vector<int32_t>>& targets, int32_t pad_id, const torch::Device& device,
                       double max_grad_norm, ProcessGroup* ranks, double batch_tokens) {
  if (!ranks && prompts.empty()) throw std::invalid_argument("sft_step: an empty batch");
  if (ranks && !(batch_tokens > 0)) throw std::invalid_argument("sft_step: a data-parallel step needs the batch's target token count");
  torch::Tensor loss;
  double tokens = 0.0;
  if (!prompts.empty()) {
    const agents::ResponseBatch rb = agents::make_response_batch(prompts, targets, pad_id, device);
    const torch::Tensor mask = rb.response_mask.to(torch::kFloat);
    tokens = mask.sum().item<double>();
    loss = -(agents::response_logprobs(model, rb, {}) * mask).sum() / (ranks ? batch_tokens : tokens);
  }
  clipped_step(optimizer, model->parameters(), loss, max_grad_norm, ranks);
  RankTotals totals;
  totals.add("loss", loss.defined() ? loss.item<double>() : 0.0);  // each rank's share of the batch's mean
  totals.add("tokens", tokens);
  totals.sum_over(ranks);
  return {totals["loss"], totals["tokens"]};
}

SftReport run_sft(const std::vector<std::string>& data, const std::string& model_dir, const std::string& out_dir, const SftSettings& settings,
                  ProcessGroup* ranks) {
  if (data.empty()) throw std::invalid_argument("sft: no data files");
  if (settings.epochs <= 0 || settings.batch_size <= 0 || settings.lr <= 0) {
    throw std::invalid_argument("sft: epochs, batch size and learning rate must be > 0");
  }
  if (std::filesystem::weakly_canonical(out_dir) == std::filesystem::weakly_canonical(model_dir)) {
    throw std::invalid_argument("sft: --out must be another folder than --model (" + out_dir + ")");
  }
  const agents::Tokenizer tokenizer = agents::Tokenizer::load(model_dir);
  std::vector<SftExample> examples;
  for (const std::string& path : data) {
    std::vector<SftExample> part = read_sft_examples(path, tokenizer);
    examples.insert(examples.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  const torch::Device device = agents::resolve_device(settings.device, ranks ? ranks->rank() : 0);
  agents::Qwen2Model model = agents::load_qwen2(model_dir, false, device);
  model->train();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(settings.lr).weight_decay(0.0));

  const size_t rank = ranks ? static_cast<size_t>(ranks->rank()) : 0, world = ranks ? static_cast<size_t>(ranks->size()) : 1;
  const bool writes = rank == 0;

  SftReport report;
  report.examples = examples.size();
  for (const SftExample& e : examples) report.target_tokens += e.target.size();
  std::ofstream metrics;
  if (writes) {
    std::filesystem::create_directories(out_dir);
    metrics.open(out_dir + "/sft_metrics.jsonl", std::ios::trunc);
  }
  std::vector<std::pair<double, double>> curve;
  std::mt19937_64 rng(settings.seed);
  const size_t batch = static_cast<size_t>(settings.batch_size);
  const size_t steps_per_epoch = (examples.size() + batch - 1) / batch;
  const size_t total_steps = steps_per_epoch * static_cast<size_t>(settings.epochs);
  spdlog::info("sft: {} examples ({} target tokens) from {}, {} epochs of {} steps", examples.size(), report.target_tokens,
               fmt::join(data, ", "), settings.epochs, steps_per_epoch);
  const auto start = std::chrono::steady_clock::now();
  auto last_log = start;
  size_t step = 0;
  double tokens_done = 0;
  for (int epoch = 0; epoch < settings.epochs; ++epoch) {
    double loss_sum = 0, token_sum = 0;
    for (const std::vector<size_t>& rows : sft_epoch_batches(examples, batch, rng)) {
      std::vector<std::vector<int32_t>> prompts, targets;
      double batch_tokens = 0;
      for (size_t j = 0; j < rows.size(); ++j) {
        const SftExample& example = examples[rows[j]];
        batch_tokens += static_cast<double>(example.target.size());
        if (j % world != rank) continue;  // interleaved: the rows of a batch are sorted by prompt length
        prompts.push_back(example.prompt);
        targets.push_back(example.target);
      }
      for (auto& group : optimizer.param_groups()) {
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(scheduled_lr(settings.lr_schedule, settings.lr, step, total_steps));
      }
      const double lr = static_cast<torch::optim::AdamWOptions&>(optimizer.param_groups().front().options()).lr();
      const SftStepResult result =
          sft_step(model, optimizer, prompts, targets, tokenizer.pad_id(), device, settings.max_grad_norm, ranks, batch_tokens);
      ++step;
      loss_sum += result.loss * result.tokens;
      token_sum += result.tokens;
      tokens_done += result.tokens;
      curve.push_back({static_cast<double>(step), result.loss});
      if (writes) metrics << nlohmann::json{{"step", step}, {"epoch", epoch + 1}, {"loss", result.loss}, {"lr", lr}}.dump() << "\n";
      const auto now = std::chrono::steady_clock::now();
      if (now - last_log > std::chrono::seconds(5) || step == total_steps) {
        last_log = now;
        const double seconds = std::chrono::duration<double>(now - start).count();
        spdlog::info("sft step {}/{} (epoch {}) | loss {:.4f} | {:.0f} tokens/s | ETA {:.1f} min", step, total_steps, epoch + 1, result.loss,
                     tokens_done / std::max(1e-9, seconds), seconds / static_cast<double>(step) * static_cast<double>(total_steps - step) / 60.0);
      }
    }
    report.epoch_loss.push_back(loss_sum / std::max(1.0, token_sum));
    spdlog::info("sft epoch {}/{}: mean loss {:.4f}", epoch + 1, settings.epochs, report.epoch_loss.back());
  }
  model->eval();
  if (writes) {
    if (!metrics.flush()) throw std::runtime_error("write error on " + out_dir + "/sft_metrics.jsonl");
    agents::save_qwen2(model, out_dir, model_dir);
    double y_max = 0;
    for (const auto& point : curve) y_max = std::max(y_max, point.second);
    std::ofstream(out_dir + "/sft_loss.svg") << svg_line_chart("supervised fine-tuning: loss on the reply tokens", "step",
                                                               "loss (nats/token)", y_max, {{"loss", curve, 1.5}});
    spdlog::info("sft: wrote {}", out_dir);
  }
  if (ranks) ranks->barrier();  // the model is written before any rank reads it
  return report;
}

}  // namespace turnrl::trainer
