// SPDX-License-Identifier: MIT
// libsigverify internals: Client::info, the daemon info request
// (shm_protocol/info_message.hpp) over the control socket.
#include <algorithm>

#include "client_impl.hpp"
#include "shm_protocol/info_message.hpp"

namespace sigverify {

namespace {

DaemonInfo from_reply(const shm::InfoReply& r) {
    DaemonInfo d;
    d.version = std::string(shm::read_text(r.version));
    d.protocol_version = r.protocol_version;
    d.abi_major = r.abi_major;
    d.abi_minor = r.abi_minor;
    d.epoch = r.epoch;
    d.backend = std::string(shm::read_text(r.backend));
    d.confirm_rule = r.confirm_rule == shm::kConfirmStrict ? "strict" : "groups";
    d.cpu_workers = r.cpu_workers;
    d.gpu_count = r.gpu_count;
    // A daemon lists at most kInfoMaxDevices; never trust its count for the array.
    d.gpus_enabled = std::min(r.gpus_enabled, r.gpu_count);
    const std::size_t listed = std::min<std::size_t>(r.gpu_count, shm::kInfoMaxDevices);
    for (std::size_t i = 0; i < listed; ++i) {
        const shm::InfoDevice& src = r.devices[i];
        GpuInfo g;
        g.index = src.index;
        g.name = std::string(shm::read_text(src.name));
        g.enabled = src.state == shm::kDeviceEnabled;
        g.self_test = std::string(shm::read_text(src.self_test));
        g.memory_bytes = src.memory_bytes;
        d.gpus.push_back(std::move(g));
    }
    d.max_arena_size = r.max_arena_size;
    d.max_registered_bytes = r.max_registered_bytes;
    d.max_registered_buffers = r.max_registered_buffers;
    d.max_ring_entries = r.max_ring_entries;
    d.max_clients = r.max_clients;
    return d;
}

}  // namespace

Status Client::info(DaemonInfo& out) {
    Client::Impl& s = session();
    std::unique_lock lk(s.mu);
    s.maybe_reconnect_locked(lk);
    if (!s.live) return Status::unreachable;
    if (!s.alive_locked()) return Status::disconnected;
    if (s.conn.abi_minor < shm::kAbiMinorInfo) return Status::bad_entry;
    const shm::InfoRequest req{shm::kInfoMagic, 0};
    shm::InfoReply reply{};
    const Status st = s.control_exchange_locked(&req, sizeof req, -1, shm::kInfoReplyMagic, &reply, sizeof reply,
                                               "an info request");
    if (st != Status::ok) return st;
    if (reply.status == static_cast<std::uint32_t>(Status::busy)) {
        s.last_error = "sigverifyd refused the info request: this session asked too often (rate limit); try again later";
        return Status::busy;
    }
    if (reply.status != static_cast<std::uint32_t>(Status::ok))
        return reply.status < shm::kStatusCount ? static_cast<Status>(reply.status) : Status::handshake;
    out = from_reply(reply);
    return Status::ok;
}

}  // namespace sigverify
