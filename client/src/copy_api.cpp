// SPDX-License-Identifier: MIT
// libsigverify internals: the copy APIs (verify_* / collect_* / run for rows,
// *_columns / run_columns for column tables) over the zero-copy ring path.
//
// A caller's batch may be any size: it is cut into pieces of at most
// kMaxChunkRows rows (and at most a quarter of the arena), each piece
// reserved, copied into the arena, submitted and, up to kPipelineDepth pieces
// in flight, waited for and copied back (verdict bytes, or the collected rows
// / correlate entries). Results are zeroed before anything is sent (fail
// closed). With Fallback::local, a piece the daemon fails, and every piece
// after a reserve the daemon cannot serve, is verified here instead.
// Verdicts are the same whichever path a row takes.
//
// Cancel (a stop token): once a stop is requested no piece is sent any more,
// the pieces in flight are cancelled in the daemon (Opcode::cancel: their
// running chunks finish and publish, the rest is dropped) and copied back as
// the daemon left them, so every row is either verified or untouched (results
// 0, tails and correlate entries unchanged); the call returns cancelled with
// the counts of the rows that were verified. The local fallback checks the
// token between pieces of kMaxChunkRows rows.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "client_impl.hpp"
#include "pipeline.hpp"

namespace sigverify {

using detail::align_up;
using detail::is_daemon_failure;
using detail::kAlign;
using detail::kMaxChunkRows;
using detail::kPipelineDepth;

namespace {

// The local fallback's run of one piece, rows [begin, begin + count) of the
// caller's batch: its verdicts go to results + begin, or to scratch when the
// caller asked for counts only (results null); collect mode writes none.
// run(out) verifies the piece, out indexing its row 0.
template <typename Run>
BatchResult run_piece_locally(wire::Mode mode, std::uint8_t* results, detail::CountsOnlyScratch& scratch,
                              std::size_t begin, std::size_t count, Run&& run) {
    if (mode == wire::Mode::collect) return run(nullptr);
    std::uint8_t* out = results != nullptr ? results + begin : scratch.get(count);
    if (out == nullptr) return BatchResult{Status::system_error, 0, 0, 0};
    return run(out);
}

}  // namespace

// ---------------------------------------------------------------------------
// Client::Impl: rows and columns
// ---------------------------------------------------------------------------
// Copy API over the zero-copy path, pipelined.
BatchResult Client::Impl::run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results,
                              std::uint8_t table, const detail::CancelCheck& stop) {
    BatchResult total;
    if (!rows.valid() || !wire::encoding_accepted(rows.kind, rows.encoding)) {
        total.status = Status::invalid_argument;
        return total;
    }
    if (mode == wire::Mode::results && results != nullptr && rows.count != 0)
        std::memset(results, 0, rows.count);  // fail closed
    if (rows.count == 0) return total;
    detail::CountsOnlyScratch scratch;  // results mode without results: the local fallback's verdicts
    const std::size_t stride = rows.row_stride();
    std::size_t chunk;
    {
        std::unique_lock lk(mu);
        maybe_reconnect_locked(lk);
        const std::uint64_t arena_quarter_rows =
            live ? (conn.arena_size / 4 > 2 * kAlign ? (conn.arena_size / 4 - 2 * kAlign) / (stride + 1) : 0) : 0;
        chunk = std::max<std::uint64_t>(1, std::min<std::uint64_t>(arena_quarter_rows, kMaxChunkRows));
        if (live && chunk > max_alloc_rows(rows.kind, rows.tail_size)) chunk = max_alloc_rows(rows.kind, rows.tail_size);
    }
    auto sub_span = [&](std::size_t begin, std::size_t count) {
        return wire::RowSpan{rows.kind, rows.tail_size, rows.encoding, rows.row(begin), count};
    };
    return pipeline<RowBatch>(
        rows.count, chunk, mode, rows.encoding, table, stop,
        [&](std::size_t begin, std::size_t count, RowBatch& b, bool wait) {
            const Status st = reserve(rows.kind, rows.tail_size, count, b, wait);
            if (st == Status::ok) std::memcpy(b.rows, rows.row(begin), count * stride);
            return st;
        },
        [&](std::size_t begin, std::size_t count, const RowBatch& b) {
            if (mode == wire::Mode::collect)
                std::memcpy(rows.row(begin), b.rows, count * stride);
            else if (results != nullptr)
                std::memcpy(results + begin, b.results, count);
        },
        [&](std::size_t begin, std::size_t count) {
            return run_piece_locally(mode, results, scratch, begin, count,
                                     [&](std::uint8_t* out) { return local.run(sub_span(begin, count), mode, out); });
        },
        [&](Status st) { return is_daemon_failure(st) || st == Status::too_large; });
}

