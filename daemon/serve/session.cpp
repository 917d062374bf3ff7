// SPDX-License-Identifier: MIT
// One client session: ring reader, control messages, completions. Its
// handshake is session_handshake.cpp, its shared segment session_segment.cpp; what a checked entry
// becomes is job_from_submission.hpp.
#include "daemon/serve/session.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <boost/interprocess/mapped_region.hpp>
#include <spdlog/spdlog.h>

#include "daemon/serve/info_reply.hpp"
#include "daemon/serve/job_from_submission.hpp"
#include "daemon/memory/mapping_guard.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "daemon/memory/submission_checks.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "shm_protocol/spin_wait.hpp"

namespace sigverify::daemon {
namespace {

constexpr auto kIdleWait = std::chrono::milliseconds(50);  // reader's longest sleep

}  // namespace

Session::Session(DaemonContext& ctx, int fd, const ucred& cred, std::uint64_t id)
    : ctx_(ctx),
      fd_(fd),
      cred_(cred),
      id_(id),
      registered_(ctx.config.max_registered_bytes, ctx.config.max_registered_buffers) {
    peer_ = "pid=" + std::to_string(cred.pid) + " uid=" + std::to_string(cred.uid) +
            " gid=" + std::to_string(cred.gid);
}

Session::~Session() {
    // Every job holds this session, so no chunk reads the segment any more.
    if (mapped_in_backend_) ctx_.scheduler->unmap_client_memory(seg_.base);
    if (guard_slot_ >= 0) guard::unregister_mapping(guard_slot_);
    region_.reset();  // munmap: nothing in the daemon touches the segment from here on
    if (seg_fd_ >= 0) {
        // tmpfs frees the pages now, whoever still holds the descriptor or a
        // mapping (a later access there gets SIGBUS). The client cannot stop
        // it: a POSIX shared memory file is created with F_SEAL_SEAL, so no
        // seal can be added to it. The server destroys a session once its
        // client hung up (an honest client unmaps before it closes its
        // control socket), or 2 s after the daemon ended a session whose
        // client stayed connected (a protocol violation: time to read the
        // closed state). On shutdown the clients are left their segments:
        // they notice the closing state and reconnect to the next daemon.
        if (!ctx_.stopping.load() && ftruncate(seg_fd_, 0) == 0)
            ctx_.metrics.segments_truncated.fetch_add(1, std::memory_order_relaxed);
        close(seg_fd_);
    }
    if (budget_bytes_ != 0) ctx_.segment_budget.release(cred_.uid, budget_bytes_);
    if (fd_ >= 0) close(fd_);
}

void Session::run() noexcept {
    try {
        const bool ok = handshake();
        if (ok) {
            reader_loop();
            end_session();
        }
    } catch (const std::exception& e) {
        ctx_.log->error("client {}: session error: {}", id_, e.what());
        if (seg_.header != nullptr) end_session();
    }
    leave();
}

void Session::leave() noexcept {
    // Write side only: the client sees EOF, and the server can still tell
    // when the client hangs up (peer_gone) before the segment is truncated.
    if (fd_ >= 0) {
        shutdown(fd_, SHUT_WR);
    }
    ctx_.active_sessions.fetch_sub(1);
    finished_.store(true, std::memory_order_release);
    if (ctx_.session_ended_fd >= 0) {
        const std::uint64_t one = 1;
        (void)!write(ctx_.session_ended_fd, &one, sizeof one);  // wake the server to reap this session
    }
}

void Session::set_closing() {
    closing_.store(true);  // seq_cst, paired with established_ (see handshake's end)
    // Before the handshake ends the session thread is still writing the
    // header with plain stores: the header is not ours to touch yet. The
    // session thread marks it closing itself once established.
    if (established_.load()) announce_closing();
}

void Session::announce_closing() {
    // A mapping the SIGBUS guard replaced is no longer the client's.
    if (guard::poisoned(guard_slot_)) return;
    shm::word(seg_.header->state).store(static_cast<std::uint32_t>(shm::SegmentState::closing),
                                    std::memory_order_release);
    shm::ring_force(seg_.header->client_bell);
    shm::ring_force(seg_.header->daemon_bell);
}

bool Session::peer_gone() const {
    pollfd p{fd_, POLLRDHUP, 0};
    return fd_ < 0 || (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0);
}

void Session::peer_hung_up() {
    hung_up_.store(true, std::memory_order_relaxed);
    // Before the handshake ends the session thread is in recv(), which the
    // hang-up already ends; seg_.header is only read once established.
    if (!established()) return;
    stop_.store(true);
    // A mapping the SIGBUS guard replaced is no longer the client's: the
    // reader sees stop_ at its next check anyway.
    if (!guard::poisoned(guard_slot_)) shm::ring_force(seg_.header->daemon_bell);
}

void Session::request_stop() {
    stop_.store(true);
    // Before the handshake ends the reader has not started; it checks stop_ first.
    if (established() && !guard::poisoned(guard_slot_)) shm::ring_force(seg_.header->daemon_bell);
}

bool Session::control_message(const std::uint8_t* data, std::size_t size, int fd) {
    shm::RegisterReply reply{};
    std::uint32_t magic = 0;
    if (size >= sizeof magic) std::memcpy(&magic, data, sizeof magic);
    if (size == sizeof(shm::RegisterRequest) && magic == shm::kRegisterMagic) {
        shm::RegisterRequest req;
        std::memcpy(&req, data, sizeof req);
        reply.magic = shm::kRegisterReplyMagic;
        RegisterOutcome out;
        if (req.flags != 0) {
            out.status = shm::Status::invalid_argument;
            out.error = "reserved flags set";
        } else {
            out = registered_.add(fd, req.offset, req.size);
        }
        reply.status = static_cast<std::uint32_t>(out.status);
        reply.buffer_id = out.id;
        reply.detail = out.detail;
        shm::copy_text(reply.error, out.error);
        if (out.file_system) ++ctx_.metrics.registrations_refused_file_system;
        if (out.status == shm::Status::ok)
            ctx_.log->debug("client {} '{}': registered buffer {} ({} bytes at offset {})", id_, name_, out.id,
                            req.size, req.offset);
        else if (ctx_.log_limit.allow(*ctx_.log, "buffer registration refused"))
            ctx_.log->info("client {} '{}' ({}): buffer registration refused: {}", id_, name_, peer_, out.error);
    } else if (size == sizeof(shm::UnregisterRequest) && magic == shm::kUnregisterMagic && fd < 0) {
        shm::UnregisterRequest req;
        std::memcpy(&req, data, sizeof req);
        reply.magic = shm::kUnregisterReplyMagic;
        reply.buffer_id = req.buffer_id;
        reply.status = static_cast<std::uint32_t>(req.flags != 0 ? shm::Status::invalid_argument
                                                                  : registered_.remove(req.buffer_id));
    } else if (size >= sizeof magic && magic == shm::kInfoMagic && fd < 0) {
        // Any size with the info magic gets an answer, a malformed one a
        // refusal (invalid_argument), one over the session's rate a refusal
        // (busy), so the client never waits for nothing.
        const auto now = std::chrono::steady_clock::now();
        if (!info_rate_.take(now)) {
            ++ctx_.metrics.info_refused;
            control_paused_until_ = info_rate_.next_token(now);
            if (ctx_.log_limit.allow(*ctx_.log, "info requests over the rate"))
                ctx_.log->info("client {} '{}' ({}): info requests faster than {}/s; refused (busy)", id_, name_,
                               peer_, InfoRate::kPerSecond);
            const shm::InfoReply busy = refused_info_reply(ctx_, shm::Status::busy);
            shm::send_packet(fd_, &busy, sizeof busy);
            return true;
        }
        const shm::InfoReply info = make_info_reply(ctx_, data, size);
        if (info.status != static_cast<std::uint32_t>(shm::Status::ok)) {
            ++ctx_.protocol_errors;
            if (ctx_.log_limit.allow(*ctx_.log, "malformed info request"))
                ctx_.log->warn("client {} '{}' ({}): malformed info request ({} bytes); refused", id_, name_, peer_,
                               size);
        }
        shm::send_packet(fd_, &info, sizeof info);
        return true;
    } else {
        return false;
    }
    shm::send_packet(fd_, &reply, sizeof reply);
    return true;
}

bool Session::socket_alive() {
    // After the handshake only the buffer registration and info messages are expected
    // (control_message). EOF ends the session; any other packet (of any size,
    // with or without descriptors) is a protocol error, drained and ignored;
    // passed descriptors are closed at once (a registered buffer's once it is
    // mapped). At most 16 packets per check, so a flooder cannot hold the
    // reader here; the rest wait in its socket buffer, which blocks it.
    for (int i = 0; i < 16; ++i) {
        if (std::chrono::steady_clock::now() < control_paused_until_) {
            // Over its info rate: the next packets wait in the socket until a
            // token is due; only a hang-up is looked for meanwhile.
            pollfd p{fd_, POLLRDHUP, 0};
            return poll(&p, 1, 0) <= 0 || (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) == 0;
        }
        pollfd p{fd_, POLLIN | POLLRDHUP, 0};
        const int r = poll(&p, 1, 0);
        if (r <= 0) return true;
        if ((p.revents & POLLIN) == 0) return (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) == 0;
        alignas(8) std::uint8_t buf[512];
        shm::ReceivedPacket got = shm::receive_packet(fd_, buf, sizeof buf, shm::KeepDescriptor::first);
        // recv reads 0 bytes both at the end of the stream and for an empty
        // packet; only the former comes with the peer's hang-up (POLLRDHUP,
        // set before the last packet is read). An empty packet is ignored.
        const bool hung_up = (p.revents & (POLLHUP | POLLRDHUP)) != 0;
        if (got.bytes == 0 && !got.truncated && got.fds_closed == 0 && got.fd < 0 && hung_up) return false;  // EOF
        if (got.bytes < 0)
            return got.error == EAGAIN || got.error == EWOULDBLOCK || got.error == EINTR;
        // A packet cut off at 512 bytes is still answered when it names the
        // info magic (a refusal: docs/protocol.md answers every size); no
        // other control message is that long, and one cut with descriptors
        // attached is never taken.
        const bool whole = !got.truncated || (got.fd < 0 && got.fds_closed == 0);
        const bool handled =
            whole && got.fds_closed == 0 && control_message(buf, static_cast<std::size_t>(got.bytes), got.fd);
        if (got.fd >= 0) {
            ::close(got.fd);
            ++got.fds_closed;
        }
        if (handled) continue;
        ++ctx_.protocol_errors;
        if (ctx_.log_limit.allow(*ctx_.log, "packet after the handshake"))
            ctx_.log->warn("client {} '{}' ({}): unexpected packet after the handshake ({} bytes{}{}); ignored", id_,
                           name_, peer_, got.bytes, got.truncated ? ", truncated to 512" : "",
                           got.fds_closed != 0 ? ", " + std::to_string(got.fds_closed) + " descriptor(s) closed"
                                               : std::string());
    }
    return true;
}

void Session::post_completion(std::uint64_t tag, shm::Status status, std::uint64_t valid,
                              std::uint64_t invalid, std::uint32_t detail) {
    // Caller holds cq_mutex_. Space is guaranteed: in_flight_ counted this entry.
    shm::CompletionEntry c{};
    c.user_tag = tag;
    c.valid = valid;
    c.invalid = invalid;
    c.epoch = ctx_.epoch;
    c.status = static_cast<std::uint32_t>(status);
    c.detail = detail;
    cq_.push(c);
    cq_.publish();
    --in_flight_;
}

void Session::finish_job(std::uint32_t index, shm::Status status, const reference::Tally& tally) {
    Job& j = queue_->job(index);
    if (j.registered.active()) {
        // A file no longer held a column under a chunk (it shrank, or could
        // not be read): that chunk published nothing, and the batch is no
        // verdict of the file's. Drop the registration.
        if (registered_.drop_lost(j.registered)) {
            status = shm::Status::buffer_lost;
            if (ctx_.log_limit.allow(*ctx_.log, "registered buffer lost"))
                ctx_.log->warn("client {} '{}' ({}): a registered buffer of batch {} became unreadable under "
                               "verification (it shrank, or could not be read); registration dropped",
                               id_, name_, peer_, j.user_tag);
        }
        j.registered.reset();  // may close its files (unregistered meanwhile)
    }
    if (j.rows_rewritten && !stage_rows_.exchange(true, std::memory_order_relaxed) &&
        ctx_.log_limit.allow(*ctx_.log, "rows rewritten"))
        ctx_.log->warn("client {} '{}' ({}) rewrote rows while they were verified; its batches are staged from now on",
                       id_, name_, peer_);
    ctx_.metrics.observe_batch(j.table, status == shm::Status::ok, tally.valid, tally.invalid,
                               std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now() - j.submitted)
                                                 .count()));
    {
        std::lock_guard lock(cq_mutex_);
        post_completion(j.user_tag, status, tally.valid, tally.invalid, 0);
        free_jobs_.push_back(index);
    }
    shm::ring(seg_.header->client_bell);
    shm::ring(seg_.header->daemon_bell);  // the reader may be waiting for a free job slot
}

