// SPDX-License-Identifier: MIT
// The one publish rule: how verdicts reach a client's memory.
//
// Verification decides valid / invalid per row; publishing writes that
// decision where the client reads it, in the batch's mode (wire::Mode):
//   results: results[i] = 1 for a valid row, 0 for an invalid one;
//   collect: the tail of every VALID row is zeroed in place; invalid rows keep
//            theirs (so a non-zero tail marks a rejected row). With tail_size 0
//            collect writes nothing.
// A row's tail is where the batch keeps it: after the record in packed rows
// (RowSpan), or the row's entry of a correlate column
// (column batches). TailSpan names either, so rows and columns share this
// code: every verifier (reference, kernel host code, daemon) publishes through
// these functions and nowhere else.
//
// Verdict bytes (publish_verdicts): 1 = valid, anything else is published as
// invalid (fail closed).
//
// Header-only, plain host code (also compiled by nvcc for the GPU host side).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::wire {

// The tails of a batch in client memory: tail i is tail_size bytes at
// first + i * stride. first is null when tail_size is 0 (nothing to zero).
struct TailSpan {
    std::uint8_t* first = nullptr;
    std::size_t stride = 0;
    std::size_t tail_size = 0;

    std::uint8_t* at(std::size_t i) const { return first + i * stride; }
};

// The tails of packed rows: the tail_size bytes after each record.
inline TailSpan row_tails(const RowSpan& rows) {
    if (rows.data == nullptr || rows.tail_size == 0) return {};
    return {rows.data + record_size(rows.kind), rows.row_stride(), rows.tail_size};
}

// The tails of a column batch: its correlate column, tail_size bytes per row.
inline TailSpan correlate_tails(std::uint8_t* correlate, std::size_t tail_size) {
    if (correlate == nullptr || tail_size == 0) return {};
    return {correlate, tail_size, tail_size};
}

// Publishes the verdict of row i (indexes the whole batch: results[i], tail i).
// results is used in results mode only.
inline void publish_verdict(Mode mode, const TailSpan& tails, std::uint8_t* results, std::size_t i, bool valid) {
    if (mode == Mode::results) {
        results[i] = valid ? 1 : 0;
    } else if (valid && tails.tail_size != 0) {
        std::memset(tails.at(i), 0, tails.tail_size);
    }
}

// Publishes verdicts[0, n) as rows [begin, begin + n) of the batch.
inline void publish_verdicts(Mode mode, const TailSpan& tails, std::uint8_t* results, std::size_t begin,
                             const std::uint8_t* verdicts, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) publish_verdict(mode, tails, results, begin + i, verdicts[i] == 1);
}

}  // namespace sigverify::wire
