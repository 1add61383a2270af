// A quick check of a model folder: chat-format a prompt, generate, print the reply.
#include <chrono>
#include <cstdio>

#include "agents/model/language_model.h"
#include "tools/cli.h"
#include "tools/command.h"

namespace turnrl::tools {

int run_generate(int argc, char** argv) {
  CLI::App app{"Generate a reply to one user message with a model folder", "turnrl generate"};
  std::string model_dir, prompt, device = "cpu";
  bool raw = false;
  agents::SamplingParams params;
  params.max_new_tokens = 32;
  app.add_option("--model", model_dir, "Hugging Face model folder")->required()->check(CLI::ExistingDirectory);
  app.add_option("--prompt", prompt, "the user message")->required();
  app.add_flag("--raw", raw, "encode the prompt as is, without the chat format");
  app.add_option("--max-new-tokens", params.max_new_tokens, "length limit")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--temperature", params.temperature, "0 = greedy")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--top-k", params.top_k, "0 = off")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--top-p", params.top_p, "1 = off")->check(CLI::Range(0.0f, 1.0f))->capture_default_str();
  app.add_option("--seed", params.seed, "sampling seed")->capture_default_str();
  app.add_option("--device", device, "cpu, cuda, cuda:1, ...")->capture_default_str();
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  params.greedy = params.temperature == 0.0f;

  auto model = agents::LanguageModel::load(model_dir, device);
  const auto& tokenizer = model->tokenizer();
  const std::vector<int32_t> ids = raw ? tokenizer.encode(prompt) : tokenizer.encode_chat({{"user", prompt}}, true);
  const auto start = std::chrono::steady_clock::now();
  const agents::Generation reply = model->generate({ids}, params)[0];
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<int32_t> shown = reply.ids;
  if (reply.stopped && !shown.empty()) shown.pop_back();
  std::printf("%s\n", tokenizer.decode(shown).c_str());
  std::fprintf(stderr, "[%zu prompt tokens, %zu generated, %s, %.1f tokens/s]\n", ids.size(), reply.ids.size(),
               reply.stopped ? "stopped" : "length limit", reply.ids.size() / seconds);
  return 0;
}

}  // namespace turnrl::tools