void Session::accept_entry(const shm::SubmissionEntry& e) {
    // Caller reserved a completion slot (in_flight_ already counts this entry).
    shm::CheckedSubmission c;
    std::uint32_t detail = 0;  // which column a rejected verify_columns entry got wrong
    shm::Status st = shm::check_submission(e, seg_.arena_size, c, &detail);
    auto complete_now = [&](shm::Status s, std::uint32_t d = 0) {
        std::lock_guard lock(cq_mutex_);
        post_completion(e.user_tag, s, 0, 0, d);
    };
    if (st != shm::Status::ok) {
        ++ctx_.protocol_errors;
        shm::word(seg_.header->dropped).fetch_add(1, std::memory_order_relaxed);
        ctx_.log->debug("client {} '{}': rejected submission tag {} (opcode {}): {} (detail {})", id_, name_,
                        e.user_tag, e.opcode, shm::to_string(st), detail);
        complete_now(st, detail);
        return;
    }
    if (closing_.load() || ctx_.stopping.load()) {
        complete_now(shm::Status::shutting_down);
        return;
    }
    if (c.opcode == shm::Opcode::cancel) {
        // Only this session's own batches: the tag is looked up in its queue.
        const std::size_t n = ctx_.scheduler->cancel_job(*queue_, c.cancel_tag);
        ctx_.log->debug("client {} '{}': cancel of tag {}: {} batch(es) cancelled", id_, name_, c.cancel_tag, n);
        complete_now(n != 0 ? shm::Status::ok : shm::Status::not_found);
        return;
    }
    RegisteredColumnSource registered;
    if (c.opcode == shm::Opcode::verify_registered_columns ||
        c.opcode == shm::Opcode::verify_registered_column_set) {
        shm::Status bst;
        if (c.opcode == shm::Opcode::verify_registered_column_set) {
            // Copied out once: the client may rewrite its arena from now on.
            shm::RegisteredColumnSet set;
            std::memcpy(&set, seg_.arena + c.column_set_offset, sizeof set);
            bst = registered_.columns_for_set(c, set, registered, &detail);
        } else {
            bst = registered_.columns_for(c, registered, &detail);
        }
        if (bst != shm::Status::ok) {
            ++ctx_.protocol_errors;
            shm::word(seg_.header->dropped).fetch_add(1, std::memory_order_relaxed);
            ctx_.log->debug("client {} '{}': rejected registered batch tag {} (buffer {}): {} (detail {})", id_,
                            name_, e.user_tag, c.buffer_id, shm::to_string(bst), detail);
            complete_now(bst, detail);
            return;
        }
    }
    if (c.opcode == shm::Opcode::nop || c.row_count == 0) {
        complete_now(shm::Status::ok);
        return;
    }
    std::uint32_t index;
    {
        std::lock_guard lock(cq_mutex_);
        index = free_jobs_.back();  // non-empty: jobs == cq_entries >= in_flight_
        free_jobs_.pop_back();
    }
    Job& j = queue_->job(index);
    j.user_tag = e.user_tag;
    fill_job(j, c, SubmissionMemory{seg_.arena, registered.active()}, ctx_.config.confirm);
    j.registered = std::move(registered);  // held until the job finishes: no unregister closes a file under a chunk
    j.stage_rows = stage_rows_.load(std::memory_order_relaxed);
    if (j.results != nullptr) std::memset(j.results, 0, c.row_count);  // fail closed
    ++batches_;
    rows_ += c.row_count;
    j.submitted = std::chrono::steady_clock::now();
    ctx_.metrics.bytes[table_index(c.table)].fetch_add(c.rows_bytes, std::memory_order_relaxed);
    // Shares ownership of this session: the mapping outlives every chunk.
    ctx_.scheduler->submit(std::shared_ptr<JobQueue>(shared_from_this(), queue_.get()), index);
}

