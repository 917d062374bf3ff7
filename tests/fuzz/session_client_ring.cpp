// SPDX-License-Identifier: MIT
// The fuzzed client's ring and arena (session_client.hpp): submissions (raw,
// plausible, cancels), doorbells, stray packets, a shrinking segment, the
// daemon beginning to shut down, arena writes and header scribbles, and
// reaping every completion against what the client expects of it.
#include "tests/fuzz/session_client.hpp"

namespace sigverify::fuzz {

void Client::push(const shm::SubmissionEntry& e, std::optional<std::uint64_t> valid, const std::uint64_t* set_ids) {
    if (outstanding() >= seg_.sq_entries) reap(false);
    if (closed_ || outstanding() >= seg_.sq_entries) return;
    shm::SubmissionEntry copy = e;
    copy.user_tag = next_tag_++;
    shm::CheckedSubmission c;
    const shm::Status st = shm::check_submission(copy, seg_.arena_size, c);
    bool verifies =
        st == shm::Status::ok && (c.opcode == shm::Opcode::verify || c.opcode == shm::Opcode::verify_columns);
    // A registered batch: the daemon looks the buffer up when it takes the
    // entry, at the next wake-up; every (un)registration wakes it first, so
    // the buffers as the client knows them now are the ones it finds.
    shm::Status answer = st;
    if (st == shm::Status::ok && c.opcode == shm::Opcode::verify_registered_columns) {
        auto b = buffers_.find(c.buffer_id);
        if (b == buffers_.end() || !b->second.live) {
            answer = shm::Status::not_found;
        } else {
            shm::CheckedSubmission r = c;
            answer = shm::check_registered_columns(r, b->second.size);
            verifies = answer == shm::Status::ok;
        }
        if (verifies)  // the verdicts go to the arena (results mode only)
            for (std::uint64_t i = 0; i < c.row_count; ++i) writable_[c.results_offset + i] = 1;
    }
    bool set_exact = false;
    if (st == shm::Status::ok && c.opcode == shm::Opcode::verify_registered_column_set) {
        answer = column_set_answer(c, set_exact);
        verifies = answer == shm::Status::ok;
        // The daemon may find a set the client did not expect (bytes it
        // wrote since): whatever it verifies, its verdicts go to the results.
        for (std::uint64_t i = 0; i < c.row_count; ++i) writable_[c.results_offset + i] = 1;
    }
    if (verifies && c.opcode != shm::Opcode::verify_registered_columns) {
        // What the daemon may write: results bytes, or (collect) the tails of
        // rows / the correlate entries of column rows.
        if (c.mode == wire::Mode::results) {
            for (std::uint64_t i = 0; i < c.row_count; ++i) writable_[c.results_offset + i] = 1;
        } else if (c.opcode == shm::Opcode::verify_columns) {
            for (std::uint64_t i = 0; i < c.row_count * c.tail_size; ++i) writable_[c.correlate_offset + i] = 1;
        } else {
            const std::size_t rec = wire::record_size(c.kind);
            for (std::uint64_t r = 0; r < c.row_count; ++r)
                for (std::size_t k = 0; k < c.tail_size; ++k) writable_[c.rows_offset + r * c.stride + rec + k] = 1;
        }
    }
    Expect expect{answer, c.row_count, verifies};
    expect.entry_ok = st == shm::Status::ok;
    if (st == shm::Status::ok && c.opcode == shm::Opcode::verify_registered_columns) {
        expect.buffer_id = c.buffer_id;
        if (verifies) expect.valid = valid;
    }
    if (st == shm::Status::ok && c.opcode == shm::Opcode::verify_registered_column_set) {
        expect.column_set = true;
        expect.set_exact = set_exact;
        expect.set_offset = c.column_set_offset;
        shm::RegisteredColumnSet set;  // what the client wrote there (set_exact says whether it still is)
        std::memcpy(&set, shadow_.data() + c.column_set_offset, sizeof set);
        expect.set_ids[0] = set.message.buffer_id;
        expect.set_ids[1] = set.key.buffer_id;
        expect.set_ids[2] = set.signature.buffer_id;
        if (set_ids != nullptr && verifies && std::equal(set_ids, set_ids + 3, expect.set_ids)) expect.valid = valid;
    }
    if (st == shm::Status::ok && c.opcode == shm::Opcode::cancel) {
        expect.cancel = true;
        if (auto target = expect_.find(c.cancel_tag); target != expect_.end()) target->second.may_cancel = true;
    }
    expect_[copy.user_tag] = expect;
    sq_.push(copy);
    if (!hostile_) sq_.publish();
    if (!in_.ConsumeBool()) bell();
}

void Client::bell() {
    shm::ring(seg_.header->daemon_bell);
    if (!daemon_.wake()) closed_ = true;
}

void Client::stray_packet() {
    std::size_t n = in_.ConsumeIntegralInRange<std::size_t>(1, 32);
    const std::uint8_t shape = in_.ConsumeIntegral<std::uint8_t>();
    if (shape & 1) n = std::size_t(1) << in_.ConsumeIntegralInRange<int>(9, 12);  // 512 .. 4096 bytes
    if (shape & 2) n += 1;
    std::vector<std::uint8_t> bytes = in_.ConsumeBytes<std::uint8_t>(n);
    bytes.resize(n, 0xA5);  // a short input still sends the size it chose (never 0: that reads as EOF)
    const int pass = (shape & 4) ? sock_ : -1;
    if (!daemon_.wake()) {  // the reader first takes what was already there
        closed_ = true;
        return;
    }
    const std::uint64_t errors = world->ctx->protocol_errors.load();
    FUZZ_CHECK(shm::send_packet(sock_, bytes.data(), bytes.size(), pass));
    // Nothing else changed since the last wake-up (but a hostile completion
    // head can turn out of bounds when the worker posts a verdict).
    const bool up = daemon_.wake();
    FUZZ_CHECK(up || hostile_);
    // Unless it is a buffer (un)registration (ABI 1.4), which the daemon
    // answers on the socket (the reply is read below).
    std::uint32_t magic = 0;
    if (n >= sizeof magic) std::memcpy(&magic, bytes.data(), sizeof magic);
    const bool control = (n == sizeof(shm::RegisterRequest) && magic == shm::kRegisterMagic) ||
                         (n == sizeof(shm::UnregisterRequest) && magic == shm::kUnregisterMagic && pass < 0);
    if (up && !control) FUZZ_CHECK(world->ctx->protocol_errors.load() >= errors + 1);
    if (up && control) {
        // Read the reply (the next registration reads its own); a raw
        // unregister may have named one of the client's buffers.
        shm::RegisterReply reply{};
        FUZZ_CHECK(recv_register_reply(reply));
        if (magic == shm::kUnregisterMagic) {
            FUZZ_CHECK(reply.magic == shm::kUnregisterReplyMagic);
            if (reply.status == static_cast<std::uint32_t>(shm::Status::ok)) {
                auto b = buffers_.find(reply.buffer_id);
                FUZZ_CHECK(b != buffers_.end() && b->second.live);
                b->second.live = false;
            }
        } else {
            // A stray registration passes no descriptor or the socket.
            FUZZ_CHECK(reply.magic == shm::kRegisterReplyMagic);
            FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::invalid_argument));
        }
    }
    if (debug())
        std::fprintf(stderr, "packet of %zu bytes%s: session %s, protocol errors +%llu\n", n,
                     pass >= 0 ? " with a descriptor" : "", up ? "goes on" : "ended",
                     static_cast<unsigned long long>(world->ctx->protocol_errors.load() - errors));
    if (!up) closed_ = true;
}

