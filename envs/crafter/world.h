#pragma once
// The Crafter world: material map, object slots, object map and the balancing chunks
// (crafter/engine.py World), plus the world's single random stream.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "envs/common/numpy_random.h"
#include "envs/crafter/data.h"

namespace turnrl::envs::crafter {

struct Pos {
  int x = 0;
  int y = 0;
  friend bool operator==(Pos a, Pos b) { return a.x == b.x && a.y == b.y; }
  Pos operator+(Pos o) const { return {x + o.x, y + o.y}; }
};

inline int distance(Pos a, Pos b) { return std::abs(a.x - b.x) + std::abs(a.y - b.y); }

/** One creature, arrow, plant or the player. The player's health lives in its inventory. */
struct Object {
  Kind kind = Kind::kCow;
  Pos pos;
  int health = 0;
  bool removed = false;
  Pos facing;        // arrows
  int cooldown = 0;  // zombies
  int reload = 0;    // skeletons
  int grown = 0;     // plants
};

/** Objects of one 12x12 chunk, in ascending slot order (the canonical despawn order). */
struct Chunk {
  int xmin = 0, xmax = 0, ymin = 0, ymax = 0;
  std::vector<int> slots;
};

class World {
 public:
  static constexpr int kChunkSize = 12;
  static constexpr int kPlayerSlot = 1;

  World(int width, int height);

  /** Fresh random stream and empty maps (engine.World.reset). */
  void reset(uint32_t seed);

  int width() const { return width_; }
  int height() const { return height_; }
  bool inside(Pos p) const { return p.x >= 0 && p.y >= 0 && p.x < width_ && p.y < height_; }
  /** kNone outside the map. */
  Material material(Pos p) const { return inside(p) ? materials_[index(p)] : Material::kNone; }
  void set_material(Pos p, Material m);
  /** Slot of the object at p, 0 for none or outside the map. */
  int object_at(Pos p) const { return inside(p) ? object_map_[index(p)] : 0; }
  bool is_free(Pos p, MaterialSet walkable) const { return object_at(p) == 0 && contains(walkable, material(p)); }

  Object& object(int slot) { return objects_[slot]; }
  const Object& object(int slot) const { return objects_[slot]; }
  /** Adds at the next slot (slots are never reused). */
  int add(const Object& object);
  void remove(int slot);
  /** Moves a live object; a removed object stays where it is. */
  void move(int slot, Pos target);
  /** Live objects in slot order at this moment. */
  const std::vector<int>& live_slots();

  /** Chunks in the order their keys were first used (Python dict insertion order). */
  const std::vector<Chunk>& chunks() const { return chunks_; }
  /** Cells of material m in the chunk (objects ignored). */
  int count_in(const Chunk& chunk, Material m) const {
    return chunk_materials_[chunk_cell(chunk.xmin, chunk.ymin)][static_cast<int>(m)];
  }
  /** Semantic map (objects over materials), byte x * height + y. */
  std::vector<uint8_t> semantic_map() const;
  /** One cell of semantic_map() (x, y inside the area), without building the map. */
  uint8_t semantic_id(int x, int y) const { return semantic_id_at(static_cast<size_t>(x) * height_ + y); }
  /** numpy's [x - d : x + d + 1, y - d : y + d + 1] slice holds material m (negative starts: empty). */
  bool nearby_has(Pos p, int d, Material m) const;

  RandomState random;
  double daylight = 0.0;

 private:
  uint8_t semantic_id_at(size_t index) const;
  int index(Pos p) const { return p.x * height_ + p.y; }
  Chunk& chunk_for(Pos p);
  int chunk_cell(int x, int y) const { return (x / kChunkSize) * chunks_y_ + y / kChunkSize; }
  static void insert_sorted(std::vector<int>& slots, int slot);
  static void erase(std::vector<int>& slots, int slot);

  int width_;
  int height_;
  std::vector<Material> materials_;
  std::vector<int32_t> object_map_;
  std::vector<Object> objects_;  // slot 0 is Python's None placeholder
  std::vector<int> live_;
  bool live_dirty_ = false;
  std::vector<Chunk> chunks_;
  int chunks_y_ = 0;
  std::vector<int> chunk_lookup_;  // chunk grid cell -> index into chunks_, -1 when unused
  // Per chunk grid cell, how many cells hold each material (balancing reads these every 10 steps).
  std::vector<std::array<int16_t, kNumMaterials>> chunk_materials_;
};

}  // namespace turnrl::envs::crafter
