#pragma once
// Config as data: each key of a config is declared once (name, member, check, one line of doc; its
// default is the member's initialiser), and that one declaration reads the key (through
// ConfigSection: `file:line: key: problem`), writes it back (to_yaml) and describes it
// (`turnrl config --reference`). Command-line overrides (`--set section.key=value`) go through the
// same reading (apply_overrides), so they are checked as the file's own keys are.
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "trainer/config/config_reader.h"
#include "trainer/config/enum_names.h"

namespace turnrl::trainer {

/** One row of the reference. */
struct KeyInfo {
  std::string path, type, default_value, doc;
};

/** One key of a mapping whose values live in an S. */
template <typename S>
struct Key {
  std::string name;
  std::function<void(ConfigSection&, S&)> read;
  /** Writes `name: value`, or nothing where leaving the key out means the value (an empty list). */
  std::function<void(YAML::Emitter&, const S&)> write;
  /** Appends the key's rows (a mapping's: its own, then its keys') with `defaults`' values. */
  std::function<void(std::vector<KeyInfo>&, const std::string& prefix, const S& defaults)> describe;
};
template <typename S>
using Schema = std::vector<Key<S>>;

template <typename S>
void read_keys(ConfigSection& section, const Schema<S>& keys, S& out) {
  for (const Key<S>& key : keys) key.read(section, out);
}
template <typename S>
void write_keys(YAML::Emitter& out, const Schema<S>& keys, const S& value) {
  out << YAML::BeginMap;
  for (const Key<S>& key : keys) key.write(out, value);
  out << YAML::EndMap;
}
template <typename S>
std::vector<KeyInfo> describe_keys(const Schema<S>& keys, const std::string& prefix = "") {
  // Never destroyed: GCC 12 warns (falsely) on the cleanup of a local EvalConfig's maps.
  static const S* const defaults = new S();
  std::vector<KeyInfo> rows;
  for (const Key<S>& key : keys) key.describe(rows, prefix, *defaults);
  return rows;
}

/** A string in YAML, quoted where a plain scalar would lose its edges (answer_prompt's newline). */
void write_string(YAML::Emitter& out, const std::string& text);

/** How a value of type T is read, written and named in the reference. */
template <typename T, typename = void>
struct ValueCodec {  // scalars: numbers, bool, strings
  static std::string type() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_integral_v<T>) return "integer";
    else if constexpr (std::is_floating_point_v<T>) return "number";
    else return "string";
  }
  static void read(ConfigSection& section, const std::string& key, T& out, const Check<T>& check) { section.read(key, out, check); }
  static bool present(const T&) { return true; }
  static void write(YAML::Emitter& out, const T& value) {
    if constexpr (std::is_same_v<T, std::string>) write_string(out, value);
    else out << value;
  }
};

template <>
struct ValueCodec<std::vector<std::string>> {  // a string or a non-empty list; empty: left out
  static std::string type() { return "string or list of strings"; }
  static void read(ConfigSection& section, const std::string& key, std::vector<std::string>& out, const Check<std::vector<std::string>>& check) {
    section.read_string_list(key, out);
    if (section.has_value(key) && !check(out)) section.fail(key, check.rule);
  }
  static bool present(const std::vector<std::string>& value) { return !value.empty(); }
  static void write(YAML::Emitter& out, const std::vector<std::string>& value) { out << YAML::Flow << value; }
};

template <>
struct ValueCodec<nlohmann::json> {  // a mapping, kept as JSON
  static std::string type() { return "mapping"; }
  static void read(ConfigSection& section, const std::string& key, nlohmann::json& out, const Check<nlohmann::json>& check) {
    section.read_json(key, out);
    if (!check(out)) section.fail(key, check.rule);
  }
  static bool present(const nlohmann::json&) { return true; }
  static void write(YAML::Emitter& out, const nlohmann::json& value) { out << YAML::Flow << YAML::Load(value.dump()); }
};

template <typename E>
struct ValueCodec<E, std::enable_if_t<std::is_enum_v<E>>> {  // one of the enum's names
  static std::string type() {
    std::string names;
    for (const std::string& name : EnumNames<E>::names()) names += (names.empty() ? "" : " | ") + name;
    return names;
  }
  static void read(ConfigSection& section, const std::string& key, E& out, const Check<E>& check) {
    std::string name;
    section.read(key, name);
    if (!section.has_value(key)) return;
    const std::optional<E> value = parse_enum<E>(name);
    if (!value) section.fail(key, "must be " + list_names(EnumNames<E>::names()) + ", got '" + name + "'");
    out = *value;
    if (!check(out)) section.fail(key, check.rule);
  }
  static bool present(const E&) { return true; }
  static void write(YAML::Emitter& out, const E& value) { out << enum_name(value); }
};

template <typename E>
struct ValueCodec<std::optional<E>> {  // an enum that may be unset (left out)
  static std::string type() { return ValueCodec<E>::type() + " (unset: none)"; }
  static void read(ConfigSection& section, const std::string& key, std::optional<E>& out, const Check<std::optional<E>>&) {
    if (!section.has_value(key)) {
      std::string null;
      return section.read(key, null);  // marks a `key:` without value read: unset
    }
    E value{};
    ValueCodec<E>::read(section, key, value, {});
    out = value;
  }
  static bool present(const std::optional<E>& value) { return value.has_value(); }
  static void write(YAML::Emitter& out, const std::optional<E>& value) { ValueCodec<E>::write(out, *value); }
};