void Client::truncate_segment() {
    const std::uint64_t keep = in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.size - 1) & ~std::uint64_t(4095);
    FUZZ_CHECK(ftruncate(seg_fd_, static_cast<off_t>(keep)) == 0);
    hostile_ = truncated_ = true;
    bell();
    if (debug())
        std::fprintf(stderr, "segment cut to %llu bytes: session %s\n", static_cast<unsigned long long>(keep),
                     closed_ ? "ended" : "goes on");
}

void Client::begin_shutdown() {
    if (closing_tag_ == 0) {
        // Entries at and after the daemon's published head are taken after
        // this (tag = ring index + 1). A hostile client's completions are
        // not checked.
        closing_tag_ = hostile_ ? 1 : shm::word(seg_.header->sq_head).load(std::memory_order_acquire) + 1ull;
        daemon_.server_closing();
    }
    bell();
}

void Client::submit_cancel() {
    shm::SubmissionEntry e{};
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::cancel);
    const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
    switch (f % 4) {
    case 0:
    case 1: e.rows_offset = next_tag_ > 1 ? next_tag_ - 1 - (f >> 2) % (next_tag_ - 1) : 0; break;
    case 2: e.rows_offset = next_tag_ + (f >> 2); break;  // not submitted yet
    default: e.rows_offset = in_.ConsumeIntegral<std::uint64_t>(); break;
    }
    if (f & 0x80) e.row_count = in_.ConsumeIntegral<std::uint8_t>();  // every other field must be 0
    push(e);
}

