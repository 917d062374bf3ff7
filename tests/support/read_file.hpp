// SPDX-License-Identifier: MIT
// A whole file as a string, for tests that read what a process wrote.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace sigverify::test {

// The file's bytes; "" when it cannot be opened (a file not yet written).
inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace sigverify::test
