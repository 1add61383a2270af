#include "agents/model/language_model.h"

#include <filesystem>
#include <optional>

#include "agents/model/device.h"
#include "agents/model/generation.h"
#include "agents/model/qwen2_model.h"

namespace turnrl::agents {

struct LanguageModel::Impl {
  Qwen2Model model{nullptr};
  std::optional<Tokenizer> tokenizer;  // absent for bare model folders (token ids only)
  torch::Device device{torch::kCPU};
  int32_t pad_id = 0;
  std::vector<int32_t> stop_ids;
};

LanguageModel::LanguageModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LanguageModel::~LanguageModel() = default;

std::unique_ptr<LanguageModel> LanguageModel::load(const std::string& dir, const std::string& device_name) {
  auto impl = std::make_unique<Impl>();
  impl->device = resolve_device(device_name);
  impl->model = load_qwen2(dir, false, impl->device);
  impl->model->eval();
  if (std::filesystem::exists(dir + "/tokenizer.json")) {
    impl->tokenizer = Tokenizer::load(dir);
    impl->pad_id = impl->tokenizer->pad_id();
    impl->stop_ids = impl->tokenizer->stop_ids();
  }
  return std::unique_ptr<LanguageModel>(new LanguageModel(std::move(impl)));
}

std::unique_ptr<LanguageModel> LanguageModel::over(Qwen2Model module, Tokenizer tokenizer) {
  auto impl = std::make_unique<Impl>();
  impl->device = module->parameters().front().device();
  impl->model = std::move(module);
  impl->pad_id = tokenizer.pad_id();
  impl->stop_ids = tokenizer.stop_ids();
  impl->tokenizer = std::move(tokenizer);
  return std::unique_ptr<LanguageModel>(new LanguageModel(std::move(impl)));
}

const Tokenizer& LanguageModel::tokenizer() const {
  if (!impl_->tokenizer) throw std::logic_error("this model folder has no tokenizer.json");
  return *impl_->tokenizer;
}

bool LanguageModel::has_tokenizer() const { return impl_->tokenizer.has_value(); }
const std::vector<int32_t>& LanguageModel::stop_ids() const { return impl_->stop_ids; }
Qwen2Model& LanguageModel::module() { return impl_->model; }

int64_t LanguageModel::context_length() const { return impl_->model->config().max_position_embeddings; }

int64_t LanguageModel::parameter_count() const {
  int64_t total = 0;
  for (const auto& p : impl_->model->parameters()) total += p.numel();
  return total;
}

void LanguageModel::save(const std::string& dir) { save_qwen2(impl_->model, dir); }

std::vector<Generation> LanguageModel::generate(const std::vector<std::vector<int32_t>>& prompts, const SamplingParams& params) {
  return generate_tokens(impl_->model, prompts, params, impl_->pad_id, impl_->stop_ids);
}

std::vector<std::vector<float>> LanguageModel::score(const std::vector<std::vector<int32_t>>& prompts,
                                                     const std::vector<std::vector<int32_t>>& responses,
                                                     const std::vector<int32_t>& allowed_tokens) {
  torch::NoGradGuard no_grad;
  const ResponseBatch batch = make_response_batch(prompts, responses, impl_->pad_id, impl_->device);
  const torch::Tensor logprobs = response_logprobs(impl_->model, batch, allowed_tokens).to(torch::kCPU);
  // Responses are right-aligned in the batch: a shorter one's log-probs are the last columns.
  const auto table = logprobs.accessor<float, 2>();
  std::vector<std::vector<float>> out(prompts.size());
  for (size_t b = 0; b < prompts.size(); ++b) {
    const int64_t offset = batch.response_width - static_cast<int64_t>(responses[b].size());
    for (size_t t = 0; t < responses[b].size(); ++t) out[b].push_back(table[static_cast<int64_t>(b)][offset + static_cast<int64_t>(t)]);
  }
  return out;
}

}  // namespace turnrl::agents
