// SPDX-License-Identifier: MIT
// A packed row buffer of one table seen as a wire::RowSpan: every whole row
// in it, with the given tail size and encoding.
#pragma once

#include <cstdint>
#include <vector>

#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::test {

inline wire::RowSpan span_of(std::vector<std::uint8_t>& rows, wire::Table t, std::size_t tail_size,
                             wire::SigEncoding enc) {
    const wire::RecordKind kind = wire::record_kind(t);
    return wire::RowSpan{kind, tail_size, enc, rows.data(), rows.size() / wire::stride(kind, tail_size)};
}

}  // namespace sigverify::test
