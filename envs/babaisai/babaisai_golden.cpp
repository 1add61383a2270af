#include "envs/babaisai/babaisai_golden.h"

#include <cstdio>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/babaisai/babaisai_env.h"
#include "envs/babaisai/babaisai_family.h"
#include "envs/common/json_integer.h"

namespace turnrl::envs::babaisai {
namespace {

constexpr std::string_view kGoldenPrefix = "env/";

std::string cell_token(const Object& o) {
  switch (o.kind) {
    case Kind::kBorder: return "wall";
    case Kind::kThing:
      return std::string(thing_type_name(o.thing)) + ":" + std::string(color_name(o.color)) + ":d" +
             std::to_string(o.dir);
    default: return std::string(kind_type_name(o)) + ":" + std::string(word(o));
  }
}

nlohmann::json rng_trace_json(const std::vector<RngCall>& trace) {
  nlohmann::json calls = nlohmann::json::array();
  for (const RngCall& call : trace) {
    if (!call.is_choice) {
      calls.push_back({"randint", nlohmann::json::array({call.low, call.high}), nlohmann::json::object(), call.result.front()});
    } else if (call.size == 0) {
      calls.push_back({"choice", nlohmann::json::array({call.low}), nlohmann::json::object(), call.result.front()});
    } else {
      calls.push_back({"choice", nlohmann::json::array({call.low}), {{"size", call.size}, {"replace", call.replace}}, call.result});
    }
  }
  return calls;
}

/** Reads the Python string literal starting at `text[pos]` (a quote); nullopt if malformed. */
std::optional<std::string> python_string_literal(const std::string& text, size_t pos) {
  if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"')) return std::nullopt;
  const char quote = text[pos];
  std::string out;
  for (size_t i = pos + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == quote) return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= text.size()) return std::nullopt;
    switch (text[i]) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

/** Replays the BabaIsAI golden format (../shared/spec/babyai_baba.md C.3). */
class BabaReplayer final : public GoldenReplayer {
 public:
  explicit BabaReplayer(std::unique_ptr<BabaIsAIEnv> env) : env_(std::move(env)) { env_->set_rng_trace(&trace_); }

  nlohmann::json replay(const nlohmann::json& golden) override {
    nlohmann::json out;
    trace_.clear();
    if (golden.at("type") == "reset") {
      env_->reset(json_integer<uint64_t>(golden.at("seed")));
      const World& world = env_->world();
      out["width"] = world.grid.width();
      out["height"] = world.grid.height();
      out["max_steps"] = env_->max_steps();
      out["target_plan"] = env_->target_plan();
      out["rng_trace"] = rng_trace_json(trace_);
    } else {
      out = replay_step(*env_, golden);
      if (env_->last_step_reset_level()) {
        out["wrapper_reset"] = true;
        out["rng_trace"] = rng_trace_json(trace_);
      }
    }
    add_state(out);
    return out;
  }

  bool is_input_field(const std::string& key) const override {
    return key == "type" || key == "env_id" || key == "seed" || key == "actions" || key == "t" || key == "action";
  }

  std::optional<EnvApiLine> env_api_line(const nlohmann::json& golden) override {
    const nlohmann::json observation = {{"long_term", expected_for("text", golden).value_or(golden.at("text"))}};
    if (golden.at("type") != "reset") return env_api_step(golden, observation);
    EnvApiLine line;
    line.is_reset = true;
    line.env_id = env_->id();
    line.options = nlohmann::json::object();
    line.seed = json_integer<uint64_t>(golden.at("seed"));
    line.expected = {{"observation", observation}, {"max_steps", golden.at("max_steps")}};
    return line;
  }

  /** On a wrapper-reset step the golden text holds BALROG's Python repr of the new observation
   *  (addresses normalised); we emit that observation's text in its place, so the expected text
   *  is the golden one with the repr replaced by the `long_term_context` it contains. */
  std::optional<nlohmann::json> expected_for(const std::string& key, const nlohmann::json& golden) const override {
    if (key != "text" || !golden.value("wrapper_reset", false) || !golden.at(key).is_string()) return std::nullopt;
    const std::string text = golden.at(key).get<std::string>();
    static constexpr std::string_view kReprStart = "Objects on the map:\ndefaultdict(";
    static constexpr std::string_view kContextKey = "'long_term_context': ";
    const size_t repr = text.rfind(kReprStart);
    if (repr == std::string::npos) return std::nullopt;
    const size_t context = text.find(kContextKey, repr);
    if (context == std::string::npos) return std::nullopt;
    const std::optional<std::string> inner = python_string_literal(text, context + kContextKey.size());
    if (!inner) return std::nullopt;
    return text.substr(0, repr + std::string_view("Objects on the map:\n").size()) + *inner;
  }

 private:
  void add_state(nlohmann::json& out) const {
    const World& world = env_->world();
    const Grid& grid = world.grid;
    out["agent_pos"] = nlohmann::json::array({world.agent_pos.x, world.agent_pos.y});
    out["agent_dir"] = world.agent_dir;
    out["step_count"] = world.step_count;
    nlohmann::json rules = nlohmann::json::array();
    for (const Rule& rule : world.rules.rules()) {
      if (rule.replacement) {
        rules.push_back({{"object1", std::string(thing_type_name(rule.object))}, {"object2", std::string(thing_type_name(rule.object2))}});
      } else {
        rules.push_back({{"object", std::string(thing_type_name(rule.object))}, {"property", std::string(property_name(rule.property))}});
      }
    }
    out["rules"] = std::move(rules);
    std::vector<std::string> layout(grid.height());
    std::vector<std::string> obs(grid.height());
    for (int y = 0; y < grid.height(); ++y) {
      for (int x = 0; x < grid.width(); ++x) {
        const auto& stack = grid.stack({x, y});
        if (x > 0) layout[y] += ' ';
        if (stack.empty()) layout[y] += '.';
        for (size_t i = 0; i < stack.size(); ++i) {
          if (i > 0) layout[y] += '+';
          layout[y] += cell_token(world.objects[stack[i]]);
        }
        char hex[8];
        if (stack.empty()) {
          std::snprintf(hex, sizeof hex, "%02x0000", kEmptyTypeCode);
        } else {
          const Object& top = world.objects[stack.back()];
          std::snprintf(hex, sizeof hex, "%02x%02x00", type_code(top), color_code(top));
        }
        obs[y] += hex;
      }
    }
    out["layout"] = layout;
    out["obs"] = obs;
    out["text"] = env_->observe_text().long_term;
  }

  std::unique_ptr<BabaIsAIEnv> env_;
  std::vector<RngCall> trace_;
};

}  // namespace

std::unique_ptr<GoldenReplayer> make_golden_replayer(const nlohmann::json& first) {
  const std::string env_id = first.value("env_id", "");
  if (!env_id.starts_with(kGoldenPrefix)) return nullptr;
  const LevelId* level = find_level(std::string_view(env_id).substr(kGoldenPrefix.size()));
  if (!level) throw std::runtime_error("golden file names an unknown BabaIsAI level '" + env_id + "'");
  return std::make_unique<BabaReplayer>(
      std::make_unique<BabaIsAIEnv>(std::string(kIdPrefix) + level->name, level->config));
}

}  // namespace turnrl::envs::babaisai
