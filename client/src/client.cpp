// SPDX-License-Identifier: MIT
// libsigverify: the public Client (client.hpp) and the life of its session.
//
// Client forwards to Client::Impl (client_impl.hpp, which maps the other
// files). This file holds connect(), the zero-copy calls, the session
// queries, and the session's life: connecting, noticing that the daemon died
// (segment state closed, control socket hung up), and reconnecting on a later
// call once no batch of the old session is outstanding (at most every
// kReconnectInterval). A dead session's submitted batches complete with
// Status::disconnected.
#include "sigverify/client.hpp"

#include <poll.h>

#include <chrono>

#include "client_impl.hpp"

namespace sigverify {

using Clock = detail::Clock;

Client::Impl::Impl(const ClientOptions& options)
    : opt(options), local(options.fallback == Fallback::local, options.local_threads) {
    if (opt.liveness_interval.count() <= 0) opt.liveness_interval = std::chrono::milliseconds(20);
}

// ---------------------------------------------------------------------------
// The session's life
// ---------------------------------------------------------------------------
Status Client::Impl::connect_locked() {
    detail::Connection c;
    std::string err;
    const Status st = detail::open_connection(opt, c, err);
    last_reconnect = Clock::now();
    if (st != Status::ok) {
        last_error = err;
        return st;
    }
    conn.close();
    conn = c;
    live = true;
    ++session_serial;
    setup_slots();
    return Status::ok;
}

void Client::Impl::maybe_reconnect_locked() {
    // A session the daemon ended (it stopped, or dropped us) is dead even if
    // no batch of ours was there to notice: without this check a client
    // idle across a daemon restart kept submitting into the old segment and
    // got shutting_down forever. One load of the state word, no system call.
    if (live && shm::word(conn.header->state).load(std::memory_order_acquire) ==
                    static_cast<std::uint32_t>(shm::SegmentState::closed))
        mark_dead_locked("sigverifyd ended the session");
    if (live || !opt.reconnect) return;
    if (in_use != 0 || sleepers != 0) return;
    if (Clock::now() - last_reconnect < detail::kReconnectInterval) return;
    connect_locked();
}

void Client::Impl::mark_dead_locked(const std::string& why) {
    if (!live) return;
    live = false;
    last_error = why;
    for (std::uint32_t i = 0; i < slots.size(); ++i) {
        Slot& s = slots[i];
        if (s.state == SlotState::submitted) {
            s.state = SlotState::done;
            s.result = BatchResult{};
            s.result.status = Status::disconnected;
            if (s.abandoned) free_slot_locked(i);
        }
    }
}

bool Client::Impl::alive_locked() {
    if (!live) return false;
    const auto state = shm::word(conn.header->state).load(std::memory_order_acquire);
    if (state == static_cast<std::uint32_t>(shm::SegmentState::closed)) {
        mark_dead_locked("sigverifyd ended the session");
        return false;
    }
    pollfd p{conn.fd, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL | POLLIN))) {
        mark_dead_locked("sigverifyd went away (control socket closed)");
        return false;
    }
    return true;
}

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------
// ---------------------------------------------------------------------------
// Fork safety
// ---------------------------------------------------------------------------
// A session made before fork() is shared with the parent: the segment is a
// MAP_SHARED mapping, so a child reserving slots, submitting or reaping
// completions there takes the parent's verdicts and gives the parent its own
// (false VALID observed). One getpid() per call tells the two apart; the
// child gets a session of its own, made on its first call, and the
// inherited one is left exactly as it is (its mutex may be held by a parent
// thread that does not exist here, its fallback's threads are gone).
Client::Impl& Client::Impl::child_session() {
    const pid_t me = ::getpid();
    Impl* c = forked.load(std::memory_order_acquire);
    while (c == nullptr || c->pid != me) {
        // Absent, or an ancestor's (a grandchild): make this process's own.
        auto fresh = std::make_unique<Impl>(opt);
        {
            std::lock_guard lk(fresh->mu);
            fresh->connect_locked();  // failure: not live; the fallback and reconnect rules apply as usual
        }
        if (forked.compare_exchange_strong(c, fresh.get(), std::memory_order_acq_rel)) {
            c = fresh.release();  // an ancestor's session it replaced is left alone (never freed here)
            break;
        }
    }
    return *c;
}