void Client::submit_plausible() {
    shm::SubmissionEntry e{};
    const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
    e.opcode = static_cast<std::uint8_t>((f & 7) == 0   ? shm::Opcode::nop
                                         : (f & 7) == 1 ? shm::Opcode::verify_columns
                                                        : shm::Opcode::verify);
    e.record_kind = (f >> 3) & 1;
    e.encoding = e.record_kind == 0 ? ((f >> 4) & 1) : 0;
    e.mode = (f >> 5) & 1;
    e.table = (f & 0x40) ? static_cast<std::uint8_t>(e.record_kind == 0 ? (f >> 7) : 2 + (f >> 7))
                         : shm::kTableUnspecified;
    e.key_size = in_.ConsumeBool() ? static_cast<std::uint8_t>(e.record_kind == 0 ? 3 + 3 * (f >> 7) : 3 + 3 * (f >> 7))
                                   : in_.ConsumeIntegral<std::uint8_t>();
    if (e.opcode == static_cast<std::uint8_t>(shm::Opcode::nop)) {
        push(e);
        return;
    }
    e.row_count = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, 40) : in_.ConsumeIntegral<std::uint64_t>();
    e.rows_offset = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size + 8)
                                      : in_.ConsumeIntegral<std::uint64_t>();
    if (e.mode == 0)
        e.results_offset = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size + 8)
                                             : in_.ConsumeIntegral<std::uint64_t>();
    if (e.opcode == static_cast<std::uint8_t>(shm::Opcode::verify_columns)) {
        auto offset = [&] {
            return in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size + 8)
                                     : in_.ConsumeIntegral<std::uint64_t>();
        };
        shm::ColumnOffsets o{};
        o.key_offset = offset();
        o.signature_offset = offset();
        o.correlate_offset = e.key_size != 0 ? offset() : 0;
        shm::set_column_offsets(e, o);
    }
    push(e);
}

void Client::submit_raw() {
    shm::SubmissionEntry e{};
    const auto bytes = in_.ConsumeBytes<std::uint8_t>(sizeof e);
    if (!bytes.empty()) std::memcpy(&e, bytes.data(), bytes.size());
    push(e);
}

bool Client::set_buffer_shrunk(const Expect& e) const {
    for (std::uint64_t id : e.set_ids)
        if (const auto b = buffers_.find(id); b != buffers_.end() && b->second.shrunk) return true;
    return false;
}

shm::Status Client::column_set_answer(shm::CheckedSubmission& c, bool& exact) const {
    exact = true;
    for (std::uint64_t i = 0; i < sizeof(shm::RegisteredColumnSet); ++i)
        if (writable_[c.column_set_offset + i]) exact = false;  // the daemon may have written its verdicts there
    shm::RegisteredColumnSet set;
    std::memcpy(&set, shadow_.data() + c.column_set_offset, sizeof set);
    std::uint64_t sizes[3];
    const shm::RegisteredColumnRef* refs[3] = {&set.message, &set.key, &set.signature};
    for (int i = 0; i < 3; ++i) {
        const auto b = buffers_.find(refs[i]->buffer_id);
        if (b == buffers_.end() || !b->second.live) return shm::Status::not_found;
        if (b->second.shrunk) exact = false;  // buffer_lost, or not_found once the daemon dropped it
        sizes[i] = b->second.size;
    }
    return shm::check_registered_column_set(c, set, sizes);
}

