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

/** Whether the top object `id` gets a line: things other than baba, and rule blocks. */
bool listed(const World& world, ObjectId id) {
  if (id == kNoObject) return false;
  const Object& o = world.objects[id];
  return o.kind != Kind::kBorder && !(o.kind == Kind::kThing && o.thing == Thing::kBaba);
}

/** The line of the top object at `cell`; nothing at the reference cell (BALROG's empty line). */
void append_line(std::string& out, const World& world, int cell, Pos reference) {
  const Object& o = world.objects[world.grid.top(cell)];
  const Pos offset = world.grid.pos_of(cell) - reference;
  if (offset.x == 0 && offset.y == 0) return;  // BALROG writes an empty line
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

void append_objects(std::string& out, const World& world, Pos reference) {
  bool first = true;
  for (int k = 0; k < world.grid.cell_count(); ++k) {
    if (!listed(world, world.grid.top(k))) continue;
    if (!first) out += '\n';
    first = false;
    append_line(out, world, k, reference);
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

std::string object_line(const World& world, int cell, Pos reference) {
  std::string out;
  if (listed(world, world.grid.top(cell))) append_line(out, world, cell, reference);
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
