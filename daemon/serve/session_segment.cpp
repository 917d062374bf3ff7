// SPDX-License-Identifier: MIT
// A session's shared segment: created under an unguessable name and unlinked
// at once, its pages reserved, mapped, registered with the SIGBUS guard before
// the daemon touches it, and its header written (the state word last, with
// release). The rest of the session is session.cpp.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <spdlog/spdlog.h>

#include "daemon/memory/mapping_guard.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "daemon/serve/session.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

namespace bip = boost::interprocess;

namespace sigverify::daemon {

// A new shared memory object of the layout's size, its pages reserved,
// mapped (region_) and its descriptor kept (seg_fd_); no name is left behind.
bool Session::map_new_segment(const shm::Layout& layout) {
    // Unguessable name, created exclusively (O_EXCL) with owner-only permissions
    // that do not depend on the umask; unlinked right after creation.
    std::uint8_t rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd)) return false;
    static const char* hex = "0123456789abcdef";
    std::string name = "/sigverifyd." + std::to_string(getpid()) + ".";
    for (std::uint8_t b : rnd) {
        name.push_back(hex[b >> 4]);
        name.push_back(hex[b & 15]);
    }
    try {
        bip::permissions perm;
        perm.set_permissions(0600);
        bip::shared_memory_object shm(bip::create_only, name.c_str(), bip::read_write, perm);
        // Unlink at once: the descriptor is all either side needs, and a crash
        // from here on cannot leave anything in /dev/shm.
        bip::shared_memory_object::remove(name.c_str());
        const int shm_fd = shm.get_mapping_handle().handle;
        fchmod(shm_fd, 0600);
        // Reserve the pages now (tmpfs): a later access can never SIGBUS for lack of space.
        if (int rc = posix_fallocate(shm_fd, 0, static_cast<off_t>(layout.segment_size)); rc != 0) {
            ctx_.log->warn("session {}: cannot reserve {} bytes of shared memory: {}", id_, layout.segment_size,
                           std::strerror(rc));
            return false;
        }
        shm.truncate(static_cast<bip::offset_t>(layout.segment_size));
        region_ = std::make_unique<bip::mapped_region>(shm, bip::read_write, 0, layout.segment_size);
        seg_fd_ = fcntl(shm_fd, F_DUPFD_CLOEXEC, 0);  // kept: truncated when the session is destroyed
        if (seg_fd_ < 0) return false;
    } catch (const std::exception& e) {
        ctx_.log->warn("session {}: cannot create shared segment: {}", id_, e.what());
        return false;
    }
    return true;
}

// The header of the new segment (zeros until here), the state word last.
void Session::write_header(const shm::Layout& layout) {
    shm::SegmentHeader& h = *seg_.header;
    h.magic = shm::kSegmentMagic;
    h.abi_major = shm::kAbiMajor;
    h.abi_minor = shm::kAbiMinor;
    h.header_size = static_cast<std::uint32_t>(shm::kHeaderSize);
    h.daemon_pid = static_cast<std::uint32_t>(getpid());
    h.segment_size = layout.segment_size;
    h.epoch = ctx_.epoch;
    h.session_id = id_;
    h.start_time_ns = ctx_.start_time_ns;
    h.sq_entries = layout.sq_entries;
    h.cq_entries = layout.cq_entries;
    h.sqe_size = sizeof(shm::SubmissionEntry);
    h.cqe_size = sizeof(shm::CompletionEntry);
    h.sq_entries_offset = layout.sq_entries_offset;
    h.cq_entries_offset = layout.cq_entries_offset;
    h.arena_offset = layout.arena_offset;
    h.arena_size = layout.arena_size;
    h.sq_mask = layout.sq_entries - 1;
    h.cq_mask = layout.cq_entries - 1;
    // The state word is published last, with release.
    shm::word(h.state).store(static_cast<std::uint32_t>(shm::SegmentState::ready), std::memory_order_release);
}

bool Session::create_segment(std::uint64_t arena_size, std::uint32_t ring_entries, int& fd_out, bool& guard_full) {
    shm::Layout layout;
    if (!shm::compute_layout(ring_entries, ring_entries, arena_size, layout)) return false;
    if (!map_new_segment(layout)) return false;
    // The one to pass, duplicated after the creating handle closed: at most
    // three descriptors per client (socket, kept, passed) at any time.
    fd_out = fcntl(seg_fd_, F_DUPFD_CLOEXEC, 0);
    if (fd_out < 0) return false;
    void* const base = region_->get_address();
    // Guarded before the daemon touches it, or not used at all: unguarded, a
    // client's ftruncate would kill the daemon at its next access.
    guard_slot_ = guard::register_segment(base, layout.segment_size);
    if (guard_slot_ < 0) {
        guard_full = true;  // counted by the guard (guard::usage().refusals, the stats' guard_refusals)
        if (ctx_.log_limit.allow(*ctx_.log, "refused: SIGBUS guard full"))
            ctx_.log->warn("refused client {} ({}): no free segment slot in the SIGBUS guard table", id_, peer_);
        return false;
    }
    seg_ = shm::view_segment(base, layout.segment_size, layout);  // header set: the segment is ours to serve
    // Both rings start empty at index 0 (the new segment is zeros); the
    // daemon never reads its own indices back from shared memory.
    sq_ = shm::submission_consumer(seg_, 0);
    cq_ = shm::completion_producer(seg_, 0);

    write_header(layout);

    queue_ = ctx_.scheduler->make_queue(*this, seg_.cq_entries, cred_.uid);
    free_jobs_.reserve(seg_.cq_entries);
    for (std::uint32_t i = seg_.cq_entries; i-- > 0;) free_jobs_.push_back(i);
    return true;
}

}  // namespace sigverify::daemon