void Client::write_arena(std::uint64_t off, const std::uint8_t* p, std::size_t n) {
    if (off >= seg_.arena_size || n == 0) return;
    for (auto& [tag, e] : expect_)  // a set the daemon may not have copied out yet
        if (e.column_set && off < e.set_offset + sizeof(shm::RegisteredColumnSet) && e.set_offset < off + n)
            e.set_exact = false;
    n = std::min<std::uint64_t>(n, seg_.arena_size - off);
    std::memcpy(seg_.arena + off, p, n);
    std::memcpy(shadow_.data() + off, p, n);
}

void Client::write_rows() {
    const int t = in_.ConsumeIntegralInRange<int>(0, 3);
    const std::size_t stride = wire::stride(wire::record_kind(static_cast<wire::Table>(t)),
                                            wire::canonical_tail_size(static_cast<wire::Table>(t)));
    const std::size_t first = in_.ConsumeIntegralInRange<std::size_t>(0, 31);
    const std::size_t count = in_.ConsumeIntegralInRange<std::size_t>(1, 32 - first);
    const std::uint64_t off = in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size - 1);
    write_arena(off, world->pool[t].data() + first * stride, count * stride);
}

void Client::write_bytes() {
    const std::uint64_t off = in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size - 1);
    const auto bytes = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(1, 256));
    write_arena(off, bytes.data(), bytes.size());
}

void Client::scribble_header() {
    // Anything in the header page, the daemon's own words included: it must
    // never read back what it owns or trust what the client owns.
    const std::size_t off = in_.ConsumeIntegralInRange<std::size_t>(0, shm::kHeaderSize - 1);
    const auto bytes = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(1, 16));
    const std::size_t n = std::min(bytes.size(), shm::kHeaderSize - off);
    if (n == 0) return;
    std::memcpy(seg_.base + off, bytes.data(), n);
    // Our own bookkeeping relies on the ring index words; past them we are hostile.
    if (off < 448 && off + n > offsetof(shm::SegmentHeader, sq_head)) hostile_ = true;
}

void Client::reap(bool all) {
    if (hostile_) {
        // Indices are no longer ours to trust: only wait for the session to
        // end or stay up, never for progress.
        closed_ = shm::word(seg_.header->state).load(std::memory_order_acquire) ==
                  static_cast<std::uint32_t>(shm::SegmentState::closed);
        return;
    }
    sq_.publish();
    bell();
    const auto deadline = Clock::now() + kAnswerBound;
    while (outstanding() != 0) {
        std::uint32_t ready = 0, tail = 0;
        FUZZ_CHECK(cq_.available(ready, &tail));
        for (; ready > 0; --ready) check_completion(cq_.pop());
        cq_.release();
        bell();
        if (!all && outstanding() < seg_.sq_entries) return;
        if (outstanding() == 0) break;
        if (shm::word(seg_.header->state).load(std::memory_order_acquire) ==
            static_cast<std::uint32_t>(shm::SegmentState::closed)) {
            closed_ = true;
            return;
        }
        if (Clock::now() > deadline) {
            std::fprintf(stderr, "honest client: %u of %u entries unanswered after %lld s\n", outstanding(),
                         sq_.tail(), static_cast<long long>(kAnswerBound.count()));
            std::abort();
        }
        const std::uint32_t seq = shm::begin_wait(seg_.header->client_bell);
        if (shm::word(seg_.header->cq_tail).load(std::memory_order_acquire) == tail)
            shm::wait(seg_.header->client_bell, seq, std::chrono::milliseconds(20));
        shm::end_wait(seg_.header->client_bell);
    }
}

