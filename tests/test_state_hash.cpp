// Env::state_hash and Env::serialize_state on every family: random playouts (OpenSpiel style) check
// that the hash tells states apart exactly as the serialization does, that equal serializations show
// the agent the same thing and (where no random draw intervenes) lead to the same futures, and that
// equal states reached by different action sequences share one hash.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "envs/babaisai/babaisai_env.h"
#include "envs/crafter/data.h"
#include "envs/registry.h"

using namespace turnrl::envs;

namespace {

/** Every BabyAI task, every fourth BabaIsAI level, both Crafter modes. */
std::vector<std::string> representative_ids() {
  std::vector<std::string> ids;
  int babaisai = 0;
  for (const std::string& id : env_ids()) {
    if (id.rfind("babaisai/", 0) == 0 && babaisai++ % 4 != 0) continue;
    ids.push_back(id);
  }
  return ids;
}

bool is_crafter(const std::string& id) { return id.rfind("crafter", 0) == 0; }

std::unique_ptr<Env> replay(const std::string& id, uint64_t seed, const std::vector<int>& actions) {
  auto env = make_env(id);
  env->reset(seed);
  for (int action : actions) env->step(action);
  return env;
}

/** BabaIsAI regenerates the level from the random stream when "you" is gone: a future the state leaves out. */
bool drew_a_new_level(const Env& env) {
  const auto* baba = dynamic_cast<const babaisai::BabaIsAIEnv*>(&env);
  return baba != nullptr && baba->last_step_reset_level();
}

}  // namespace

TEST_CASE("state hashes are equal exactly when the serialized states are, over random playouts") {
  int revisits_total = 0;
  for (const std::string& id : representative_ids()) {
    CAPTURE(id);
    const int steps = is_crafter(id) ? 40 : 60;
    std::map<std::string, std::string> hash_of_state, state_of_hash;
    std::map<std::string, std::string> text_of_state;
    int revisits_checked = 0;
    for (uint64_t seed : {1u, 2u, 3u}) {
      CAPTURE(seed);
      std::mt19937_64 rng(seed * 7919 + id.size());
      auto env = make_env(id);
      env->reset(seed);
      std::vector<int> actions;
      std::map<std::string, std::vector<int>> first_visit;  // state -> the actions that first reached it
      bool over = false;
      for (int t = 0; t <= steps; ++t) {
        const std::string state = env->serialize_state();
        const std::string hash = env->state_hash();
        CHECK(hash.size() == 64);
        CHECK(hash_of_state.emplace(state, hash).first->second == hash);
        CHECK(state_of_hash.emplace(hash, state).first->second == state);
        // The state holds everything the agent is shown.
        const TextObservation text = env->observe_text();
        const std::string shown = env->instruction_prompt() + "\n" + text.long_term + "\n" + text.short_term;
        CHECK(text_of_state.emplace(state, shown).first->second == shown);

        const auto [visit, first] = first_visit.emplace(state, actions);
        if (!first && !over && !is_crafter(id) && revisits_checked < 20) {
          // The same state by a different action sequence: the same actions from here give the
          // same states (Crafter's creatures draw from the random stream the state leaves out).
          ++revisits_checked;
          auto twin = replay(id, seed, visit->second);
          auto probe = replay(id, seed, actions);
          REQUIRE(twin->state_hash() == probe->state_hash());
          std::mt19937_64 continuation(t);
          for (int k = 0; k < 10; ++k) {
            const int action = std::uniform_int_distribution<int>(0, probe->num_actions() - 1)(continuation);
            const StepResult a = twin->step(action), b = probe->step(action);
            if (drew_a_new_level(*twin) || drew_a_new_level(*probe)) break;
            CHECK(a.terminated == b.terminated);
            CHECK(twin->state_hash() == probe->state_hash());
            if (a.terminated || b.terminated || a.truncated || b.truncated) break;
          }
        }
        if (over || t == steps) break;
        const int action = std::uniform_int_distribution<int>(0, env->num_actions() - 1)(rng);
        actions.push_back(action);
        const StepResult result = env->step(action);
        over = result.terminated || result.truncated;
      }
    }
    // A playout that never left its first state would make the checks above vacuous.
    CHECK(hash_of_state.size() > 3);
    revisits_total += revisits_checked;
  }
  MESSAGE("revisited states followed: " << revisits_total);
  CHECK(revisits_total > 20);
}

TEST_CASE("BabyAI: turning left then right, right then left, or four times left returns to the start's hash") {
  for (const std::string& id : env_ids()) {
    if (id.rfind("babyai/", 0) != 0) continue;
    CAPTURE(id);
    auto a = make_env(id), b = make_env(id), c = make_env(id);
    for (auto* env : {a.get(), b.get(), c.get()}) env->reset(11);
    const std::string start = a->state_hash();
    a->step(0);  // turn left
    CHECK(a->state_hash() != start);
    a->step(1);
    b->step(1);
    b->step(0);
    for (int i = 0; i < 4; ++i) c->step(0);
    CHECK(a->state_hash() == start);
    CHECK(b->state_hash() == start);
    CHECK(c->state_hash() == start);  // four steps later: the step counter is not part of the state
  }
}

TEST_CASE("BabaIsAI: idling keeps the hash, a move that changes the grid changes it") {
  int moved = 0;
  for (const std::string& id : representative_ids()) {
    if (id.rfind("babaisai/", 0) != 0) continue;
    CAPTURE(id);
    auto env = make_env(id);
    env->reset(5);
    const std::string start = env->state_hash(), start_bytes = env->serialize_state();
    env->step(0);  // idle
    CHECK(env->state_hash() == start);
    for (int action = 1; action < env->num_actions(); ++action) {
      auto mover = make_env(id);
      mover->reset(5);
      mover->step(action);
      CHECK((mover->serialize_state() == start_bytes) == (mover->state_hash() == start));
      moved += mover->state_hash() != start;
    }
  }
  CHECK(moved > 0);
}

TEST_CASE("Crafter: the same seed gives the same hash, a failed placement equals a no-op, seeds differ") {
  for (const std::string id : {"crafter", "crafter/balrog"}) {
    CAPTURE(id);
    auto a = make_env(id), b = make_env(id), other = make_env(id);
    a->reset(3);
    b->reset(3);
    other->reset(4);
    CHECK(a->state_hash() == b->state_hash());
    CHECK(a->state_hash() != other->state_hash());
    // Nothing to place a table with at the start: the world moves on exactly as after a no-op.
    a->step(crafter::action::kNoop);
    b->step(crafter::action::kPlaceTable);
    CHECK(a->state_hash() == b->state_hash());
    // Moving changes the player's facing or position.
    b->step(crafter::action::kMoveLeft);
    a->step(crafter::action::kMoveRight);
    CHECK(a->state_hash() != b->state_hash());
  }
}
