#pragma once
// The environment interface every port implements: Gym-style stepping plus BALROG's text layer.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace turnrl::envs {

struct StepResult {
  double reward = 0.0;
  bool terminated = false;  // the episode reached a terminal state (no bootstrap)
  bool truncated = false;   // the step limit cut the episode (bootstrap from the value)
};

/** One action as BALROG lists it in the instruction prompt. */
struct ActionSpec {
  std::string name;
  std::string description;

  /** The name as one word, spaces as '_' (`Move_West`): how a word-level vocabulary holds it. */
  std::string joined_name() const;
};

/** BALROG's `obs["text"]`: the long-term part enters the history; the short-term part
 *  (Crafter's status and inventory) is shown only in the current observation. */
struct TextObservation {
  std::string long_term;
  std::string short_term;
};

/** How a reply is normalised before it is matched against the action names (Verlog, sec. 4). */
struct ActionTextRules {
  enum class Case { kLower, kTitle };
  Case letter_case = Case::kLower;
  bool underscores_to_spaces = true;
  bool cut_at_newline = false;          // Crafter keeps only the first line
  bool drop_trailing_punctuation = false;  // Crafter drops one trailing '.' or ','
  /** Synonym -> one or more action names; several are chosen between uniformly. */
  std::map<std::string, std::vector<std::string>> translations;
  /** After translation: a result containing this word and "(" loses every "(...)" group (Crafter: "Do"). */
  std::string drop_parenthesised_after;
};

/**
 * One environment instance. Not thread-safe: each rollout slot owns its own.
 * Text is built only when asked for, so plain stepping stays fast.
 * Misuse (stepping before reset, an action outside [0, num_actions())) throws
 * std::out_of_range or std::logic_error; it never corrupts state.
 */
class Env {
 public:
  virtual ~Env() = default;

  virtual const std::string& id() const = 0;
  virtual void reset(uint64_t seed) = 0;
  virtual StepResult step(int action) = 0;

  /** BALROG's action list (index = native action id) with prompt descriptions. */
  virtual const std::vector<ActionSpec>& actions() const = 0;
  int num_actions() const { return static_cast<int>(actions().size()); }
  /** The action executed when a reply matches nothing. */
  virtual int default_action() const = 0;
  virtual const ActionTextRules& text_rules() const = 0;

  /** Turn limit of the current episode as BALROG runs it. */
  virtual int max_steps() const = 0;
  /** The episode's goal in a few words (BabyAI's mission); empty where the env has none. */
  virtual std::string goal() const { return {}; }
  /** The first user message BALROG sends for the current episode. */
  virtual std::string instruction_prompt() const = 0;
  virtual TextObservation observe_text() const = 0;
  /** A compact picture of the state for humans (play mode, debugging). */
  virtual std::string render_ascii() const = 0;
  /** BALROG's progression in [0, 1] for the episode so far. */
  virtual double progression() const = 0;
  /** Every achievement the env can unlock (Crafter's 22), in a fixed order; empty where it has none. */
  virtual std::vector<std::string> achievement_names() const { return {}; }
  /** The achievements unlocked so far this episode, in achievement_names() order. */
  virtual std::vector<std::string> unlocked_achievements() const { return {}; }
  /**
   * The answer the next reply should give, as text, where the task has one known correct answer
   * (arith: the result asked for); empty where it has none, or once the episode is over. Training-free
   * process rewards score a reply by how likely the policy makes this answer after each of its prefixes.
   */
  virtual std::string reference_answer() const { return {}; }

  /**
   * Canonical bytes of the current state (built with StateWriter), the key GiGPO groups steps by.
   * It holds everything that decides what the agent sees and what the next steps can bring: the
   * map or grid, objects, agent, inventory, goal, the progress of the task's checker. It leaves out
   * two things on purpose, in every port:
   * - the elapsed-step counter (and what is a pure function of it, such as Crafter's daylight): the
   *   same situation reached at different times is one anchor state, as in GiGPO, where a loop
   *   back to a state joins that state's group; the clock only moves the time limit, the
   *   time-scaled success rewards (BabyAI, BabaIsAI) and Crafter's daylight;
   * - the random stream (and the order its draws are spent in, e.g. Crafter's object update order
   *   and chunk order): it is hidden and it advances every step in Crafter, so with it almost no
   *   two trajectories would ever share a state; the step group's mean return averages over the
   *   random dynamics instead.
   * Requires reset().
   */
  virtual std::string serialize_state() const = 0;
  /** Lower-case hex SHA-256 of the env id and serialize_state(): equal exactly when those are equal. */
  std::string state_hash() const;

 protected:
  /** Shared argument check for step(). */
  void check_action(int action) const;
};

}  // namespace turnrl::envs
