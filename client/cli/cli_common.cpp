// SPDX-License-Identifier: MIT
#include "client/cli/cli_common.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace sigverify::cli {

RowFile load_row_file(const std::string& path, const std::string& table_name, std::optional<std::size_t> tail_size,
                      const std::string& sig_format) {
    const auto table = wire::parse_table(table_name);
    const auto encoding = wire::parse_sig_encoding(sig_format);
    if (!table || !encoding) throw InputError("unknown table or signature format");
    RowFile f;
    f.kind = wire::record_kind(*table);
    f.tail_size = tail_size.value_or(wire::canonical_tail_size(*table));
    f.encoding = *encoding;
    if (f.tail_size > wire::kMaxTailSize) throw InputError("--key-size must be 0..255");

    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw InputError(path + ": cannot open: " + std::strerror(errno));
    const auto size = std::size_t(in.tellg());
    const std::size_t stride = wire::stride(f.kind, f.tail_size);
    if (size % stride != 0)
        throw InputError(path + ": " + std::to_string(size) + " bytes is not a multiple of the " + table_name +
                         " row stride " + std::to_string(stride) + " (record " +
                         std::to_string(wire::record_size(f.kind)) + " + key_size " + std::to_string(f.tail_size) +
                         "); wrong --table or --key-size?");
    f.count = size / stride;
    f.bytes.resize(size);
    in.seekg(0);
    if (size && !in.read(reinterpret_cast<char*>(f.bytes.data()), std::streamsize(size)))
        throw InputError(path + ": read failed");
    return f;
}

void write_file_atomically(const std::string& path, const std::uint8_t* data, std::size_t size) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw InputError(tmp + ": cannot create: " + std::strerror(errno));
        if (size) out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw InputError(tmp + ": write failed");
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw InputError(path + ": cannot rename into place: " + ec.message());
    }
}

}  // namespace sigverify::cli
