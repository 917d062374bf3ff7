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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "daemon/confirm/confirmation.hpp"
#include "daemon/memory/registered_buffers.hpp"
#include "reference/columns.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

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

// Rows per pread of a registered chunk: three reads of this many rows' column
// bytes into the worker's scratch, then assembled (a 4,096-row piece is
// 528 KB of scratch and ~1 us of system calls beside ~100 ms of verifying).
constexpr std::size_t kRegisteredPieceRows = 4096;

// Rows [begin, end) of registered columns to out, as stage_columns does for
// columns in the arena, but read with pread: the daemon never maps a
// registered buffer (daemon/memory/registered_buffers.hpp says why). False when a
// file no longer holds its column (the buffer is lost; what out holds then is
// no verdict's input). scratch grows to one piece's columns.
inline bool stage_registered_columns(const RegisteredColumnSource& src, wire::RecordKind kind,
                                     wire::SigEncoding encoding, std::size_t begin, std::size_t end,
                                     std::vector<std::uint8_t>& scratch, std::uint8_t* out) noexcept {
    const std::size_t record = wire::record_size(kind);
    const std::size_t key_width = wire::column_key_width(kind);
    try {
        if (scratch.size() < kRegisteredPieceRows * record) scratch.resize(kRegisteredPieceRows * record);
    } catch (...) {
        return false;
    }
    for (std::size_t a = begin; a < end;) {
        const std::size_t n = std::min(end - a, kRegisteredPieceRows);
        wire::ColumnSpan piece;
        piece.kind = kind;
        piece.encoding = encoding;
        piece.count = n;
        std::uint8_t* message = scratch.data();
        std::uint8_t* key = message + n * wire::kColumnMessageWidth;
        std::uint8_t* signature = key + n * key_width;
        if (!src.message.file->read(src.message.offset + a * wire::kColumnMessageWidth,
                                    n * wire::kColumnMessageWidth, message) ||
            !src.key.file->read(src.key.offset + a * key_width, n * key_width, key) ||
            !src.signature.file->read(src.signature.offset + a * wire::kColumnSignatureWidth,
                                      n * wire::kColumnSignatureWidth, signature))
            return false;
        piece.message = message;
        piece.key = key;
        piece.signature = signature;
        stage_columns(piece, 0, n, out + (a - begin) * record);
        a += n;
    }
    return true;
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
    std::vector<std::uint8_t> columns;  // one piece of registered columns as read (stage_registered_columns)

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
