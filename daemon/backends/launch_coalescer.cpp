// SPDX-License-Identifier: MIT
#include "daemon/backends/launch_coalescer.hpp"

#include <cstring>

namespace sigverify::daemon {

LaunchCoalescer::LaunchCoalescer(std::size_t max_rows, Launch launch)
    : max_rows_(max_rows == 0 ? 1 : max_rows),
      launch_(std::move(launch)),
      // the widest record without a tail: ECDSA (129 bytes)
      staging_rows_(max_rows_ * wire::kEcdsaRecordSize),
      staging_verdicts_(max_rows_) {}

bool LaunchCoalescer::mergeable(const Piece& p) const {
    return p.rows.count <= max_rows_;  // run() packs the records, leaving tails behind
}

bool LaunchCoalescer::verify(const wire::RowSpan& rows, std::uint8_t* verdicts) {
    if (rows.count == 0) return true;
    Piece self{rows, verdicts};
    std::unique_lock lock(mutex_);
    pending_.push_back(&self);
    while (!self.done) {
        if (leading_) {
            done_cv_.wait(lock);
            continue;
        }
        // Lead: the oldest piece, then every later one that fits beside it.
        leading_ = true;
        std::vector<Piece*> batch;
        Piece* first = pending_.front();
        pending_.pop_front();
        batch.push_back(first);
        if (mergeable(*first)) {
            std::size_t total = first->rows.count;
            for (auto it = pending_.begin(); it != pending_.end();) {
                Piece* p = *it;
                if (mergeable(*p) && p->rows.kind == first->rows.kind && p->rows.encoding == first->rows.encoding &&
                    total + p->rows.count <= max_rows_) {
                    total += p->rows.count;
                    batch.push_back(p);
                    it = pending_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        lock.unlock();
        bool ok = false;
        try {
            ok = run(batch);
        } catch (...) {
            ok = false;  // a throwing launch fails its pieces; the next leader carries on
        }
        lock.lock();
        for (Piece* p : batch) {
            p->ok = ok;
            p->done = true;
        }
        leading_ = false;
        done_cv_.notify_all();
    }
    return self.ok;
}

bool LaunchCoalescer::run(std::vector<Piece*>& batch) {
    launches_.fetch_add(1, std::memory_order_relaxed);
    pieces_.fetch_add(batch.size(), std::memory_order_relaxed);
    if (batch.size() == 1) return launch_(batch[0]->rows, batch[0]->verdicts);

    merged_.fetch_add(batch.size(), std::memory_order_relaxed);
    const wire::RecordKind kind = batch[0]->rows.kind;
    const std::size_t record = wire::record_size(kind);
    std::size_t n = 0;
    for (const Piece* p : batch) {
        for (std::size_t i = 0; i < p->rows.count; ++i)
            std::memcpy(staging_rows_.data() + (n + i) * record, p->rows.row(i), record);
        n += p->rows.count;
    }
    const wire::RowSpan all{kind, 0, batch[0]->rows.encoding, staging_rows_.data(), n};
    std::memset(staging_verdicts_.data(), 0, n);
    if (!launch_(all, staging_verdicts_.data())) return false;
    n = 0;
    for (Piece* p : batch) {
        std::memcpy(p->verdicts, staging_verdicts_.data() + n, p->rows.count);
        n += p->rows.count;
    }
    return true;
}

}  // namespace sigverify::daemon
