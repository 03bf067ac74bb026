// mismatches(): the GPU tests' tolerant element-by-element comparison of a result with its reference.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace ptxgate::gpu_test {

/// Counts elements where |got - want| > abs_tol + rel_tol * |want|, reporting the first few, and
/// every element one side has and the other lacks: a result of the wrong size never passes.
template <class G, class W>
size_t mismatches(const std::vector<G>& got, const std::vector<W>& want, double abs_tol, double rel_tol,
                  const std::string& what) {
  size_t bad = 0;
  if (got.size() != want.size()) {
    MESSAGE(what << ": got " << got.size() << " elements, want " << want.size());
    bad = got.size() > want.size() ? got.size() - want.size() : want.size() - got.size();
  }
  const size_t common = got.size() < want.size() ? got.size() : want.size();
  for (size_t i = 0; i < common; ++i) {
    double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (!(std::fabs(g - w) <= abs_tol + rel_tol * std::fabs(w))) {
      if (bad < 5) MESSAGE(what << "[" << i << "]: got " << g << ", want " << w);
      ++bad;
    }
  }
  return bad;
}

}  // namespace ptxgate::gpu_test
