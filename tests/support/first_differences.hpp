// SPDX-License-Identifier: MIT
// A short description of where two sequences differ, for failure messages:
// the number of differing elements and the first few indices with both values.
// Use it instead of CHECK(a == b) on large vectors, which makes Catch2 print
// both vectors whole (slow and unreadable when a kernel bug breaks every row).
#pragma once

#include <cstddef>
#include <sstream>
#include <string>

namespace sigverify::test {

// "" when got and want are equal; else e.g. "37 of 3000 differ; first: [3] got 0 want 1, ...".
template <class A, class B>
std::string first_differences(const A& got, const B& want, std::size_t limit = 5) {
    std::ostringstream out;
    if (got.size() != want.size()) out << "sizes differ: got " << got.size() << ", want " << want.size() << "; ";
    const std::size_t n = got.size() < want.size() ? got.size() : want.size();
    std::size_t differing = 0;
    std::ostringstream first;
    for (std::size_t i = 0; i < n; ++i) {
        if (got[i] == want[i]) continue;
        if (differing < limit)
            first << (differing ? ", " : "") << "[" << i << "] got " << +got[i] << " want " << +want[i];
        ++differing;
    }
    if (differing == 0 && got.size() == want.size()) return "";
    out << differing << " of " << n << " differ; first: " << first.str();
    return out.str();
}

}  // namespace sigverify::test
