// SPDX-License-Identifier: MIT
// A session's handshake: the client's hello read under a deadline, checked,
// answered with the shared segment's descriptor (or a refusal that says why),
// and the client's acknowledgement.
#include "daemon/serve/session.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/interprocess/mapped_region.hpp>
#include <spdlog/spdlog.h>

#include "daemon/memory/mapping_guard.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "shm_protocol/fd_passing.hpp"

namespace sigverify::daemon {

void set_socket_timeouts(int fd, std::chrono::milliseconds t) {
    timeval tv;
    tv.tv_sec = static_cast<time_t>(t.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

namespace {

constexpr auto kHandshakeTimeout = std::chrono::seconds(2);

bool send_reply(int fd, const shm::HelloReply& reply, int pass_fd) {
    return shm::send_packet(fd, &reply, sizeof reply, pass_fd);
}

// Receives exactly one packet of `size` bytes; any ancillary data (a hostile
// peer passing descriptors) is closed and rejected: -2, like a truncated packet.
ssize_t recv_packet(int fd, void* buf, std::size_t size) {
    const shm::ReceivedPacket r = shm::receive_packet(fd, buf, size, shm::KeepDescriptor::none);
    if (r.bytes < 0) {
        errno = r.error;
        return -1;
    }
    if (r.fds_closed != 0 || r.truncated) return -2;
    return r.bytes;
}

std::string sanitize_name(std::string_view raw) {
    std::string out;
    for (char ch : raw) out.push_back(ch >= 0x20 && ch < 0x7f ? ch : '?');
    if (out.empty()) out = "unnamed";
    return out;
}

}  // namespace

void Session::refuse(shm::Status status, const std::string& text) {
    shm::HelloReply reply{};
    reply.magic = shm::kReplyMagic;
    reply.protocol_version = shm::kProtocolVersion;
    reply.status = static_cast<std::uint32_t>(status);
    reply.epoch = ctx_.epoch;
    shm::copy_text(reply.error, text);
    send_reply(fd_, reply, -1);
}

// The client's hello, read and checked (size, magic, flags, protocol version),
// or false once the client has been refused (or has gone).
bool Session::read_hello(shm::HelloRequest& hello) {
    alignas(8) std::uint8_t buf[512];
    const ssize_t n = recv_packet(fd_, buf, sizeof buf);
    if (n == 0) {
        if (ctx_.log_limit.allow(*ctx_.log, "closed before the handshake"))
            ctx_.log->info("client {} ({}) closed before the handshake", id_, peer_);
        return false;
    }
    if (n != static_cast<ssize_t>(sizeof hello)) {
        ++ctx_.protocol_errors;
        if (ctx_.log_limit.allow(*ctx_.log, "malformed handshake"))
            ctx_.log->warn("client {} ({}): malformed handshake ({} bytes)", id_, peer_, n);
        refuse(shm::Status::handshake, "malformed handshake message");
        return false;
    }
    std::memcpy(&hello, buf, sizeof hello);
    if (hello.magic != shm::kHelloMagic || hello.flags != 0) {
        ++ctx_.protocol_errors;
        if (ctx_.log_limit.allow(*ctx_.log, "malformed handshake"))
            ctx_.log->warn("client {} ({}): malformed handshake (bad magic or flags)", id_, peer_);
        refuse(shm::Status::handshake, "malformed handshake message (bad magic or flags)");
        return false;
    }
    name_ = sanitize_name(shm::read_text(hello.client_name));
    if (hello.protocol_version != shm::kProtocolVersion) {
        ++ctx_.protocol_errors;
        const std::string text = "protocol version mismatch: client speaks " +
                                 std::to_string(hello.protocol_version) + ", sigverifyd speaks " +
                                 std::to_string(shm::kProtocolVersion);
        if (ctx_.log_limit.allow(*ctx_.log, "protocol version mismatch"))
            ctx_.log->warn("client {} '{}' ({}): {}", id_, name_, peer_, text);
        refuse(shm::Status::protocol_version, text);
        return false;
    }
    return true;
}

// The segment's sizes from the hello's requests, bounded by the daemon's
// configuration, and the uid's shared-memory budget reserved for it; false
// once the client has been refused.
bool Session::size_segment(const shm::HelloRequest& hello, std::uint64_t& arena, std::uint32_t& ring) {
    arena = hello.requested_arena_size == 0 ? ctx_.config.arena_size
                                            : std::min(hello.requested_arena_size, ctx_.config.arena_size);
    arena = std::max(arena, shm::kMinArenaSize);
    ring = ctx_.config.ring_entries;
    if (hello.requested_ring_entries != 0) {
        if (!shm::is_pow2(hello.requested_ring_entries)) {
            ++ctx_.protocol_errors;
            if (ctx_.log_limit.allow(*ctx_.log, "malformed handshake"))
                ctx_.log->warn("client {} '{}' ({}): malformed handshake (ring entries {} not a power of two)", id_,
                               name_, peer_, hello.requested_ring_entries);
            refuse(shm::Status::handshake, "requested ring entries must be a power of two");
            return false;
        }
        ring = std::clamp(hello.requested_ring_entries, shm::kMinRingEntries, ctx_.config.ring_entries);
    }
    // The budget is checked before anything is created.
    if (shm::Layout layout; shm::compute_layout(ring, ring, arena, layout)) {
        std::string why;
        if (!ctx_.segment_budget.try_reserve(cred_.uid, layout.segment_size, why)) {
            ++ctx_.refused;
            ctx_.metrics.refused_shm_budget.fetch_add(1, std::memory_order_relaxed);
            if (ctx_.log_limit.allow(*ctx_.log, "refused: shared memory budget"))
                ctx_.log->warn("refused client {} '{}' ({}): {}", id_, name_, peer_, why);
            refuse(shm::Status::busy, "sigverifyd is busy: " + why);
            return false;
        }
        budget_bytes_ = layout.segment_size;
    }
    return true;
}

// Creates the segment and sends it (its descriptor over SCM_RIGHTS with the
// reply); false once the client has been refused or the send failed.
bool Session::send_segment(std::uint64_t arena, std::uint32_t ring) {
    int seg_fd = -1;
    bool guard_full = false;
    if (!create_segment(arena, ring, seg_fd, guard_full)) {
        if (seg_fd >= 0) close(seg_fd);
        if (guard_full) {
            ++ctx_.refused;
            refuse(shm::Status::busy, "sigverifyd is busy: no free slot in its SIGBUS guard for another segment");
        } else {
            refuse(shm::Status::system_error, "sigverifyd could not create the shared segment");
        }
        return false;
    }
    shm::HelloReply reply{};
    reply.magic = shm::kReplyMagic;
    reply.protocol_version = shm::kProtocolVersion;
    reply.status = static_cast<std::uint32_t>(shm::Status::ok);
    reply.segment_size = seg_.header->segment_size;
    reply.epoch = ctx_.epoch;
    reply.session_id = id_;
    const bool sent = send_reply(fd_, reply, seg_fd);
    close(seg_fd);
    if (!sent && ctx_.log_limit.allow(*ctx_.log, "handshake aborted"))
        ctx_.log->warn("client {} '{}' ({}): could not send the segment", id_, name_, peer_);
    return sent;
}

// The client's confirmation that it mapped the segment.
bool Session::await_mapping_ack() {
    alignas(8) std::uint8_t buf[512];
    shm::MappedAck ack{};
    const ssize_t an = recv_packet(fd_, buf, sizeof buf);
    if (an != static_cast<ssize_t>(sizeof ack)) {
        if (ctx_.log_limit.allow(*ctx_.log, "handshake aborted"))
            ctx_.log->warn("client {} '{}' ({}): no mapping confirmation", id_, name_, peer_);
        return false;
    }
    std::memcpy(&ack, buf, sizeof ack);
    if (ack.magic != shm::kAckMagic || ack.status != static_cast<std::uint32_t>(shm::Status::ok)) {
        ++ctx_.protocol_errors;
        if (ctx_.log_limit.allow(*ctx_.log, "handshake aborted"))
            ctx_.log->warn("client {} '{}' ({}): client rejected the segment (status {})", id_, name_, peer_,
                           ack.status);
        return false;
    }
    return true;
}

bool Session::handshake() {
    set_socket_timeouts(fd_, std::chrono::duration_cast<std::chrono::milliseconds>(kHandshakeTimeout));
    shm::HelloRequest hello{};
    if (!read_hello(hello)) return false;
    if (ctx_.stopping.load()) {
        refuse(shm::Status::shutting_down, "sigverifyd is shutting down");
        return false;
    }
    std::uint64_t arena = 0;
    std::uint32_t ring = 0;
    if (!size_segment(hello, arena, ring) || !send_segment(arena, ring) || !await_mapping_ack()) return false;
    mapped_in_backend_ = true;
    stage_rows_.store(!ctx_.scheduler->map_client_memory(seg_.base, region_->get_size()), std::memory_order_relaxed);
    // Rate-limited like every line a client can repeat (a connect loop): the
    // connections_accepted counter keeps the exact number.
    if (ctx_.log->should_log(spdlog::level::info) && ctx_.log_limit.allow(*ctx_.log, "client connected"))
        ctx_.log->info("client {} '{}' connected ({}), arena {} bytes, {} ring entries", id_, name_, peer_,
                       seg_.arena_size, seg_.sq_entries);
    // seq_cst with set_closing's closing_ store: of a shutdown that begins
    // now, at least one side sees the other's flag and marks the header.
    established_.store(true);
    if (closing_.load()) announce_closing();
    return true;
}

}  // namespace sigverify::daemon