int Session::pump() {
    if (guard::poisoned(guard_slot_)) return -1;
    std::uint32_t pending = 0, tail = 0;
    if (!sq_.available(pending, &tail)) {
        if (ctx_.log_limit.allow(*ctx_.log, "ring index out of bounds"))
            ctx_.log->warn(
                "client {} '{}': submission ring tail {} is out of bounds (head {}, {} entries); ending session", id_,
                name_, tail, sq_.head(), sq_.size());
        ++ctx_.protocol_errors;
        return -1;
    }
    int consumed = 0;
    for (; pending > 0; --pending) {
        {
            std::lock_guard lock(cq_mutex_);
            std::uint32_t used = 0, cq_head = 0;
            if (!cq_.used(used, &cq_head)) {
                if (ctx_.log_limit.allow(*ctx_.log, "ring index out of bounds"))
                    ctx_.log->warn("client {} '{}': completion ring head {} is out of bounds (tail {}); ending session",
                                   id_, name_, cq_head, cq_.tail());
                ++ctx_.protocol_errors;
                return -1;
            }
            if (used + in_flight_ >= cq_.size()) break;  // back-pressure: wait for the client to reap
            ++in_flight_;
        }
        const shm::SubmissionEntry e = sq_.pop();  // a copy: validated after, the client may rewrite the slot
        sq_.release();
        accept_entry(e);
        ++consumed;
    }
    if (consumed > 0) shm::ring(seg_.header->client_bell);  // completions and/or free sq slots
    return consumed;
}

