// Checks for untrusted JSON: nesting depth before parsing, and integers that fit their field.
#pragma once

#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ptxgate::diag {

/// Whether JSON text nests arrays and objects at most `limit` deep. nlohmann-json parses
/// iteratively but serialises and compares recursively, so a file of a million '[' would
/// overflow the stack later (e.g. in dump()). Check before parsing untrusted files.
inline bool json_nesting_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

/// Integers from untrusted JSON: nlohmann's get<int>() on a float or out-of-range value is UB.

/// The integer in `j` as T; throws nlohmann::json::type_error (what get<T>() throws for a wrong
/// type) when `j` is not an integer or does not fit T.
template <class T>
T json_integer(const nlohmann::json& j) {
  bool fits = false;
  if (j.is_number_unsigned()) {
    fits = j.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  } else if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    fits = v >= 0 ? static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                  : std::numeric_limits<T>::is_signed && v >= static_cast<int64_t>(std::numeric_limits<T>::min());
  }
  if (!fits)
    throw nlohmann::json::type_error::create(302, "expected an integer that fits its field, found " + j.dump(),
                                             static_cast<const nlohmann::json*>(nullptr));
  return j.is_number_unsigned() ? static_cast<T>(j.get<uint64_t>()) : static_cast<T>(j.get<int64_t>());
}

/// `object[key]` as T when present, else `fallback`; same checks as json_integer.
template <class T>
T json_integer_or(const nlohmann::json& object, const char* key, T fallback) {
  auto it = object.find(key);
  return it == object.end() ? fallback : json_integer<T>(*it);
}

}  // namespace ptxgate::diag