// Column copy API over the zero-copy column path, pipelined like run().
// Results mode sends no correlate (the daemon never reads it there).
BatchResult Client::Impl::run_columns(const Columns& cols, wire::Mode mode, std::uint8_t* results,
                                      std::uint8_t table, const detail::CancelCheck& stop) {
    BatchResult total;
    const std::size_t n = cols.count;
    // The columns that travel: the correlate only in collect mode.
    wire::ColumnSpan sent = cols;
    if (mode != wire::Mode::collect) {
        sent.tail_size = 0;
        sent.correlate = nullptr;
    }
    const std::size_t tail = sent.tail_size;
    if (static_cast<std::uint8_t>(mode) > 1 || sent.check() != wire::ColumnError::none ||
        cols.tail_size > wire::kMaxTailSize ||
        n > std::numeric_limits<std::size_t>::max() / (wire::stride(cols.kind, cols.tail_size) + 1)) {
        total.status = Status::invalid_argument;
        return total;
    }
    if (mode == wire::Mode::results && results != nullptr && n != 0) std::memset(results, 0, n);  // fail closed
    if (n == 0) return total;
    detail::CountsOnlyScratch scratch;  // results mode without results: the local fallback's verdicts
    const wire::SigEncoding enc = wire::wire_encoding(cols.kind, cols.encoding);
    const std::size_t key_width = wire::column_key_width(cols.kind);
    std::size_t chunk;
    {
        std::unique_lock lk(mu);
        maybe_reconnect_locked(lk);
        const std::uint64_t per_row = wire::stride(cols.kind, tail) + 1;
        const std::uint64_t arena_quarter_rows =
            live ? (conn.arena_size / 4 > 5 * kAlign ? (conn.arena_size / 4 - 5 * kAlign) / per_row : 0) : 0;
        chunk = std::max<std::uint64_t>(1, std::min<std::uint64_t>(arena_quarter_rows, kMaxChunkRows));
        if (live && chunk > max_alloc_column_rows(cols.kind, tail))
            chunk = max_alloc_column_rows(cols.kind, tail);
    }
    sent.encoding = enc;
    // Rows [begin, begin + count) of the caller's columns.
    auto sub_batch = [&](std::size_t begin, std::size_t count) { return sent.subspan(begin, count); };
    return pipeline<ColumnBatch>(
        n, chunk, mode, enc, table, stop,
        [&](std::size_t begin, std::size_t count, ColumnBatch& b, bool wait) {
            const Status st = reserve_columns(cols.kind, tail, count, b, wait);
            if (st != Status::ok) return st;
            std::memcpy(b.message, cols.message + begin * wire::kColumnMessageWidth, count * wire::kColumnMessageWidth);
            std::memcpy(b.key, cols.key + begin * key_width, count * key_width);
            std::memcpy(b.signature, cols.signature + begin * wire::kColumnSignatureWidth,
                        count * wire::kColumnSignatureWidth);
            if (tail != 0) std::memcpy(b.correlate, cols.correlate + begin * tail, count * tail);
            return st;
        },
        [&](std::size_t begin, std::size_t count, const ColumnBatch& b) {
            if (mode == wire::Mode::collect) {
                if (tail != 0) std::memcpy(cols.correlate + begin * tail, b.correlate, count * tail);
            } else if (results != nullptr) {
                std::memcpy(results + begin, b.results, count);
            }
        },
        [&](std::size_t begin, std::size_t count) {
            return run_piece_locally(mode, results, scratch, begin, count, [&](std::uint8_t* out) {
                return local.run_columns(sub_batch(begin, count), mode, out);
            });
        },
        // An old daemon (bad_entry) is covered by the fallback as an absent one is.
        [&](Status st) { return is_daemon_failure(st) || st == Status::too_large || st == Status::bad_entry; });
}

