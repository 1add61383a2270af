#include "envs/crafter/balrog_text.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace turnrl::envs::crafter {
namespace {

/** Python's slice bounds for [start:stop] on a dimension of size n. */
std::pair<int, int> python_slice(int start, int stop, int n) {
  auto clip = [n](int i) { return i < 0 ? std::max(0, i + n) : std::min(i, n); };
  const int lo = clip(start), hi = clip(stop);
  return {lo, std::max(lo, hi)};
}

std::string_view semantic_name(int id) {
  if (id >= kNumMaterials) return kind_name(static_cast<Kind>(id - kNumMaterials));
  if (id == 0) return "None";
  return material_name(static_cast<Material>(id));
}

}  // namespace

const std::vector<ActionSpec>& balrog_actions() {
  static const std::vector<ActionSpec> kActions = {
      {"Noop", "do nothing"},
      {"Move West", "move west on flat ground"},
      {"Move East", "move east on flat ground"},
      {"Move North", "move north on flat ground"},
      {"Move South", "move south on flat ground"},
      {"Do", "Multiuse action to collect material, drink from lake and hit creature in front"},
      {"Sleep", "sleep when energy level is below maximum"},
      {"Place Stone", "place a stone in front"},
      {"Place Table", "place a table"},
      {"Place Furnace", "place a furnace"},
      {"Place Plant", "place a plant"},
      {"Make Wood Pickaxe", "craft a wood pickaxe with a nearby table and wood in inventory"},
      {"Make Stone Pickaxe", "craft a stone pickaxe with a nearby table, wood, and stone in inventory"},
      {"Make Iron Pickaxe", "craft an iron pickaxe with a nearby table and furnace, wood, coal, and iron in inventory"},
      {"Make Wood Sword", "craft a wood sword with a nearby table and wood in inventory"},
      {"Make Stone Sword", "craft a stone sword with a nearby table, wood, and stone in inventory"},
      {"Make Iron Sword", "craft an iron sword with a nearby table and furnace, wood, coal, and iron in inventory"},
  };
  return kActions;
}

std::string balrog_instruction_prompt() {
  std::string actions;
  for (const ActionSpec& spec : balrog_actions()) {
    if (!actions.empty()) actions += ",\n";
    actions += spec.name + ": " + spec.description;
  }
  return "You are an agent playing Crafter. The following are the only valid actions you can take in the game, "
         "followed by a short description of each action:\n\n" +
         actions +
         ".\n\nThese are the game achievements you can get:\n"
         "1. Collect Wood\n2. Place Table\n3. Eat Cow\n4. Collect Sapling\n5. Collect Drink\n"
         "6. Make Wood Pickaxe\n7. Make Wood Sword\n8. Place Plant\n9. Defeat Zombie\n10. Collect Stone\n"
         "11. Place Stone\n12. Eat Plant\n13. Defeat Skeleton\n14. Make Stone Pickaxe\n15. Make Stone Sword\n"
         "16. Wake Up\n17. Place Furnace\n18. Collect Coal\n19. Collect Iron\n20. Make Iron Pickaxe\n"
         "21. Make Iron Sword\n22. Collect Diamond\n\n"
         "In a moment I will present a history of actions and observations from the game.\n"
         "Your goal is to get as far as possible by completing all the achievements.\n\nPLAY!";
}

DescribedWindow described_window(const World& world, Pos player, Pos view) {
  const auto [x0, x1] = python_slice(player.x - view.x / 2, player.x + view.x / 2 + 1, world.width());
  const auto [y0, y1] = python_slice(player.y - view.y / 2 + 1, player.y + view.y / 2, world.height());
  return {x0, x1, y0, y1};
}

std::string describe_long_term(const World& world, const Player& player, Pos view) {
  const auto [x0, x1, y0, y1] = described_window(world, world.object(World::kPlayerSlot).pos, view);
  const int w = x1 - x0, h = y1 - y0;
  const Pos center{view.x / 2, view.y / 2 - 1};
  // Only the view's cells: building the whole 64x64 map cost about half of a step.
  // x0 and y0 captured by copy: clang 14 cannot capture structured bindings (the fuzz build uses clang).
  auto id_at = [&, x0 = x0, y0 = y0](int i, int j) { return world.semantic_id(x0 + i, y0 + j); };
  const int player_id = kNumMaterials + static_cast<int>(Kind::kPlayer);

  // Closest cell of each name, names in the order the column-major scan first meets them.
  struct Seen {
    std::string_view name;
    int dx, dy, dist;
  };
  std::vector<Seen> seen;
  for (int i = 0; i < w; ++i) {
    for (int j = 0; j < h; ++j) {
      const int id = id_at(i, j);
      if (id == player_id) continue;
      const int dx = i - center.x, dy = j - center.y;
      const int dist = std::abs(dx) + std::abs(dy);
      const std::string_view name = semantic_name(id);
      auto it = std::find_if(seen.begin(), seen.end(), [&](const Seen& s) { return s.name == name; });
      if (it == seen.end()) {
        seen.push_back({name, dx, dy, dist});
      } else if (dist < it->dist) {
        *it = {name, dx, dy, dist};
      }
    }
  }
  std::string text;
  if (player.sleeping) {
    text = "You are sleeping, and will not be able take actions until energy is full.\n\n\n\n";
  } else if (player.health() <= 0) {
    text = "You died.\n\n\n\n";
  }
  if (seen.empty()) {
    text += "You see nothing away from you.";
  } else {
    text += "You see:";
    for (const Seen& s : seen) {
      std::string direction;
      if (s.dy < 0) direction = "north";
      if (s.dy > 0) direction = "south";
      if (s.dx != 0) direction += std::string(direction.empty() ? "" : "-") + (s.dx < 0 ? "west" : "east");
      text += "\n- " + std::string(s.name) + " " + std::to_string(s.dist) + (s.dist > 1 ? " steps" : " step") +
              " to your " + direction;
    }
  }
  const int tx = center.x + player.facing.x, ty = center.y + player.facing.y;
  const std::string_view facing = (tx >= 0 && tx < w && ty >= 0 && ty < h) ? semantic_name(id_at(tx, ty)) : "nothing";
  text += "\n\nYou face " + std::string(facing) + " at your front.";
  return text;
}

std::string describe_short_term(const Player& player) {
  const auto& inv = player.inventory;
  std::string text = "Your status:";
  for (int vital : {item::kHealth, item::kFood, item::kDrink, item::kEnergy}) {
    text += "\n- " + std::string(item_name(vital)) + ": " + std::to_string(inv[vital]) + "/9";
  }
  std::string items;
  for (int i = item::kSapling; i < kNumItems; ++i) {
    if (inv[i] != 0) items += "\n- " + std::string(item_name(i)) + ": " + std::to_string(inv[i]);
  }
  text += items.empty() ? "\n\nYou have nothing in your inventory." : "\n\nYour inventory:" + items;
  return text;
}

}  // namespace turnrl::envs::crafter
