// Fuzzes the reply parser: any reply, for one env of every family, in both reply formats, with and
// without extra synonyms; then every history entry of the parsed reply. Nothing may throw.
// Input: byte 0 picks the family, byte 1 the format and synonyms; the rest is the reply.
#include <memory>
#include <random>
#include <string_view>
#include <vector>

#include "envs/registry.h"
#include "envs/reply_parser.h"
#include "fuzz_util.h"

using namespace turnrl;
using turnrl::fuzz::check;

namespace {

/** The first env of every family (building one is slow: Crafter generates its world). */
const std::vector<std::unique_ptr<envs::Env>>& family_envs() {
  static const std::vector<std::unique_ptr<envs::Env>> built = [] {
    std::vector<std::unique_ptr<envs::Env>> out;
    for (const envs::EnvFamily& family : envs::env_families()) out.push_back(envs::make_env(family.ids.front()));
    return out;
  }();
  return built;
}

void check_marker(std::string_view reply, const envs::ParsedReply& parsed, envs::ReplyFormat format) {
  if (!parsed.has_marker) {
    check(parsed.action_begin == 0, "without a marker the action starts at 0");
    return;
  }
  check(format == envs::ReplyFormat::kActionTag, "only the action-tag format finds markers");
  check(parsed.marker_begin < parsed.action_begin && parsed.action_begin <= reply.size(), "marker inside the reply");
  const std::string_view marker = reply.substr(parsed.marker_begin, parsed.action_begin - parsed.marker_begin);
  check(marker == "ACTION:" || marker == "action:" || marker == "Action", "the marker is a marker");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto& all = family_envs();
  const envs::Env& env = *all[data[0] % all.size()];
  const auto format = data[1] & 1 ? envs::ReplyFormat::kActionTag : envs::ReplyFormat::kBalrogNaive;
  // Extra synonyms to valid, invalid and several action names exercise the translation step.
  const envs::Synonyms synonyms = {{"go", {env.actions().front().name}},
                                   {"nothing", {"no such action"}},
                                   {"either", {env.actions().front().name, env.actions().back().name}}};
  const std::string_view reply(reinterpret_cast<const char*>(data + 2), size - 2);

  std::mt19937_64 rng(data[1]);
  const envs::ParsedReply parsed =
      envs::parse_reply(reply, env, format, rng, data[1] & 2 ? synonyms : envs::Synonyms{});
  check(parsed.action >= 0 && parsed.action < env.num_actions(), "the action is one of the env's");
  if (parsed.valid) {
    check(env.actions()[parsed.action].name == parsed.candidate, "a valid reply names its action");
  } else {
    check(parsed.action == env.default_action(), "an invalid reply runs the default action");
  }
  check_marker(reply, parsed, format);

  const std::string& executed = env.actions()[parsed.action].name;
  for (auto entry : {envs::HistoryEntry::kRawReply, envs::HistoryEntry::kExecutedAction,
                     envs::HistoryEntry::kReplyWithExecuted}) {
    const std::string text = envs::history_entry_text(reply, parsed, executed, entry, format);
    if (entry == envs::HistoryEntry::kExecutedAction) check(text == executed, "the executed action's name");
    if (entry == envs::HistoryEntry::kReplyWithExecuted) {
      check(text.ends_with("\nACTION: " + executed + ".\n"), "the reply ends with the executed action");
    }
  }
  return 0;
}
