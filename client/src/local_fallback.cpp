// SPDX-License-Identifier: MIT
// libsigverify internals: the local fallback verifier (see local_fallback.hpp).
#include "local_fallback.hpp"

#include <exception>

namespace sigverify::detail {

LocalFallback::LocalFallback(bool enabled, unsigned threads) : enabled_(enabled), threads_(threads) {
    if (enabled_) rows_ = std::make_unique<reference::Verifier>(threads_);
}

BatchResult LocalFallback::run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results) {
    BatchResult r;
    if (!rows_) {
        r.status = Status::unreachable;
        return r;
    }
    const reference::Tally t = rows_->run(rows, mode, results);
    r.valid = t.valid;
    r.invalid = t.invalid;
    r.local_rows = rows.count;
    return r;
}

reference::ColumnVerifier* LocalFallback::column_verifier() {
    if (!enabled_) return nullptr;
    try {
        std::call_once(columns_once_, [&] { columns_ = std::make_unique<reference::ColumnVerifier>(threads_); });
    } catch (...) {
        return nullptr;  // the next call tries again
    }
    return columns_.get();
}

BatchResult LocalFallback::run_columns(const wire::ColumnSpan& columns, wire::Mode mode, std::uint8_t* results) {
    BatchResult r;
    reference::ColumnVerifier* v = column_verifier();
    if (v == nullptr) {
        r.status = Status::unreachable;
        return r;
    }
    try {
        const reference::Tally t = v->run(columns, mode, results);
        r.valid = t.valid;
        r.invalid = t.invalid;
        r.local_rows = columns.count;
    } catch (const std::exception&) {
        r.status = Status::invalid_argument;  // columns the caller's checks should have refused
    }
    return r;
}

}  // namespace sigverify::detail
