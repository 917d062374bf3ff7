// SPDX-License-Identifier: MIT
// One client session: the control socket, the client's shared segment, the
// reader that consumes its submission ring into Jobs of its JobQueue, and the
// completion ring it posts to when the scheduler reports a job finished
// (JobSink).
//
// Lifetime: a Session is owned by shared_ptrs held by its own thread, by the
// server's session list, and by the scheduler: the JobQueue handed to
// Scheduler::submit is a shared_ptr that shares ownership of the Session
// (aliasing constructor), held while the queue is runnable and by every
// worker running one of its chunks. So the mapping stays valid until the last
// chunk that writes into it has finished; the destructor unmaps it, then
// truncates the segment to zero bytes (unless the daemon is stopping), which
// frees its pages even if the client kept the descriptor or a mapping, and
// only then gives its bytes back to the shared memory budget
// (daemon/serve/segment_budget.hpp).
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "daemon/ops/config.hpp"
#include "daemon/serve/daemon_context.hpp"
#include "daemon/serve/info_rate.hpp"
#include "daemon/schedule/job.hpp"
#include "daemon/ops/metrics.hpp"
#include "daemon/memory/registered_buffers.hpp"
#include "reference/reference_verifier.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "shm_protocol/ring_steps.hpp"
#include "shm_protocol/segment_view.hpp"

namespace boost::interprocess {
class mapped_region;
}

namespace sigverify::daemon {

// SO_RCVTIMEO and SO_SNDTIMEO of a session socket (session_handshake.cpp):
// the handshake's deadline, then the reader's short poll of the socket.
void set_socket_timeouts(int fd, std::chrono::milliseconds t);

class JobQueue;

class Session final : public std::enable_shared_from_this<Session>, public JobSink {
public:
    Session(DaemonContext& ctx, int fd, const ucred& cred, std::uint64_t id);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Thread body: handshake, then the reader loop until the socket closes or
    // the daemon stops. Never throws.
    void run() noexcept;

    // Server side (any thread).
    void set_closing();           // shutdown began: answer new submissions with shutting_down
    void request_stop();          // end the session as soon as possible
    // The server saw the client hang up its control socket: end the session
    // now rather than at the reader's next socket check (frees the slot and,
    // once the last chunk is done, the segment).
    void peer_hung_up();
    bool hang_up_seen() const { return hung_up_.load(std::memory_order_relaxed); }
    // The client closed its control socket (or shut down its side).
    bool peer_gone() const;
    int control_fd() const { return fd_; }
    bool finished() const { return finished_.load(std::memory_order_acquire); }
    std::uint64_t id() const { return id_; }
    // For the stats socket (any thread): who this client is and what it did.
    ClientInfo info();
    bool established() const { return established_.load(std::memory_order_acquire); }

    // Drops this session's queued work (Scheduler::cancel); running chunks
    // finish and complete with `status`. No-op before the handshake is done.
    void cancel_jobs(shm::Status status);

    // Scheduler side (any thread): posts the completion of job `index` and frees it.
    void finish_job(std::uint32_t index, shm::Status status, const reference::Tally& tally) override;

private:
    // Test seam: tests/fuzz/session_driver.hpp runs this class's steps
    // (handshake, pump, socket_alive, end_session, leave) from its own thread,
    // without a session thread, so that each input costs no thread start-up
    // and no timed wait. Used by nothing else.
    friend class SessionDriver;

    bool handshake();
    // Its steps (session_handshake.cpp), each false once the session is
    // refused or the client has gone.
    bool read_hello(shm::HelloRequest& hello);
    bool size_segment(const shm::HelloRequest& hello, std::uint64_t& arena, std::uint32_t& ring);
    bool send_segment(std::uint64_t arena, std::uint32_t ring);
    bool await_mapping_ack();
    // False when it cannot; guard_full says the SIGBUS guard had no segment
    // slot (the session is refused as busy: the segment is never used).
    bool create_segment(std::uint64_t arena_size, std::uint32_t ring_entries, int& fd_out, bool& guard_full);
    bool map_new_segment(const shm::Layout& layout);  // its steps (session_segment.cpp)
    void write_header(const shm::Layout& layout);
    void reader_loop();
    // Consumes what it can from the submission ring; returns entries consumed,
    // or -1 on a protocol violation that ends the session.
    int pump();
    void accept_entry(const shm::SubmissionEntry& e);
    void post_completion(std::uint64_t tag, shm::Status status, std::uint64_t valid,
                         std::uint64_t invalid, std::uint32_t detail);
    bool socket_alive();
    // A control message after the handshake (register / unregister a buffer):
    // answered on the socket. False for anything else (a protocol error).
    bool control_message(const std::uint8_t* data, std::size_t size, int fd);
    void end_session();
    // The end of run(): EOF to the client, the slot and the server's wake-up.
    void leave() noexcept;
    void announce_closing();  // marks an established header closing and rings both bells
    void refuse(shm::Status status, const std::string& text);

    DaemonContext& ctx_;
    int fd_;
    ucred cred_;
    std::uint64_t id_;
    std::string name_;
    std::string peer_;   // "pid=.. uid=.. gid=.." for logs

    std::unique_ptr<boost::interprocess::mapped_region> region_;
    int guard_slot_ = -1;   // SIGBUS guard registration of the mapping
    // The segment is announced to the backend (Scheduler::map_client_memory)
    // until the destructor, when no chunk of it can be in flight.
    bool mapped_in_backend_ = false;
    // Stage this session's rows: the backend cannot read them in place, or
    // the client rewrote rows while they were verified (Job::stage_rows).
    std::atomic<bool> stage_rows_{false};
    int seg_fd_ = -1;       // the segment, kept to truncate it when the session is destroyed
    std::uint64_t budget_bytes_ = 0;  // counted in ctx_.segment_budget for cred_.uid
    // The mapping, once guarded: header, rings, arena (shm_protocol/segment_view.hpp).
    // seg_.header != nullptr: the segment was created and is served.
    shm::SegmentView seg_;
    std::unique_ptr<JobQueue> queue_;       // cq_entries job slots, created at handshake
    RegisteredBuffers registered_;          // buffers the client registered (ABI 1.4)

    // The daemon's ends of the rings (shm_protocol/ring_steps.hpp).
    shm::RingConsumer<shm::SubmissionEntry> sq_;  // reader thread only
    std::mutex cq_mutex_;                          // serializes completion producers
    shm::RingProducer<shm::CompletionEntry> cq_;  // guarded by cq_mutex_
    std::uint32_t in_flight_ = 0;           // consumed, completion not posted; cq_mutex_
    std::vector<std::uint32_t> free_jobs_;  // cq_mutex_

    std::atomic<bool> closing_{false};
    std::atomic<bool> stop_{false};
    std::atomic<bool> finished_{false};
    std::atomic<bool> violated_{false};
    std::atomic<bool> hung_up_{false};

    // Info requests (reader thread only): their rate limit, and until when
    // the socket's next control packets are left unread after a refusal.
    InfoRate info_rate_;
    std::chrono::steady_clock::time_point control_paused_until_{};

    std::atomic<bool> established_{false};  // handshake done: name_ and the segment are set
    std::atomic<std::uint64_t> batches_{0}, rows_{0};
};

}  // namespace sigverify::daemon
