#include "envs/arith/arith_family.h"

#include <stdexcept>

#include "envs/arith/arith_env.h"

namespace turnrl::envs::arith {
namespace {

const std::vector<IntOption>& options_accepted() {
  static const std::vector<IntOption> options = {{"steps", 3, 1, 8, "operations per problem"},
                                                 {"max_value", 999, 2, 9999, "largest answer (the actions are 0..max_value)"}};
  return options;
}

std::unique_ptr<Env> make(const std::string& id, const nlohmann::json& options) {
  if (id != "arith/single" && id != "arith/multi") throw std::invalid_argument("unknown arith env id '" + id + "'");
  const std::vector<int> values = read_int_options(id, options, options_accepted());
  return std::make_unique<ArithEnv>(id, id == "arith/single" ? Mode::kSingle : Mode::kMulti, values[0], values[1]);
}

/** The numbers word-level tokenizers (the tiny preset) know: answers and operands up to 99. */
constexpr int kVocabularyNumbers = 99;

std::vector<std::string> vocabulary() {
  // The words of the instruction prompts and observations, then the words of the process-reward
  // discourse markers ("So ", "Let me ", ...), so that tiny replies can reason in segments.
  std::vector<std::string> words = {
      "You", "are", "solving", "a", "multi", "-", "step", "arithmetic", "problem", ".", "Each", "operation", "applies", "to",
      "the", "result", "of", "one", "before", "it", ",", "every", "is", "whole", "number", "and", "divisions", "exact",
      "Work", "out", "final", "answer", "with", ":", "your", "action", "from", "at", "time", "turn", "give", "after", "you",
      "asked", "about", "A", "correct", "confirmed", "next", "follows", ";", "wrong", "same", "again", "have", "turns", "for",
      "operations", "Problem", "Start", "add", "subtract", "multiply", "by", "divide", "then", "What", "?", "Results", "so",
      "far", "none", "Your", "last", "was", "All", "results", "given", "(", ")?", "Action", "ACTION",
      "So", "But", "Wait", "Alternatively", "Actually", "Hmm", "Let", "me", "I", "need"};
  for (int n = 0; n <= kVocabularyNumbers; ++n) words.push_back(std::to_string(n));
  return words;
}

}  // namespace

EnvFamily arith_family() {
  EnvFamily family;
  family.name = "arith";
  family.ids = {"arith/single", "arith/multi"};
  family.actions = ArithEnv::answer_actions(options_accepted()[1].default_value);
  family.options = describe(options_accepted());
  family.vocabulary = vocabulary();
  family.make = make;
  return family;
}

}  // namespace turnrl::envs::arith