// ---------------------------------------------------------------------------
// Client: the public copy calls
// ---------------------------------------------------------------------------
BatchResult Client::run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, std::uint8_t table) {
    return session().run(rows, mode, results, table, detail::CancelCheck{});
}

BatchResult Client::run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, std::uint8_t table,
                        std::stop_token stop) {
    return session().run(rows, mode, results, table, detail::CancelCheck{std::move(stop), nullptr});
}

BatchResult Client::run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, std::uint8_t table,
                        const std::atomic<bool>* cancel) {
    return session().run(rows, mode, results, table, detail::CancelCheck{{}, cancel});
}

BatchResult Client::verify_ecdsa(const std::uint8_t* rows, std::size_t n, std::size_t tail_size,
                                 std::uint8_t* results, wire::SigEncoding encoding) {
    return run(wire::RowSpan{wire::RecordKind::ecdsa, tail_size, encoding, const_cast<std::uint8_t*>(rows), n},
               wire::Mode::results, results);
}

BatchResult Client::verify_schnorr(const std::uint8_t* rows, std::size_t n, std::size_t tail_size,
                                   std::uint8_t* results) {
    return run(wire::RowSpan{wire::RecordKind::schnorr, tail_size, wire::SigEncoding::opaque,
                             const_cast<std::uint8_t*>(rows), n},
               wire::Mode::results, results);
}

namespace {
template <class Row>
wire::RowSpan table_span(std::span<Row> rows, wire::Table table, wire::SigEncoding enc) {
    using Bare = std::remove_const_t<Row>;
    return wire::RowSpan{wire::record_kind(table), wire::canonical_tail_size(table), enc,
                         reinterpret_cast<std::uint8_t*>(const_cast<Bare*>(rows.data())), rows.size()};
}
}  // namespace

BatchResult Client::verify_ecdsa(std::span<const wire::EcdsaRow> rows, std::span<std::uint8_t> results,
                                 wire::SigEncoding encoding) {
    if (results.size() < rows.size()) return BatchResult{Status::invalid_argument, 0, 0, 0};
    return run(table_span(rows, wire::Table::ecdsa, encoding), wire::Mode::results, results.data(),
               static_cast<std::uint8_t>(wire::Table::ecdsa));
}

BatchResult Client::verify_multisig(std::span<const wire::MultisigRow> rows, std::span<std::uint8_t> results,
                                    wire::SigEncoding encoding) {
    if (results.size() < rows.size()) return BatchResult{Status::invalid_argument, 0, 0, 0};
    return run(table_span(rows, wire::Table::multisig, encoding), wire::Mode::results, results.data(),
               static_cast<std::uint8_t>(wire::Table::multisig));
}

BatchResult Client::verify_schnorr(std::span<const wire::SchnorrRow> rows, std::span<std::uint8_t> results) {
    if (results.size() < rows.size()) return BatchResult{Status::invalid_argument, 0, 0, 0};
    return run(table_span(rows, wire::Table::schnorr, wire::SigEncoding::opaque), wire::Mode::results,
               results.data(), static_cast<std::uint8_t>(wire::Table::schnorr));
}

BatchResult Client::verify_threshold(std::span<const wire::ThresholdRow> rows, std::span<std::uint8_t> results) {
    if (results.size() < rows.size()) return BatchResult{Status::invalid_argument, 0, 0, 0};
    return run(table_span(rows, wire::Table::threshold, wire::SigEncoding::opaque), wire::Mode::results,
               results.data(), static_cast<std::uint8_t>(wire::Table::threshold));
}

BatchResult Client::collect_ecdsa(std::uint8_t* rows, std::size_t n, std::size_t tail_size,
                                  wire::SigEncoding encoding) {
    return run(wire::RowSpan{wire::RecordKind::ecdsa, tail_size, encoding, rows, n}, wire::Mode::collect, nullptr);
}

