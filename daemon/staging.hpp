// SPDX-License-Identifier: MIT
// Staging: the first step of every chunk (stage -> verify -> publish).
//
// A worker copies the chunk's records out of the client's shared memory into
// its own private rows before anything reads them. From then on the client
// cannot change what gets verified: a client that rewrites its arena while a
// chunk runs can change only its own verdicts, and the backend and any
// re-check (CheckedBackend) read the same bytes. Rows and columns stage to the
// same form, packed tail-less records, so the rest of the path is one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "daemon/confirmation.hpp"
#include "reference/columns.hpp"
#include "shm_protocol/wire_format.hpp"

namespace sigverify::daemon {

// Copies the records of rows [begin, end) (not their tails) to out, which
// holds (end - begin) * record_size(rows.kind) bytes; returns the private span.
inline wire::RowSpan stage_rows(const wire::RowSpan& rows, std::size_t begin, std::size_t end, std::uint8_t* out) {
    const std::size_t record = wire::record_size(rows.kind);
    for (std::size_t i = begin; i < end; ++i) std::memcpy(out + (i - begin) * record, rows.row(i), record);
    return wire::RowSpan{rows.kind, 0, rows.encoding, out, end - begin};
}

// The same for rows [begin, end) of a column batch (each record assembled
// from its message, key and signature entries).
inline wire::RowSpan stage_columns(const wire::ColumnSpan& columns, std::size_t begin, std::size_t end,
                                   std::uint8_t* out) {
    const std::size_t record = wire::record_size(columns.kind);
    for (std::size_t i = begin; i < end; ++i) reference::assemble_record(columns, i, out + (i - begin) * record);
    return wire::RowSpan{columns.kind, 0, columns.encoding, out, end - begin};
}

// The record of row i of a job (packed rows or columns) to out.
inline void stage_record(bool is_columns, const wire::RowSpan& rows, const wire::ColumnSpan& columns,
                         std::size_t i, std::uint8_t* out) {
    if (is_columns) reference::assemble_record(columns, i, out);
    else std::memcpy(out, rows.row(i), wire::record_size(rows.kind));
}

// One worker's private memory: staged records, their grouping fields (groups
// rule only) and their verdicts. Grown on
// demand to the largest chunk seen (at most the scheduler's chunk_rows).
struct Staging {
    std::vector<std::uint8_t> records;
    std::vector<std::uint8_t> verdicts;
    ChunkGroups groups;
    std::vector<std::size_t> rows;  // job row indices of scattered records (group repairs)

    // Room for n records of `record` bytes; false when out of memory.
    bool reserve(std::size_t n, std::size_t record) noexcept {
        try {
            if (records.size() < n * record) records.resize(n * record);
            if (verdicts.size() < n) verdicts.resize(n);
        } catch (...) {
            return false;
        }
        return true;
    }
};

}  // namespace sigverify::daemon
