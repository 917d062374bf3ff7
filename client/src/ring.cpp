// SPDX-License-Identifier: MIT
// libsigverify internals: the ring side of a session (Client::Impl, see
// client_impl.hpp): slots and arena space for batches, submissions into the
// submission ring, completions out of the completion ring, and waiting.
//
// A batch's life: reserve / reserve_columns (a slot and arena space; may wait
// for space) -> the caller writes its input in place -> submit (one
// SubmissionEntry, the daemon's bell rung) -> wait / poll (reaps completions;
// between checks, spins briefly and then sleeps on the client bell's futex,
// never longer than liveness_interval, checking that the daemon lives) ->
// release (frees the slot; its arena space is freed once every older
// allocation is). A batch released while in flight is abandoned: its slot is
// freed when its completion (or the daemon's death) arrives, never before, as
// the daemon may still write its arena space.
//
// Completions are matched to slots by (slot, generation) in user_tag; a
// completion from another epoch is never applied (stale_epoch). An
// out-of-range ring index from the daemon ends the session.

#include <algorithm>
#include <atomic>
#include <cstring>

#include "client_impl.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/spin_wait.hpp"

namespace sigverify {
namespace {

using detail::align_up;
using detail::is_daemon_failure;
using detail::kAlign;

// What a reserved batch (RowBatch or ColumnBatch) carries of its slot: its
// shape and the slot's identity, which every later call checks (slot_of).
void stamp_batch(auto& b, const auto& slot, std::uint32_t index) {
    b.count = slot.count;
    b.kind = slot.kind;
    b.tail_size = slot.tail_size;
    b.slot = index;
    b.generation = slot.generation;
}

// Where the parts of a column batch go, relative to its start: message,
// key, signature, correlate (when tail_size > 0) and results, each
// kAlign-aligned. Overflow-free for count <= max_alloc_column_rows().
struct ColumnPlacement {
    std::uint64_t key = 0, signature = 0, correlate = 0, results = 0, total = 0;
};

ColumnPlacement place_columns(wire::RecordKind kind, std::size_t tail_size, std::uint64_t count) {
    ColumnPlacement p;
    p.key = align_up(count * wire::kColumnMessageWidth);
    p.signature = p.key + align_up(count * wire::column_key_width(kind));
    p.correlate = p.signature + align_up(count * wire::kColumnSignatureWidth);
    p.results = p.correlate + align_up(count * tail_size);
    p.total = p.results + align_up(count);
    return p;
}

}  // namespace

void Client::Impl::setup_slots() {
    const std::uint32_t k = std::min(conn.sq_entries, conn.cq_entries);
    slots.assign(k, Slot{});
    free_slots.clear();
    free_slots.reserve(k);
    for (std::uint32_t i = k; i-- > 0;) free_slots.push_back(i);
    order.assign(k, 0);
    order_head = order_count = 0;
    arena_head = arena_tail = 0;
    in_use = 0;
}

void Client::Impl::reap_locked() {
    if (!live) return;
    std::uint32_t ready = 0;
    if (!conn.cq.available(ready)) {
        mark_dead_locked("sigverifyd published an out-of-range completion index");
        return;
    }
    if (ready == 0) return;
    for (; ready > 0; --ready) {
        const shm::CompletionEntry c = conn.cq.pop();
        const bool cancel_answer = (c.user_tag & detail::kCancelTagBit) != 0;
        const std::uint32_t index = static_cast<std::uint32_t>(c.user_tag & (detail::kCancelTagBit - 1));
        const std::uint32_t gen = static_cast<std::uint32_t>(c.user_tag >> 32);
        if (index >= slots.size()) continue;
        Slot& s = slots[index];
        if (cancel_answer) {
            // The daemon's answer to a cancel entry for this slot's batch.
            if (s.generation == gen && s.cancel_state == CancelState::sent) {
                s.cancel_state = CancelState::answered;
                s.cancel_answer = c.epoch != conn.epoch ? Status::stale_epoch
                                  : c.status < shm::kStatusCount ? static_cast<Status>(c.status)
                                                                 : Status::backend_error;
            }
            continue;
        }
        if (s.generation != gen || s.state != SlotState::submitted) continue;
        s.state = SlotState::done;
        s.result = BatchResult{};
        if (c.epoch != conn.epoch) {
            s.result.status = Status::stale_epoch;  // never apply a verdict of another epoch
        } else {
            s.result.status = c.status < shm::kStatusCount ? static_cast<Status>(c.status) : Status::backend_error;
            // A cancelled batch keeps the counts of the rows that were verified.
            if (s.result.status == Status::ok || s.result.status == Status::cancelled) {
                s.result.valid = c.valid;
                s.result.invalid = c.invalid;
            }
        }
        if (s.abandoned) free_slot_locked(index);
    }
    conn.cq.release();
    shm::ring(conn.header->daemon_bell);  // completion ring space freed
}

std::uint32_t Client::Impl::bell_seq() const {
    return std::atomic_ref<std::uint32_t>(conn.header->client_bell.seq).load(std::memory_order_seq_cst);
}

// Sleeps (lock released) until the client bell moves past seq, at most
// until the deadline and at most liveness_interval.
void Client::Impl::sleep_locked(std::unique_lock<std::mutex>& lk, std::uint32_t seq, Clock::time_point deadline) {
    shm::SegmentHeader* h = conn.header;
    ++sleepers;
    lk.unlock();
    auto& bell = h->client_bell;
    const bool moved = shm::spin_until(
        [&] { return std::atomic_ref<std::uint32_t>(bell.seq).load(std::memory_order_acquire) != seq; },
        std::min(deadline, Clock::now() + shm::kSpinBeforeSleep));
    if (!moved) {
        auto t = std::chrono::duration_cast<std::chrono::nanoseconds>(opt.liveness_interval);
        const auto left = deadline - Clock::now();
        if (left < t) t = std::chrono::duration_cast<std::chrono::nanoseconds>(left);
        if (t.count() > 0) {
            shm::begin_wait(bell);
            shm::wait(bell, seq, t);
            shm::end_wait(bell);
        }
    }
    lk.lock();
    --sleepers;
}

void Client::Impl::free_slot_locked(std::uint32_t index) {
    Slot& s = slots[index];
    s.state = SlotState::released;
    s.abandoned = false;
    while (order_count != 0) {
        const std::uint32_t front = order[order_head];
        Slot& f = slots[front];
        if (f.state != SlotState::released) break;
        arena_head = f.end;
        f.state = SlotState::free;
        free_slots.push_back(front);
        --in_use;
        order_head = (order_head + 1) % order.size();
        --order_count;
    }
    if (order_count == 0) arena_head = arena_tail = 0;
}

// Tries to take a slot and `bytes` contiguous arena bytes (a multiple of
// kAlign); the slot's rows_offset is where they start.
bool Client::Impl::try_alloc_locked(std::uint64_t bytes, std::uint32_t& index) {
    if (free_slots.empty()) return false;
    const std::uint64_t a = conn.arena_size;
    std::uint64_t start = arena_tail;
    const std::uint64_t off = start % a;
    if (bytes != 0 && off + bytes > a) start += a - off;  // wrap: pad to the arena's end
    if (start + bytes - arena_head > a) return false;
    index = free_slots.back();
    free_slots.pop_back();
    Slot& s = slots[index];
    s.state = SlotState::reserved;
    s.abandoned = false;
    s.generation = next_generation++;
    if (next_generation == 0) next_generation = 1;
    s.begin = arena_tail;
    s.end = start + bytes;
    s.rows_offset = start % a;
    s.results_offset = 0;
    s.shape = detail::BatchShape::rows;
    s.key_offset = s.signature_offset = s.correlate_offset = 0;
    s.buffer_id = s.message_offset = 0;
    s.column_set_offset = 0;
    s.cancel_requested = false;
    s.cancel_state = CancelState::none;
    s.cancel_answer = Status::ok;
    arena_tail = s.end;
    order[(order_head + order_count) % order.size()] = index;
    ++order_count;
    ++in_use;
    return true;
}

std::uint64_t Client::Impl::max_alloc_rows(wire::RecordKind kind, std::size_t tail_size) const {
    const std::uint64_t per_row = wire::stride(kind, tail_size) + 1;
    if (conn.arena_size <= 2 * kAlign) return 0;
    return (conn.arena_size - 2 * kAlign) / per_row;
}

// A slot and `bytes` of arena for a new batch: reaps completions and, with
// `wait`, sleeps on the bell until space frees up, the daemon dies or
// batch_timeout passes.
Status Client::Impl::alloc_waiting_locked(std::unique_lock<std::mutex>& lk, std::uint64_t bytes, bool wait,
                                          std::uint32_t& index) {
    const Clock::time_point deadline = wait_deadline();
    for (;;) {
        const std::uint32_t seq = bell_seq();
        reap_locked();
        if (!live) return Status::disconnected;
        if (try_alloc_locked(bytes, index)) return Status::ok;
        if (!wait) return Status::ring_full;
        if (!alive_locked()) return Status::disconnected;
        if (Clock::now() >= deadline) return Status::timeout;
        sleep_locked(lk, seq, deadline);
    }
}

Status Client::Impl::reserve(wire::RecordKind kind, std::size_t tail_size, std::size_t count, RowBatch& b,
                             bool wait) {
    std::unique_lock lk(mu);
    maybe_reconnect_locked(lk);
    if (!live) return conn.header == nullptr && slots.empty() ? Status::unreachable : Status::disconnected;
    if (count > max_alloc_rows(kind, tail_size)) return Status::too_large;
    const std::uint64_t rows_bytes = std::uint64_t(count) * wire::stride(kind, tail_size);
    std::uint32_t index = 0;
    if (const Status st = alloc_waiting_locked(lk, align_up(rows_bytes) + align_up(count), wait, index);
        st != Status::ok)
        return st;
    Slot& s = slots[index];
    s.results_offset = s.rows_offset + align_up(rows_bytes);
    s.count = count;
    s.kind = kind;
    s.tail_size = tail_size;
    b = RowBatch{};
    b.rows = conn.arena + s.rows_offset;
    b.results = conn.arena + s.results_offset;
    stamp_batch(b, s, index);
    return Status::ok;
}

std::uint64_t Client::Impl::max_alloc_column_rows(wire::RecordKind kind, std::size_t tail_size) const {
    // Five parts, each padded by less than kAlign.
    const std::uint64_t per_row = wire::stride(kind, tail_size) + 1;
    if (conn.arena_size <= 5 * kAlign) return 0;
    return (conn.arena_size - 5 * kAlign) / per_row;
}

Status Client::Impl::reserve_columns(wire::RecordKind kind, std::size_t tail_size, std::size_t count, ColumnBatch& b,
                                     bool wait) {
    std::unique_lock lk(mu);
    maybe_reconnect_locked(lk);
    if (!live) return conn.header == nullptr && slots.empty() ? Status::unreachable : Status::disconnected;
    if (conn.abi_minor < shm::kAbiMinorColumns) {
        last_error = "sigverifyd speaks ring ABI " + std::to_string(shm::kAbiMajor) + "." +
                     std::to_string(conn.abi_minor) + "; column batches need " + std::to_string(shm::kAbiMajor) +
                     "." + std::to_string(shm::kAbiMinorColumns);
        return Status::bad_entry;
    }
    if (count > max_alloc_column_rows(kind, tail_size)) return Status::too_large;
    const ColumnPlacement p = place_columns(kind, tail_size, count);
    std::uint32_t index = 0;
    if (const Status st = alloc_waiting_locked(lk, p.total, wait, index); st != Status::ok) return st;
    Slot& s = slots[index];
    const std::uint64_t base = s.rows_offset;
    s.shape = detail::BatchShape::arena_columns;
    s.key_offset = base + p.key;
    s.signature_offset = base + p.signature;
    s.correlate_offset = tail_size != 0 ? base + p.correlate : 0;
    s.results_offset = base + p.results;
    s.count = count;
    s.kind = kind;
    s.tail_size = tail_size;
    b = ColumnBatch{};
    b.message = conn.arena + base;
    b.key = conn.arena + s.key_offset;
    b.signature = conn.arena + s.signature_offset;
    b.correlate = tail_size != 0 ? conn.arena + s.correlate_offset : nullptr;
    b.results = conn.arena + s.results_offset;
    stamp_batch(b, s, index);
    return Status::ok;
}

Client::Impl::Slot* Client::Impl::slot_of(detail::SlotRef b) {
    if (b.generation == 0 || b.slot >= slots.size()) return nullptr;
    Slot& s = slots[b.slot];
    if (s.generation != b.generation || s.state == SlotState::free || s.state == SlotState::released)
        return nullptr;
    return &s;
}

Status Client::Impl::submit(detail::SlotRef b, shm::Opcode opcode, wire::Mode mode, wire::SigEncoding enc,
                            std::uint8_t table, wire::SigEncoding* encoding_out) {
    std::unique_lock lk(mu);
    Slot* s = slot_of(b);
    if (s == nullptr || s->state != SlotState::reserved) return Status::invalid_argument;
    enc = wire::wire_encoding(s->kind, enc);
    s->mode = mode;
    s->encoding = enc;
    if (encoding_out != nullptr) *encoding_out = enc;
    auto fail_slot = [&](Status st) {
        s->state = SlotState::done;
        s->result = BatchResult{};
        s->result.status = st;
        return st;
    };
    if (!live) return fail_slot(Status::disconnected);
    if (shm::word(conn.header->state).load(std::memory_order_acquire) !=
        static_cast<std::uint32_t>(shm::SegmentState::ready))
        return fail_slot(Status::shutting_down);
    if (const Status st = wait_sq_space_locked(lk); st != Status::ok) {
        s = &slots[b.slot];
        return fail_slot(st);
    }
    s = &slots[b.slot];
    shm::SubmissionEntry e{};
    e.user_tag = detail::batch_tag(b);
    const bool verifies = opcode == shm::Opcode::verify;
    if (verifies) opcode = detail::verify_opcode(s->shape);
    e.opcode = static_cast<std::uint8_t>(opcode);
    if (verifies) {
        switch (s->shape) {
        case detail::BatchShape::rows:
            e.rows_offset = s->rows_offset;
            break;
        case detail::BatchShape::arena_columns:
            e.rows_offset = s->rows_offset;  // the message column
            shm::set_column_offsets(e, shm::ColumnOffsets{s->key_offset, s->signature_offset, s->correlate_offset});
            break;
        case detail::BatchShape::registered_columns:
            e.rows_offset = s->message_offset;
            shm::set_registered_offsets(e,
                                        shm::RegisteredColumnOffsets{s->key_offset, s->signature_offset, s->buffer_id});
            break;
        case detail::BatchShape::registered_column_set:
            e.rows_offset = s->column_set_offset;
            break;
        }
        e.results_offset = mode == wire::Mode::results ? s->results_offset : 0;
        e.row_count = s->count;
        e.record_kind = static_cast<std::uint8_t>(s->kind);
        e.key_size = static_cast<std::uint8_t>(s->tail_size);
        e.encoding = static_cast<std::uint8_t>(enc);
        e.mode = static_cast<std::uint8_t>(mode);
        e.table = table;
        if (opt.strict_confirm && conn.abi_minor >= shm::kAbiMinorStrictConfirm) e.flags = shm::kSubmitStrictConfirm;
    } else {
        e.table = shm::kTableUnspecified;
    }
    conn.sq.push(e);
    conn.sq.publish();
    shm::ring(conn.header->daemon_bell);
    s->state = SlotState::submitted;
    return Status::ok;
}

// Slots never exceed the ring size, so the ring has room unless the daemon
// lags in consuming (or cancel entries took entries); wait for it (bounded by
// liveness checks).
Status Client::Impl::wait_sq_space_locked(std::unique_lock<std::mutex>& lk) {
    for (;;) {
        if (!live) return Status::disconnected;
        const std::uint32_t seq = bell_seq();
        std::uint32_t used = 0;
        if (!conn.sq.used(used)) {
            mark_dead_locked("sigverifyd published an out-of-range submission index");
            return Status::disconnected;
        }
        if (used < conn.sq.size()) return Status::ok;
        if (!alive_locked()) return Status::disconnected;
        sleep_locked(lk, seq, Clock::time_point::max());
    }
}

Status Client::Impl::cancel(detail::SlotRef b) {
    std::unique_lock lk(mu);
    Slot* s = slot_of(b);
    if (s == nullptr) return Status::invalid_argument;
    if (s->state == SlotState::done) return Status::not_found;  // its completion is in already
    if (s->state != SlotState::submitted) return Status::invalid_argument;
    s->cancel_requested = true;
    if (!live) return Status::disconnected;
    if (conn.abi_minor < shm::kAbiMinorCancel) {
        last_error = "sigverifyd speaks ring ABI " + std::to_string(shm::kAbiMajor) + "." +
                     std::to_string(conn.abi_minor) + "; cancel needs " + std::to_string(shm::kAbiMajor) + "." +
                     std::to_string(shm::kAbiMinorCancel);
        return Status::bad_entry;
    }
    if (s->cancel_state == CancelState::none) {
        if (const Status st = wait_sq_space_locked(lk); st != Status::ok) return st;
        s = slot_of(b);
        if (s == nullptr) return Status::invalid_argument;
        if (s->state != SlotState::submitted) return Status::not_found;  // completed while we waited
        if (s->cancel_state == CancelState::none) {  // (another thread may have sent one meanwhile)
            shm::SubmissionEntry e{};
            e.user_tag = detail::batch_tag(b) | detail::kCancelTagBit;
            e.opcode = static_cast<std::uint8_t>(shm::Opcode::cancel);
            e.rows_offset = detail::batch_tag(b);  // the batch to cancel
            conn.sq.push(e);
            conn.sq.publish();
            shm::ring(conn.header->daemon_bell);
            s->cancel_state = CancelState::sent;
        }
    }
    const Clock::time_point deadline = wait_deadline();
    for (;;) {
        s = slot_of(b);
        if (s == nullptr) return Status::invalid_argument;
        if (s->cancel_state == CancelState::answered) return s->cancel_answer;
        const std::uint32_t seq = live ? bell_seq() : 0;
        reap_locked();
        if (s->cancel_state == CancelState::answered) return s->cancel_answer;
        if (!alive_locked()) return Status::disconnected;
        if (Clock::now() >= deadline) return Status::timeout;
        sleep_locked(lk, seq, deadline);
    }
}

// Waits for a submitted batch; no fallback here (wait() adds it).
BatchResult Client::Impl::wait_raw(detail::SlotRef b, bool block, const detail::CancelCheck* stop) {
    std::unique_lock lk(mu);
    if (slot_of(b) == nullptr) return BatchResult{Status::invalid_argument, 0, 0, 0};
    const Clock::time_point deadline = wait_deadline();
    for (;;) {
        Slot& s = slots[b.slot];
        if (s.state == SlotState::done) return s.result;
        if (s.state != SlotState::submitted) return BatchResult{Status::invalid_argument, 0, 0, 0};
        const std::uint32_t seq = live ? bell_seq() : 0;
        reap_locked();
        if (s.state == SlotState::done) return s.result;
        if (!alive_locked()) continue;  // marks the slot done (disconnected)
        if (!block) return BatchResult{Status::pending, 0, 0, 0};
        if (stop != nullptr && !s.cancel_requested && stop->stop_requested())
            return BatchResult{Status::pending, 0, 0, 0};
        if (Clock::now() >= deadline) return BatchResult{Status::timeout, 0, 0, 0};
        sleep_locked(lk, seq, deadline);
    }
}

BatchResult Client::Impl::wait(detail::SlotRef b, bool block) {
    BatchResult r = wait_raw(b, block);
    if (r.ok() || !is_daemon_failure(r.status)) return r;
    if (r.status == Status::timeout) return r;  // still in flight: the daemon may write
    {
        // A batch the caller cancelled is over whatever ended it, and is
        // never verified here instead.
        std::lock_guard lk(mu);
        const Slot* s = slot_of(b);
        if (s != nullptr && s->cancel_requested) {
            r.status = Status::cancelled;
            return r;
        }
    }
    if (opt.fallback != Fallback::local) return r;
    // The batch is not in flight any more and its arena space is ours
    // until release(): verify it in place.
    Slot* s;
    wire::RowSpan span;
    wire::ColumnSpan columns;
    bool is_columns;
    std::uint8_t* results;
    wire::Mode mode;
    {
        std::lock_guard lk(mu);
        s = slot_of(b);
        if (s == nullptr) return BatchResult{Status::invalid_argument, 0, 0, 0};
        span = wire::RowSpan{s->kind, s->tail_size, s->encoding, conn.arena + s->rows_offset, s->count};
        is_columns = s->shape == detail::BatchShape::arena_columns;
        columns = wire::ColumnSpan{s->kind,
                                   s->encoding,
                                   s->count,
                                   s->tail_size,
                                   conn.arena + s->rows_offset,
                                   conn.arena + s->key_offset,
                                   conn.arena + s->signature_offset,
                                   s->tail_size != 0 ? conn.arena + s->correlate_offset : nullptr};
        results = conn.arena + s->results_offset;
        mode = s->mode;
    }
    BatchResult lr = is_columns
                         ? local.run_columns(columns, mode, mode == wire::Mode::results ? results : nullptr)
                         : local.run(span, mode, mode == wire::Mode::results ? results : nullptr);
    std::lock_guard lk(mu);
    if ((s = slot_of(b)) != nullptr) s->result = lr;
    return lr;
}

void Client::Impl::release(detail::SlotRef b) {
    std::lock_guard lk(mu);
    Slot* s = slot_of(b);
    if (s != nullptr) {
        if (s->state == SlotState::submitted) s->abandoned = true;
        else free_slot_locked(b.slot);
    }
}

}  // namespace sigverify
