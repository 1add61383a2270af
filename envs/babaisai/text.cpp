#include "envs/babaisai/text.h"

#include <charconv>

namespace turnrl::envs::babaisai {
namespace {

void append_int(std::string& out, int value) {
  char buffer[16];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out.append(buffer, end);
}

/** `{distance} step[s] {direction}`; `signed_offset > 1` decides the plural, as in BALROG. */
void append_distance(std::string& out, int signed_offset, std::string_view direction) {
  append_int(out, signed_offset < 0 ? -signed_offset : signed_offset);
  out += signed_offset > 1 ? " steps " : " step ";
  out += direction;
}

void append_objects(std::string& out, const World& world, Pos reference) {
  bool first = true;
  for (int k = 0; k < world.grid.cell_count(); ++k) {
    const ObjectId id = world.grid.top(k);
    if (id == kNoObject) continue;
    const Object& o = world.objects[id];
    // Only things other than baba, and rule blocks, are listed.
    if (o.kind == Kind::kBorder || (o.kind == Kind::kThing && o.thing == Thing::kBaba)) continue;
    if (!first) out += '\n';
    first = false;
    const Pos offset = world.grid.pos_of(k) - reference;
    if (offset.x == 0 && offset.y == 0) continue;  // BALROG writes an empty line
    if (o.kind == Kind::kThing) {
      out += thing_display_name(o.thing);
    } else {
      out += "rule `";
      out += word(o);
      out += '`';
    }
    out += ' ';
    if (offset.x > 0) append_distance(out, offset.x, "to the right");
    if (offset.x < 0) append_distance(out, offset.x, "to the left");
    if (offset.x != 0 && offset.y != 0) out += " and ";
    if (offset.y > 0) append_distance(out, offset.y, "down");
    if (offset.y < 0) append_distance(out, offset.y, "up");
  }
}

}  // namespace

std::string rules_text(const World& world) {
  std::string out;
  for (const Rule& rule : world.rules.rules()) {
    if (rule.replacement) continue;  // BALROG skips "X is Y" rules between nouns
    if (!out.empty()) out += '\n';
    out += thing_display_name(rule.object);
    out += " is ";
    out += property_display_name(rule.property);
  }
  return out;
}

std::optional<Pos> you_position(const World& world) {
  std::optional<Thing> you;
  for (const Rule& rule : world.rules.rules()) {
    if (!rule.replacement && rule.property == Property::kAgent) you = rule.object;
  }
  if (!you) return std::nullopt;
  for (int k = 0; k < world.grid.cell_count(); ++k) {
    const ObjectId id = world.grid.top(k);
    if (id == kNoObject) continue;
    const Object& o = world.objects[id];
    if (o.kind == Kind::kThing && o.thing == *you) return world.grid.pos_of(k);
  }
  return std::nullopt;
}

std::string objects_text(const World& world, Pos reference) {
  std::string out;
  append_objects(out, world, reference);
  return out;
}

std::string observation_text(const World& world, Pos reference) {
  std::string out;
  out.reserve(4096);  // a two-room level's text is about 2 KB
  out += "Active rules:\n";
  out += rules_text(world);
  out += "\n\nObjects on the map:\n";
  append_objects(out, world, reference);
  return out;
}

}  // namespace turnrl::envs::babaisai