void Session::reader_loop() {
    set_socket_timeouts(fd_, std::chrono::milliseconds(100));
    auto last_socket_check = std::chrono::steady_clock::now();
    auto bell_seq = [&] {
        return std::atomic_ref<std::uint32_t>(seg_.header->daemon_bell.seq).load(std::memory_order_seq_cst);
    };
    std::uint32_t socket_checked_seq = bell_seq();
    while (!stop_.load(std::memory_order_relaxed)) {
        // Any event after this load (new submission, reaped completion, finished
        // job, stop request) bumps seq, so the FUTEX_WAIT below cannot miss it.
        const std::uint32_t seq = bell_seq();
        const int n = pump();
        if (n < 0) {
            violated_.store(true);
            return;
        }
        if (n > 0) continue;
        // Nothing to do: spin briefly, then sleep on the doorbell.
        // (A futex wakeup costs ~100 us on a loaded VM; a short busy-poll
        // catches the next submission of a client that is already active.)
        const bool changed = shm::spin_before_sleep([&] { return bell_seq() != seq; });
        // The socket is checked every 20 ms, and at once when the bell rang
        // since the last check with nothing in the ring: a client rings it
        // after sending a control message (a buffer registration) and waits
        // for the answer.
        const auto now = std::chrono::steady_clock::now();
        const std::uint32_t seq_now = bell_seq();
        if (now - last_socket_check >= std::chrono::milliseconds(20) || seq_now != socket_checked_seq) {
            last_socket_check = now;
            socket_checked_seq = seq_now;
            if (!socket_alive()) return;
        }
        if (changed) continue;
        shm::begin_wait(seg_.header->daemon_bell);
        if (!stop_.load(std::memory_order_relaxed)) shm::wait(seg_.header->daemon_bell, seq, kIdleWait);
        shm::end_wait(seg_.header->daemon_bell);
    }
}