void Client::check_completion(const shm::CompletionEntry& c) {
    if (debug())
        std::fprintf(stderr, "completion: tag %llu status %u valid %llu invalid %llu detail %u\n",
                     static_cast<unsigned long long>(c.user_tag), c.status, static_cast<unsigned long long>(c.valid),
                     static_cast<unsigned long long>(c.invalid), c.detail);
    FUZZ_CHECK(c.epoch == world->ctx->epoch);
    auto it = expect_.find(c.user_tag);
    FUZZ_CHECK(it != expect_.end());  // submitted and not answered yet
    const Expect e = it->second;
    expect_.erase(it);
    const Buffer* buffer = nullptr;
    if (e.buffer_id != 0)
        if (auto b = buffers_.find(e.buffer_id); b != buffers_.end()) buffer = &b->second;
    if (closing_tag_ != 0 && c.user_tag >= closing_tag_ && e.entry_ok) {
        FUZZ_CHECK(c.status == static_cast<std::uint32_t>(shm::Status::shutting_down));
        FUZZ_CHECK(c.valid == 0 && c.invalid == 0);
    } else if (e.cancel) {
        FUZZ_CHECK(c.status == static_cast<std::uint32_t>(shm::Status::ok) ||
                   c.status == static_cast<std::uint32_t>(shm::Status::not_found));
        FUZZ_CHECK(c.valid == 0 && c.invalid == 0);
    } else if (e.may_cancel && c.status == static_cast<std::uint32_t>(shm::Status::cancelled)) {
        FUZZ_CHECK(c.valid + c.invalid <= e.rows);  // the chunks that ran before the cancel
    } else if (buffer != nullptr && buffer->shrunk &&
               (c.status == static_cast<std::uint32_t>(shm::Status::buffer_lost) ||
                c.status == static_cast<std::uint32_t>(shm::Status::not_found))) {
        // The client cut the file into the range: the daemon found the loss
        // (SIGBUS guard) under this batch or an earlier one and dropped the
        // registration. Never a verdict of its zeros counted as more rows.
        FUZZ_CHECK(c.valid + c.invalid <= e.rows);
        buffers_[e.buffer_id].live = false;
    } else if (e.column_set && (!e.set_exact || set_buffer_shrunk(e))) {
        // A set the client rewrote (or whose buffer shrank) before the daemon
        // took the entry: any answer a set can get, a verdict per row or none.
        const auto st = static_cast<shm::Status>(c.status);
        FUZZ_CHECK(st == shm::Status::ok || st == shm::Status::not_found || st == shm::Status::buffer_lost ||
                   st == shm::Status::bad_range || st == shm::Status::bad_entry);
        if (st == shm::Status::ok) FUZZ_CHECK(c.valid + c.invalid == e.rows);
        else if (st == shm::Status::buffer_lost) FUZZ_CHECK(c.valid + c.invalid <= e.rows);
        else FUZZ_CHECK(c.valid == 0 && c.invalid == 0);
    } else {
        if (debug() && c.status != static_cast<std::uint32_t>(e.status))
            std::fprintf(stderr, "tag %llu: status %u, the client expected %u\n",
                         static_cast<unsigned long long>(c.user_tag), c.status, static_cast<unsigned>(e.status));
        FUZZ_CHECK(c.status == static_cast<std::uint32_t>(e.status));
        if (e.verify) FUZZ_CHECK(c.valid + c.invalid == e.rows);
        else FUZZ_CHECK(c.valid == 0 && c.invalid == 0);
        // Real rows read from a registered buffer the client left alone:
        // exactly the reference verifier's verdicts.
        if (e.verify && e.valid && buffer != nullptr && !buffer->rewritten && !buffer->shrunk) {
            if (c.valid != *e.valid)
                std::fprintf(stderr, "registered batch tag %llu: %llu valid, the reference verifier says %llu\n",
                             static_cast<unsigned long long>(c.user_tag), static_cast<unsigned long long>(c.valid),
                             static_cast<unsigned long long>(*e.valid));
            FUZZ_CHECK(c.valid == *e.valid);
        }
        if (e.verify && e.valid && e.column_set) {
            bool untouched = true;
            for (std::uint64_t id : e.set_ids) {
                const auto b = buffers_.find(id);
                untouched = untouched && b != buffers_.end() && !b->second.rewritten;
            }
            if (untouched) FUZZ_CHECK(c.valid == *e.valid);  // each column read from its own buffer
        }
    }
    for (std::uint32_t r : c.reserved) FUZZ_CHECK(r == 0);
}

}  // namespace sigverify::fuzz
