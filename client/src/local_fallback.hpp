// SPDX-License-Identifier: MIT
// libsigverify internals: the local fallback (ClientOptions::fallback ==
// Fallback::local), verification in this process with the reference verifier
// (libsecp256k1), giving the daemon's verdicts on the same rows.
//
// Used when the daemon is unreachable, dies, shuts down or cancels a batch:
// the copy APIs verify the affected pieces of the caller's input here, and
// wait() verifies a failed zero-copy batch in place in the arena.
//
// Invariants: a LocalFallback of a client without fallback verifies nothing
// and answers Status::unreachable. The row verifier is created with the
// client; the column verifier (its own thread pool, which most clients never
// need) on first use. Both are thread-safe: no lock of the client is held
// while they run.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "reference/columns.hpp"
#include "reference/reference_verifier.hpp"
#include "sigverify/client.hpp"

namespace sigverify::detail {

class LocalFallback {
public:
    // enabled: the client has Fallback::local; threads: its local_threads.
    LocalFallback(bool enabled, unsigned threads);

    bool enabled() const { return enabled_; }
    // Verifies rows (results: rows.count bytes from row 0 of the span; null in
    // collect mode). local_rows = rows.count.
    BatchResult run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results);
    // The same for columns; invalid_argument for columns the caller's checks
    // should have refused.
    BatchResult run_columns(const wire::ColumnSpan& columns, wire::Mode mode, std::uint8_t* results);

private:
    reference::ColumnVerifier* column_verifier();

    bool enabled_;
    unsigned threads_;
    std::unique_ptr<reference::Verifier> rows_;
    std::once_flag columns_once_;
    std::unique_ptr<reference::ColumnVerifier> columns_;
};

}  // namespace sigverify::detail