BatchResult Client::collect_schnorr(std::uint8_t* rows, std::size_t n, std::size_t tail_size) {
    return run(wire::RowSpan{wire::RecordKind::schnorr, tail_size, wire::SigEncoding::opaque, rows, n},
               wire::Mode::collect, nullptr);
}

BatchResult Client::collect_ecdsa(std::span<wire::EcdsaRow> rows, wire::SigEncoding encoding) {
    return run(table_span(rows, wire::Table::ecdsa, encoding), wire::Mode::collect, nullptr,
               static_cast<std::uint8_t>(wire::Table::ecdsa));
}

BatchResult Client::collect_multisig(std::span<wire::MultisigRow> rows, wire::SigEncoding encoding) {
    return run(table_span(rows, wire::Table::multisig, encoding), wire::Mode::collect, nullptr,
               static_cast<std::uint8_t>(wire::Table::multisig));
}

BatchResult Client::collect_schnorr(std::span<wire::SchnorrRow> rows) {
    return run(table_span(rows, wire::Table::schnorr, wire::SigEncoding::opaque), wire::Mode::collect, nullptr,
               static_cast<std::uint8_t>(wire::Table::schnorr));
}

BatchResult Client::collect_threshold(std::span<wire::ThresholdRow> rows) {
    return run(table_span(rows, wire::Table::threshold, wire::SigEncoding::opaque), wire::Mode::collect, nullptr,
               static_cast<std::uint8_t>(wire::Table::threshold));
}

BatchResult Client::run_columns(const Columns& columns, wire::Mode mode, std::uint8_t* results, std::uint8_t table) {
    return session().run_columns(columns, mode, results, table, detail::CancelCheck{});
}

BatchResult Client::run_columns(const Columns& columns, wire::Mode mode, std::uint8_t* results, std::uint8_t table,
                                std::stop_token stop) {
    return session().run_columns(columns, mode, results, table, detail::CancelCheck{std::move(stop), nullptr});
}

BatchResult Client::run_columns(const Columns& columns, wire::Mode mode, std::uint8_t* results, std::uint8_t table,
                                const std::atomic<bool>* cancel) {
    return session().run_columns(columns, mode, results, table, detail::CancelCheck{{}, cancel});
}

namespace {
Columns make_columns(wire::RecordKind kind, wire::SigEncoding encoding, const std::uint8_t* message,
                     const std::uint8_t* key, const std::uint8_t* signature, std::uint8_t* correlate, std::size_t n,
                     std::size_t tail_size) {
    return Columns{kind, encoding, n, tail_size, message, key, signature, correlate};
}
}  // namespace

BatchResult Client::verify_ecdsa_columns(const std::uint8_t* message, const std::uint8_t* key,
                                         const std::uint8_t* signature, std::size_t n, std::uint8_t* results,
                                         wire::SigEncoding encoding) {
    return run_columns(make_columns(wire::RecordKind::ecdsa, encoding, message, key, signature, nullptr, n, 0),
                       wire::Mode::results, results);
}

BatchResult Client::verify_schnorr_columns(const std::uint8_t* message, const std::uint8_t* key,
                                           const std::uint8_t* signature, std::size_t n, std::uint8_t* results) {
    return run_columns(
        make_columns(wire::RecordKind::schnorr, wire::SigEncoding::opaque, message, key, signature, nullptr, n, 0),
        wire::Mode::results, results);
}

BatchResult Client::collect_ecdsa_columns(const std::uint8_t* message, const std::uint8_t* key,
                                          const std::uint8_t* signature, std::uint8_t* correlate, std::size_t n,
                                          std::size_t tail_size, wire::SigEncoding encoding) {
    return run_columns(make_columns(wire::RecordKind::ecdsa, encoding, message, key, signature, correlate, n, tail_size),
                       wire::Mode::collect, nullptr);
}

BatchResult Client::collect_schnorr_columns(const std::uint8_t* message, const std::uint8_t* key,
                                            const std::uint8_t* signature, std::uint8_t* correlate, std::size_t n,
                                            std::size_t tail_size) {
    return run_columns(make_columns(wire::RecordKind::schnorr, wire::SigEncoding::opaque, message, key, signature,
                                    correlate, n, tail_size),
                       wire::Mode::collect, nullptr);
}

}  // namespace sigverify