Client::Impl& Client::session() const {
    Impl& own = *impl_;
    return own.pid == ::getpid() ? own : own.child_session();
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() {
    if (impl_ == nullptr || impl_->pid == ::getpid()) return;  // our own: freed as usual
    // A forked child: free only the session made here; the inherited one is
    // the parent's and is leaked on purpose (closing or unmapping it is
    // harmless to the parent, but its mutex and threads are not ours).
    Impl* c = impl_->forked.load(std::memory_order_acquire);
    if (c != nullptr && c->pid == ::getpid()) delete c;
    static_cast<void>(impl_.release());
}

std::unique_ptr<Client> Client::connect(const ClientOptions& options, Status& status, std::string& message) noexcept {
    try {
        auto impl = std::make_unique<Impl>(options);
        std::lock_guard lk(impl->mu);
        status = impl->connect_locked();
        message = impl->last_error;
        if (status != Status::ok) {
            // Every way the daemon can fail to serve (absent, stopping, full,
            // rate-limited, over its shared memory budget, out of memory or
            // descriptors: system_error, a broken handshake or segment) is
            // covered by the local fallback; only a refusal for permission or
            // protocol version, or a bad option, is a configuration error
            // that is reported even with fallback.
            const bool configuration = status == Status::permission_denied ||
                                       status == Status::protocol_version || status == Status::invalid_argument;
            if (options.fallback != Fallback::local || configuration) return nullptr;
        }
        return std::unique_ptr<Client>(new Client(std::move(impl)));
    } catch (const std::exception& e) {
        status = Status::system_error;
        message = e.what();
        return nullptr;
    }
}

std::unique_ptr<Client> Client::connect(const ClientOptions& options) {
    Status st = Status::ok;
    std::string msg;
    auto c = connect(options, st, msg);
    if (!c) throw Error(st, msg.empty() ? std::string(shm::to_string(st)) : msg);
    return c;
}

Status Client::reserve(wire::RecordKind kind, std::size_t tail_size, std::size_t count, RowBatch& batch, bool wait) {
    if (tail_size > wire::kMaxTailSize || static_cast<std::uint8_t>(kind) > 1) return Status::invalid_argument;
    return session().reserve(kind, tail_size, count, batch, wait);
}

Status Client::reserve_columns(wire::RecordKind kind, std::size_t tail_size, std::size_t count, ColumnBatch& batch,
                               bool wait) {
    if (tail_size > wire::kMaxTailSize || static_cast<std::uint8_t>(kind) > 1) return Status::invalid_argument;
    return session().reserve_columns(kind, tail_size, count, batch, wait);
}

namespace {
bool bad_submit_enums(wire::Mode mode, wire::SigEncoding encoding) {
    return static_cast<std::uint8_t>(mode) > 1 || static_cast<std::uint8_t>(encoding) > 1;
}
}  // namespace

Status Client::submit(RowBatch& batch, wire::Mode mode, wire::SigEncoding encoding, std::uint8_t table) {
    if (bad_submit_enums(mode, encoding)) return Status::invalid_argument;
    return session().submit(detail::ref(batch), shm::Opcode::verify, mode, encoding, table, &batch.encoding);
}

Status Client::submit(ColumnBatch& batch, wire::Mode mode, wire::SigEncoding encoding, std::uint8_t table) {
    if (bad_submit_enums(mode, encoding)) return Status::invalid_argument;
    return session().submit(detail::ref(batch), shm::Opcode::verify, mode, encoding, table, &batch.encoding);
}

BatchResult Client::wait(RowBatch& batch) { return session().wait(detail::ref(batch), true); }
BatchResult Client::wait(ColumnBatch& batch) { return session().wait(detail::ref(batch), true); }

BatchResult Client::poll(RowBatch& batch) { return session().wait(detail::ref(batch), false); }
BatchResult Client::poll(ColumnBatch& batch) { return session().wait(detail::ref(batch), false); }

Status Client::cancel(RowBatch& batch) { return session().cancel(detail::ref(batch)); }
Status Client::cancel(ColumnBatch& batch) { return session().cancel(detail::ref(batch)); }

void Client::release(RowBatch& batch) {
    session().release(detail::ref(batch));
    batch.generation = 0;
}

void Client::release(ColumnBatch& batch) {
    session().release(detail::ref(batch));
    batch.generation = 0;
}

std::size_t Client::max_batch_rows(wire::RecordKind kind, std::size_t tail_size) const {
    std::lock_guard lk(session().mu);
    return session().live ? session().max_alloc_rows(kind, tail_size) : 0;
}

std::size_t Client::max_column_batch_rows(wire::RecordKind kind, std::size_t tail_size) const {
    std::lock_guard lk(session().mu);
    return session().live && session().conn.abi_minor >= shm::kAbiMinorColumns
               ? session().max_alloc_column_rows(kind, tail_size)
               : 0;
}

Status Client::ping(std::uint64_t* rtt_ns) {
    const auto t0 = Clock::now();
    RowBatch b;
    Status st = session().reserve(wire::RecordKind::ecdsa, 0, 0, b, true);
    if (st != Status::ok) return st;
    st = session().submit(detail::ref(b), shm::Opcode::nop, wire::Mode::results, wire::SigEncoding::opaque,
                       shm::kTableUnspecified, nullptr);
    const BatchResult r = session().wait_raw(detail::ref(b), true);
    session().release(detail::ref(b));
    if (st == Status::ok) st = r.status;
    if (rtt_ns != nullptr)
        *rtt_ns = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    return st;
}

bool Client::connected() const {
    std::lock_guard lk(session().mu);
    return session().live;
}

std::uint64_t Client::epoch() const {
    std::lock_guard lk(session().mu);
    return session().live ? session().conn.epoch : 0;
}

std::uint64_t Client::arena_size() const {
    std::lock_guard lk(session().mu);
    return session().live ? session().conn.arena_size : 0;
}

std::string Client::last_error() const {
    std::lock_guard lk(session().mu);
    return session().last_error;
}

}  // namespace sigverify
