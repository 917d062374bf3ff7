// SPDX-License-Identifier: MIT
#include "daemon/serve/admission.hpp"

#include <grp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "sigverify/shm_protocol/segment_access.hpp"

namespace sigverify::daemon {

std::uint64_t largest_segment_bytes(const Config& cfg) {
    shm::Layout layout;
    return shm::compute_layout(cfg.ring_entries, cfg.ring_entries, std::max(cfg.arena_size, shm::kMinArenaSize),
                               layout)
               ? layout.segment_size
               : cfg.arena_size;
}

bool Admission::resolve_group() {
    const Config& cfg = ctx_.config;
    if (cfg.group.empty()) return true;
    group g{};
    group* result = nullptr;
    std::vector<char> buf(1 << 16);
    if (getgrnam_r(cfg.group.c_str(), &g, buf.data(), buf.size(), &result) != 0 || result == nullptr) {
        ctx_.log->critical("--group {}: no such group", cfg.group);
        return false;
    }
    have_group_ = true;
    group_gid_ = g.gr_gid;
    return true;
}

// The shared memory budget: two segments of the largest size a client can
// get per --max-clients slot: one of the session in the slot, one of a
// session that ended there and whose segment is not released yet (a client
// that hung up frees its slot at once; its segment is truncated once its last
// running chunk finished, normally within milliseconds). One uid may hold
// --max-segments-per-uid segments of that size (default 1.5 per slot, three
// quarters of the total: enough for a node using every slot while some of its
// ended sessions' segments are being released, and about a quarter is always
// left to other uids).
void Admission::set_segment_budget() {
    const Config& cfg = ctx_.config;
    const std::uint64_t segment = largest_segment_bytes(cfg);
    const std::uint64_t slots = std::max(1u, unsigned(cfg.max_clients));
    const std::uint64_t total = 2 * segment * slots;
    const std::uint64_t per_uid_segments =
        cfg.max_segments_per_uid != 0 ? cfg.max_segments_per_uid : slots + (slots + 1) / 2;
    ctx_.segment_budget.set_limits(total, std::min(total, per_uid_segments * segment));
    shm::Layout layout;
    smallest_segment_ = shm::compute_layout(shm::kMinRingEntries, shm::kMinRingEntries, shm::kMinArenaSize, layout)
                            ? layout.segment_size
                            : shm::kMinArenaSize;
}

bool Admission::peer_allowed(int fd, const ucred& cred, char* why, std::size_t size) const {
    if (cred.uid == 0 || cred.uid == geteuid()) return true;
    if (have_group_) {
        if (cred.gid == group_gid_) return true;
        gid_t groups[1024];
        socklen_t len = sizeof groups;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
            for (socklen_t i = 0; i < len / sizeof(gid_t); ++i)
                if (groups[i] == group_gid_) return true;
        }
        std::snprintf(why, size,
                      "uid %u gid %u is not root, not the daemon's uid %u and not a member of group '%s'",
                      unsigned(cred.uid), unsigned(cred.gid), unsigned(geteuid()), ctx_.config.group.c_str());
    } else {
        std::snprintf(why, size, "uid %u is not root and not the daemon's uid %u (no --group configured)",
                      unsigned(cred.uid), unsigned(geteuid()));
    }
    return false;
}

constexpr std::size_t kText = sizeof(Admission::Refusal::reason);

bool Admission::permitted(const Peer& p, char* reason, char* detail) {
    if (peer_allowed(p.fd, p.cred, reason, kText)) return true;
    std::snprintf(detail, kText, "%s", reason);
    return false;
}

bool Admission::slot_free(const Peer& p, char* reason, char* detail) {
    if (p.occupied_slots < ctx_.config.max_clients) return true;
    std::snprintf(reason, kText, "%u clients", ctx_.config.max_clients);
    std::snprintf(detail, kText, "--max-clients %u reached", ctx_.config.max_clients);
    return false;
}

// Not even the smallest segment would fit: refused here, not after a
// session thread read its hello (the exact check is there).
bool Admission::budget_left(const Peer& p, char* reason, char* detail) {
    if (ctx_.segment_budget.would_fit(p.cred.uid, smallest_segment_)) return true;
    std::snprintf(reason, kText, "uid %u or the daemon is at its shared memory budget", unsigned(p.cred.uid));
    std::snprintf(detail, kText, "shared memory budget (uid or total) reached");
    return false;
}

bool Admission::rate_allows(const Peer& p, char* reason, char* detail) {
    if (connection_rate_.admit(p.cred.uid, p.cred.pid, std::chrono::steady_clock::now(), reason, kText)) return true;
    std::snprintf(detail, kText, "%s", reason);
    return false;
}

bool Admission::admit(int fd, const ucred& cred, unsigned occupied_slots, Refusal& out) {
    // In the order they run (see the header). Each refusal also counts in
    // connections_refused; `counter` is the check's own count, if it has one.
    struct Check {
        bool (Admission::*passes)(const Peer&, char*, char*);
        const char* log_key;  // LogLimit key of its log line
        bool log_uid;         // the log line names the uid (the access check's detail does already)
        shm::Status status;
        const char* prefix;
        Metrics::Counter Metrics::*counter;
    };
    static constexpr Check kChecks[] = {
        {&Admission::permitted, "refused: permission denied", false, shm::Status::permission_denied,
         "permission denied: ", nullptr},
        {&Admission::slot_free, "refused: busy", true, shm::Status::busy, "sigverifyd is serving its maximum of ",
         nullptr},
        {&Admission::budget_left, "refused: shared memory budget", true, shm::Status::busy, "sigverifyd is busy: ",
         &Metrics::refused_shm_budget},
        {&Admission::rate_allows, "refused: rate limit", true, shm::Status::busy, "sigverifyd is busy: ",
         &Metrics::refused_rate_limited},
    };
    const Peer peer{fd, cred, occupied_slots};
    char detail[kText];
    for (const Check& check : kChecks) {
        if ((this->*check.passes)(peer, out.reason, detail)) continue;
        ++ctx_.refused;
        if (check.counter != nullptr) (ctx_.metrics.*check.counter).fetch_add(1, std::memory_order_relaxed);
        if (ctx_.log_limit.allow(*ctx_.log, check.log_key)) {
            if (check.log_uid)
                ctx_.log->warn("refused connection from pid {} uid {}: {}", cred.pid, cred.uid, detail);
            else
                ctx_.log->warn("refused connection from pid {}: {}", cred.pid, detail);
        }
        out.status = check.status;
        out.prefix = check.prefix;
        return false;
    }
    return true;
}

}  // namespace sigverify::daemon
