// `turnrl serve`: a model folder behind an OpenAI-compatible chat API (tools/serve/chat_server.h).
#include <cstdio>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "agents/model/compute_threads.h"
#include "tools/cli.h"
#include "tools/command.h"
#include "tools/serve/chat_server.h"

namespace turnrl::tools {

int run_serve(int argc, char** argv) {
  CLI::App app{"Serve a model folder with an OpenAI-compatible API: GET /v1/models, POST /v1/chat/completions\n"
               "(messages, max_tokens, temperature, top_p, seed, stop, n, stream). Requests are decoded\n"
               "together with continuous batching; any \"model\" name in a request is accepted.",
               "turnrl serve"};
  std::string model_dir, device = "cpu";
  serve::ChatServerOptions options;
  int threads = 0;
  app.add_option("--model", model_dir, "Hugging Face model folder (with tokenizer.json)")->required()->check(CLI::ExistingDirectory);
  app.add_option("--port", options.port, "TCP port; 0 picks a free one (printed)")->capture_default_str();
  app.add_option("--host", options.host, "address to bind; anything but loopback exposes the model without authentication")
      ->capture_default_str();
  app.add_option("--name", options.model_name, "model id in /v1/models and replies (default: the folder's name)");
  app.add_option("--device", device, "cpu, cuda, cuda:1, ...")->capture_default_str();
  app.add_option("--max-batch", options.max_batch, "sequences decoded together (more wait their turn)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--prefix-cache-mb", options.prefix_cache_mb,
                 "memory for the keys and values of prompt prefixes seen before, reused by prompts that begin with them; 0: no cache")
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU compute threads (0: torch's default)")->check(CLI::NonNegativeNumber);
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  if (options.model_name.empty()) options.model_name = std::filesystem::path(model_dir).lexically_normal().filename().string();
  if (options.model_name.empty()) options.model_name = std::filesystem::path(model_dir).lexically_normal().parent_path().filename().string();
  if (threads > 0) agents::set_compute_threads(threads);
  if (options.host != "127.0.0.1" && options.host != "::1") {
    spdlog::warn("serve: {} is reachable from other machines and has no authentication", options.host);
  }

  serve::ChatServer server(agents::LanguageModel::load(model_dir, device), options);
  // Scripts and tests read the bound address (a port of 0 resolved) from this line.
  std::printf("listening on %s\n", server.base_url().c_str());
  std::fflush(stdout);
  server.run(true);
  return 0;
}

}  // namespace turnrl::tools