void Session::end_session() {
    // Drop queued work; chunks already running finish into the still-mapped
    // segment (workers hold references) and their completions are discarded
    // with the segment.
    cancel_jobs(shm::Status::cancelled);
    // Unmapped now, or by the last running chunk of each (its Job holds it).
    registered_.clear();
    if (seg_.header != nullptr && !guard::poisoned(guard_slot_)) {
        shm::word(seg_.header->state).store(static_cast<std::uint32_t>(shm::SegmentState::closed),
                                        std::memory_order_release);
        shm::ring_force(seg_.header->client_bell);
    }
    if (violated_.load() && ctx_.log_limit.allow(*ctx_.log, "protocol violation"))
        ctx_.log->warn("client {} '{}' ({}) disconnected for a protocol violation", id_, name_, peer_);
    if (ctx_.log->should_log(spdlog::level::info) && ctx_.log_limit.allow(*ctx_.log, "session ended"))
        ctx_.log->info("client {} '{}' ({}) session ended: {} batches, {} rows", id_, name_, peer_, batches_.load(),
                       rows_.load());
}

void Session::cancel_jobs(shm::Status status) {
    // established_ (release) is stored after queue_ was created.
    if (!established() || queue_ == nullptr) return;
    ctx_.scheduler->cancel(*queue_, status);
}

ClientInfo Session::info() {
    ClientInfo i;
    i.id = id_;
    i.pid = cred_.pid;
    i.uid = cred_.uid;
    i.gid = cred_.gid;
    if (!established()) return i;  // name and sizes are written by the handshake
    i.name = name_;
    i.batches = batches_.load(std::memory_order_relaxed);
    i.rows = rows_.load(std::memory_order_relaxed);
    i.ring_entries = seg_.cq_entries;
    i.arena_size = seg_.arena_size;
    std::lock_guard lock(cq_mutex_);
    i.in_flight = in_flight_;
    return i;
}

}  // namespace sigverify::daemon