/** `value` as the reference shows it (the emitter's text: what to_yaml writes). */
template <typename T>
std::string value_text(const T& value) {
  if (!ValueCodec<T>::present(value)) return "";
  YAML::Emitter out;
  ValueCodec<T>::write(out, value);
  return out.c_str();
}

/** A key of member `get(s)` (a callable returning a reference into S, for nested members). */
template <typename S, typename Get, typename T = std::remove_cvref_t<std::invoke_result_t<Get, S&>>>
Key<S> key_at(std::string name, Get get, std::string doc, Check<T> check = {}) {
  return {name,
          [=](ConfigSection& section, S& s) { ValueCodec<T>::read(section, name, get(s), check); },
          [=](YAML::Emitter& out, const S& s) {
            const T& value = get(const_cast<S&>(s));
            if (ValueCodec<T>::present(value)) {
              out << YAML::Key << name << YAML::Value;
              ValueCodec<T>::write(out, value);
            }
          },
          [=](std::vector<KeyInfo>& rows, const std::string& prefix, const S& defaults) {
            rows.push_back({prefix + name, ValueCodec<T>::type(), value_text(get(const_cast<S&>(defaults))), doc});
          }};
}

/** A key of member `member` of S. */
template <typename S, typename T>
Key<S> key(std::string name, T S::*member, std::string doc, Check<T> check = {}) {
  return key_at<S>(std::move(name), [member](S& s) -> T& { return s.*member; }, std::move(doc), std::move(check));
}

/** Base B's keys as keys of S, which derives from B: a group of keys declared once serves every
 *  section built on it (the format section's play and fine-tuning keys). */
template <typename S, typename B>
  requires std::is_base_of_v<B, S>
Schema<S> inherited_keys(const Schema<B>& keys) {
  Schema<S> out;
  for (const Key<B>& k : keys) {
    out.push_back({k.name, [read = k.read](ConfigSection& section, S& s) { read(section, s); },
                   [write = k.write](YAML::Emitter& emitter, const S& s) { write(emitter, s); },
                   [describe = k.describe](std::vector<KeyInfo>& rows, const std::string& prefix, const S& defaults) {
                     describe(rows, prefix, defaults);
                   }});
  }
  return out;
}

/** How a nested mapping is read and written besides its keys. */
template <typename S, typename Inner>
struct SectionRules {
  /** Checks across the mapping's keys, after they are read (fails through the section). */
  std::function<void(ConfigSection&, const Inner&)> check = nullptr;
  /** Whether to_yaml writes the mapping (null: always). */
  std::function<bool(const S&)> written = nullptr;
  /** Read only where the file has it (its keys then have no defaults to fall back on). */
  bool only_when_present = false;
};

/** A nested mapping at `get(s)` (a callable returning a reference into S), with its own keys. */
template <typename S, typename Get, typename Inner = std::remove_cvref_t<std::invoke_result_t<Get, S&>>>
Key<S> section_at(std::string name, Get get, Schema<Inner> keys, std::string doc, SectionRules<S, Inner> rules = {}) {
  return {name,
          [=](ConfigSection& parent, S& s) {
            if (rules.only_when_present && !parent.has(name)) return;
            ConfigSection section = parent.section(name);
            read_keys(section, keys, get(s));
            section.finish();
            if (rules.check) rules.check(section, get(s));
          },
          [=](YAML::Emitter& out, const S& s) {
            if (rules.written && !rules.written(s)) return;
            out << YAML::Key << name << YAML::Value;
            write_keys(out, keys, get(const_cast<S&>(s)));
          },
          [=](std::vector<KeyInfo>& rows, const std::string& prefix, const S& defaults) {
            rows.push_back({prefix + name, "mapping", "", doc});
            for (const Key<Inner>& key : keys) key.describe(rows, prefix + name + ".", get(const_cast<S&>(defaults)));
          }};
}

/** A nested mapping: member `member` of S. */
template <typename S, typename Inner>
Key<S> section(std::string name, Inner S::*member, Schema<Inner> keys, std::string doc, SectionRules<S, Inner> rules = {}) {
  return section_at<S>(std::move(name), [member](S& s) -> Inner& { return s.*member; }, std::move(keys), std::move(doc), std::move(rules));
}

/** A list of mappings (`models:`), each read with `keys` and checked by `check`. */
template <typename S, typename Item>
Key<S> section_list(std::string name, std::vector<Item> S::*member, Schema<Item> keys, std::string doc,
                    std::function<void(ConfigSection&, Item&)> check = nullptr) {
  return {name,
          [=](ConfigSection& parent, S& s) {
            for (ConfigSection& section : parent.section_list(name)) {
              Item item;
              read_keys(section, keys, item);
              section.finish();
              if (check) check(section, item);
              (s.*member).push_back(std::move(item));
            }
          },
          [=](YAML::Emitter& out, const S& s) {
            out << YAML::Key << name << YAML::Value << YAML::BeginSeq;
            for (const Item& item : s.*member) write_keys(out, keys, item);
            out << YAML::EndSeq;
          },
          [=](std::vector<KeyInfo>& rows, const std::string& prefix, const S&) {
            rows.push_back({prefix + name, "list of mappings", "", doc});
            for (const Key<Item>& key : keys) key.describe(rows, prefix + name + "[].", Item{});
          }};
}

/** The reference of a config as a Markdown table. */
std::string reference_table(const std::vector<KeyInfo>& rows);

}  // namespace turnrl::trainer
