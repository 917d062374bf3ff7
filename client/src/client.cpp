// libsigverify: client side of the sigverifyd ring protocol.
#include "sigverify/client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "reference/columns.hpp"
#include "reference/reference_verifier.hpp"
#include "shm_protocol/doorbell.hpp"

namespace sigverify {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kAlign = shm::kArenaAlign;
constexpr std::size_t kMaxChunkRows = 32768;   // copy API: rows per submission at most
constexpr std::size_t kPipelineDepth = 4;      // copy API: submissions in flight per call
constexpr auto kSpinTime = std::chrono::microseconds(200);  // busy-poll before a futex sleep
constexpr auto kReconnectInterval = std::chrono::milliseconds(500);

std::string default_runtime_dir() {
    if (const char* env = std::getenv("SIGVERIFY_RUNTIME_DIR"); env != nullptr && *env != '\0') return env;
    return "/run/sigverifyd";
}

std::uint64_t align_up(std::uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

bool is_daemon_failure(Status s) {
    return s == Status::disconnected || s == Status::shutting_down || s == Status::cancelled ||
           s == Status::backend_error || s == Status::stale_epoch || s == Status::unreachable ||
           s == Status::timeout;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// One connection: socket + mapped segment.
struct Conn {
    int fd = -1;
    void* map = nullptr;
    std::size_t map_size = 0;
    shm::SegmentHeader* h = nullptr;
    shm::SubmissionEntry* sqes = nullptr;
    shm::CompletionEntry* cqes = nullptr;
    std::uint8_t* arena = nullptr;
    std::uint64_t arena_size = 0;
    std::uint32_t sq_entries = 0, cq_entries = 0;
    std::uint64_t epoch = 0;
    std::uint16_t abi_minor = 0;  // the daemon's; >= kAbiMinorColumns: it accepts verify_columns
    std::uint32_t sq_tail = 0;  // private copies of the indices this side owns
    std::uint32_t cq_head = 0;

    void close_all() {
        if (map != nullptr) munmap(map, map_size);
        if (fd >= 0) ::close(fd);
        *this = Conn{};
    }
};

Status open_conn(const ClientOptions& opt, Conn& out, std::string& err) {
    const std::string dir = opt.runtime_dir.empty() ? default_runtime_dir() : opt.runtime_dir;
    const std::string path = dir + "/sigverifyd.sock";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        err = "socket path too long: " + path;
        return Status::invalid_argument;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        err = std::string("socket: ") + std::strerror(errno);
        return Status::system_error;
    }
    Conn c;
    c.fd = fd;
    auto fail = [&](Status s, std::string text) {
        err = std::move(text);
        c.close_all();
        return s;
    };
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int e = errno;
        if (e == EACCES || e == EPERM)
            return fail(Status::permission_denied, "cannot connect to " + path + ": " + std::strerror(e));
        return fail(Status::unreachable, "no sigverifyd at " + path + ": " + std::strerror(e));
    }
    timeval tv;
    tv.tv_sec = static_cast<time_t>(opt.connect_timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((opt.connect_timeout.count() % 1000) * 1000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

    shm::HelloRequest hello{};
    hello.magic = shm::kHelloMagic;
    hello.protocol_version = opt.protocol_version;
    hello.requested_arena_size = opt.arena_size;
    hello.requested_ring_entries = opt.ring_entries;
    shm::copy_text(hello.client_name, opt.name.empty() ? "pid-" + std::to_string(getpid()) : opt.name);
    // A refusing daemon may already have answered and closed: ignore send
    // errors and read the reply that is queued for us.
    (void)send(fd, &hello, sizeof hello, MSG_NOSIGNAL);

    shm::HelloReply reply{};
    iovec iov{&reply, sizeof reply};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do {
        n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    int seg_fd = -1;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            const std::size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < count; ++i) {
                int passed;
                std::memcpy(&passed, CMSG_DATA(cm) + i * sizeof(int), sizeof passed);
                if (seg_fd < 0) seg_fd = passed;
                else ::close(passed);
            }
        }
    }
    struct FdCloser {
        int& f;
        ~FdCloser() {
            if (f >= 0) ::close(f);
        }
    } seg_closer{seg_fd};
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return fail(Status::timeout, "sigverifyd at " + path + " did not answer the handshake in time");
        return fail(Status::unreachable, "handshake with sigverifyd at " + path + " failed: " + std::strerror(errno));
    }
    if (n == 0) return fail(Status::handshake, "sigverifyd at " + path + " closed the connection during the handshake");
    if (n != static_cast<ssize_t>(sizeof reply) || reply.magic != shm::kReplyMagic)
        return fail(Status::handshake, "malformed handshake reply from " + path);
    if (reply.status != 0) {
        const Status st = reply.status < shm::kStatusCount ? static_cast<Status>(reply.status) : Status::handshake;
        return fail(st, "sigverifyd refused the connection: " + std::string(shm::read_text(reply.error)));
    }
    if (seg_fd < 0) return fail(Status::handshake, "sigverifyd did not pass the shared segment");
    struct stat st;
    if (fstat(seg_fd, &st) != 0) return fail(Status::system_error, std::string("fstat: ") + std::strerror(errno));
    if (reply.segment_size < shm::kHeaderSize || static_cast<std::uint64_t>(st.st_size) < reply.segment_size ||
        reply.segment_size > shm::kMaxArenaSize + (std::uint64_t(1) << 24))
        return fail(Status::bad_segment, "shared segment has the wrong size");
    void* map = mmap(nullptr, reply.segment_size, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
    if (map == MAP_FAILED) return fail(Status::system_error, std::string("mmap: ") + std::strerror(errno));
    c.map = map;
    c.map_size = reply.segment_size;
    auto* h = static_cast<shm::SegmentHeader*>(map);
    auto nack = [&](const char* why) {
        shm::MappedAck ack{shm::kAckMagic, static_cast<std::uint32_t>(Status::bad_segment)};
        (void)send(fd, &ack, sizeof ack, MSG_NOSIGNAL);
        return fail(Status::bad_segment, std::string("invalid shared segment: ") + why);
    };
    if (shm::word(h->state).load(std::memory_order_acquire) != static_cast<std::uint32_t>(shm::SegmentState::ready))
        return nack("not ready");
    shm::SegmentHeader copy;
    std::memcpy(&copy, h, sizeof copy);
    if (const char* why = shm::check_header(copy, c.map_size)) return nack(why);
    if (copy.epoch != reply.epoch) return nack("epoch differs from the handshake");
    c.h = h;
    c.sqes = reinterpret_cast<shm::SubmissionEntry*>(static_cast<std::uint8_t*>(map) + copy.sq_entries_offset);
    c.cqes = reinterpret_cast<shm::CompletionEntry*>(static_cast<std::uint8_t*>(map) + copy.cq_entries_offset);
    c.arena = static_cast<std::uint8_t*>(map) + copy.arena_offset;
    c.arena_size = copy.arena_size;
    c.sq_entries = copy.sq_entries;
    c.cq_entries = copy.cq_entries;
    c.epoch = copy.epoch;
    c.abi_minor = copy.abi_minor;
    c.sq_tail = shm::word(h->sq_tail).load(std::memory_order_acquire);
    c.cq_head = shm::word(h->cq_head).load(std::memory_order_acquire);
    shm::MappedAck ack{shm::kAckMagic, 0};
    if (send(fd, &ack, sizeof ack, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof ack))
        return fail(Status::disconnected, "sigverifyd closed the connection after the handshake");
    out = c;
    return Status::ok;
}

}  // namespace

struct Client::Impl {
    enum class SlotState : std::uint8_t { free, reserved, submitted, done, released };
    struct Slot {
        SlotState state = SlotState::free;
        bool abandoned = false;
        std::uint32_t generation = 0;
        std::uint64_t begin = 0, end = 0;  // virtual arena positions (end-begin includes padding)
        std::uint64_t rows_offset = 0, results_offset = 0;
        // Column batches: rows_offset is the message column.
        bool columns = false;
        std::uint64_t key_offset = 0, signature_offset = 0, correlate_offset = 0;
        std::size_t count = 0;
        wire::RecordKind kind = wire::RecordKind::ecdsa;
        std::size_t key_size = 0;
        wire::SigEncoding encoding = wire::SigEncoding::opaque;
        wire::Mode mode = wire::Mode::results;
        BatchResult result;
    };

    ClientOptions opt;
    mutable std::mutex mu;
    Conn conn;
    bool live = false;          // conn usable (daemon alive as far as we know)
    std::string last_error;
    std::unique_ptr<reference::Verifier> local;
    // The local fallback for column batches, created on first use (its own
    // thread pool; most clients never need it).
    std::once_flag local_columns_once;
    std::unique_ptr<reference::ColumnVerifier> local_columns;

    std::vector<Slot> slots;
    std::vector<std::uint32_t> free_slots;
    std::vector<std::uint32_t> order;  // allocation order (ring of slots.size())
    std::size_t order_head = 0, order_count = 0;
    std::uint64_t arena_head = 0, arena_tail = 0;  // virtual positions
    std::uint32_t in_use = 0;
    std::uint32_t sleepers = 0;        // threads sleeping on the mapping without the lock
    std::uint32_t next_generation = 1;
    Clock::time_point last_reconnect{};

    ~Impl() { conn.close_all(); }

    // ---------------------------------------------------------------------
    void setup_slots() {
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

    Status connect_locked() {
        Conn c;
        std::string err;
        const Status st = open_conn(opt, c, err);
        last_reconnect = Clock::now();
        if (st != Status::ok) {
            last_error = err;
            return st;
        }
        conn.close_all();
        conn = c;
        live = true;
        setup_slots();
        return Status::ok;
    }

    void maybe_reconnect_locked() {
        if (live || !opt.reconnect) return;
        if (in_use != 0 || sleepers != 0) return;
        if (Clock::now() - last_reconnect < kReconnectInterval) return;
        connect_locked();
    }

    void mark_dead_locked(const std::string& why) {
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

    bool alive_locked() {
        if (!live) return false;
        const auto state = shm::word(conn.h->state).load(std::memory_order_acquire);
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

    void reap_locked() {
        if (!live) return;
        const std::uint32_t tail = shm::word(conn.h->cq_tail).load(std::memory_order_acquire);
        if (!shm::ring_count_ok(conn.cq_head, tail, conn.cq_entries)) {
            mark_dead_locked("sigverifyd published an out-of-range completion index");
            return;
        }
        if (tail == conn.cq_head) return;
        while (conn.cq_head != tail) {
            shm::CompletionEntry c;
            std::memcpy(&c, &conn.cqes[conn.cq_head & (conn.cq_entries - 1)], sizeof c);
            ++conn.cq_head;
            const std::uint32_t index = static_cast<std::uint32_t>(c.user_tag & 0xffffffffu);
            const std::uint32_t gen = static_cast<std::uint32_t>(c.user_tag >> 32);
            if (index >= slots.size()) continue;
            Slot& s = slots[index];
            if (s.generation != gen || s.state != SlotState::submitted) continue;
            s.state = SlotState::done;
            s.result = BatchResult{};
            if (c.epoch != conn.epoch) {
                s.result.status = Status::stale_epoch;  // never apply a verdict of another epoch
            } else {
                s.result.status = c.status < shm::kStatusCount ? static_cast<Status>(c.status) : Status::backend_error;
                if (s.result.status == Status::ok) {
                    s.result.valid = c.valid;
                    s.result.invalid = c.invalid;
                }
            }
            if (s.abandoned) free_slot_locked(index);
        }
        shm::word(conn.h->cq_head).store(conn.cq_head, std::memory_order_release);
        shm::ring(conn.h->daemon_bell);  // completion ring space freed
    }

    std::uint32_t bell_seq() const {
        return std::atomic_ref<std::uint32_t>(conn.h->client_bell.seq).load(std::memory_order_seq_cst);
    }

    // Sleeps (lock released) until the client bell moves past seq, at most
    // until the deadline and at most liveness_interval.
    void sleep_locked(std::unique_lock<std::mutex>& lk, std::uint32_t seq, Clock::time_point deadline) {
        shm::SegmentHeader* h = conn.h;
        ++sleepers;
        lk.unlock();
        auto& bell = h->client_bell;
        bool moved = false;
        const auto spin_until = std::min(deadline, Clock::now() + kSpinTime);
        for (unsigned i = 1; !moved; ++i) {
            cpu_relax();
            moved = std::atomic_ref<std::uint32_t>(bell.seq).load(std::memory_order_acquire) != seq;
            if (i % 64 == 0) {
                if (Clock::now() >= spin_until) break;
                sched_yield();  // never keep the daemon's thread off this CPU
            }
        }
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

    void free_slot_locked(std::uint32_t index) {
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
    bool try_alloc_locked(std::uint64_t bytes, std::uint32_t& index) {
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
        s.columns = false;
        s.key_offset = s.signature_offset = s.correlate_offset = 0;
        arena_tail = s.end;
        order[(order_head + order_count) % order.size()] = index;
        ++order_count;
        ++in_use;
        return true;
    }

    std::uint64_t max_alloc_rows(wire::RecordKind kind, std::size_t key_size) const {
        const std::uint64_t per_row = wire::stride(kind, key_size) + 1;
        if (conn.arena_size <= 2 * kAlign) return 0;
        return (conn.arena_size - 2 * kAlign) / per_row;
    }

    // A slot and `bytes` of arena for a new batch: reaps completions and, with
    // `wait`, sleeps on the bell until space frees up, the daemon dies or
    // batch_timeout passes.
    Status alloc_waiting_locked(std::unique_lock<std::mutex>& lk, std::uint64_t bytes, bool wait,
                                std::uint32_t& index) {
        const Clock::time_point deadline =
            opt.batch_timeout.count() > 0 ? Clock::now() + opt.batch_timeout : Clock::time_point::max();
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

    Status reserve(wire::RecordKind kind, std::size_t key_size, std::size_t count, Batch& b, bool wait) {
        std::unique_lock lk(mu);
        maybe_reconnect_locked();
        if (!live) return conn.h == nullptr && slots.empty() ? Status::unreachable : Status::disconnected;
        if (count > max_alloc_rows(kind, key_size)) return Status::too_large;
        const std::uint64_t rows_bytes = std::uint64_t(count) * wire::stride(kind, key_size);
        std::uint32_t index = 0;
        if (const Status st = alloc_waiting_locked(lk, align_up(rows_bytes) + align_up(count), wait, index);
            st != Status::ok)
            return st;
        Slot& s = slots[index];
        s.results_offset = s.rows_offset + align_up(rows_bytes);
        s.count = count;
        s.kind = kind;
        s.key_size = key_size;
        b = Batch{};
        b.rows = conn.arena + s.rows_offset;
        b.results = conn.arena + s.results_offset;
        b.count = count;
        b.kind = kind;
        b.key_size = key_size;
        b.slot = index;
        b.generation = s.generation;
        return Status::ok;
    }

    // Where the parts of a column batch go, relative to its start: message,
    // key, signature, correlate (when tail_size > 0) and results, each
    // kAlign-aligned. Overflow-free for count <= max_alloc_column_rows().
    struct ColumnPlacement {
        std::uint64_t key = 0, signature = 0, correlate = 0, results = 0, total = 0;
    };
    static ColumnPlacement place_columns(wire::RecordKind kind, std::size_t tail_size, std::uint64_t count) {
        ColumnPlacement p;
        p.key = align_up(count * wire::kColumnMessageWidth);
        p.signature = p.key + align_up(count * wire::column_key_width(kind));
        p.correlate = p.signature + align_up(count * wire::kColumnSignatureWidth);
        p.results = p.correlate + align_up(count * tail_size);
        p.total = p.results + align_up(count);
        return p;
    }

    std::uint64_t max_alloc_column_rows(wire::RecordKind kind, std::size_t tail_size) const {
        // Five parts, each padded by less than kAlign.
        const std::uint64_t per_row = wire::stride(kind, tail_size) + 1;
        if (conn.arena_size <= 5 * kAlign) return 0;
        return (conn.arena_size - 5 * kAlign) / per_row;
    }

    Status reserve_columns(wire::RecordKind kind, std::size_t tail_size, std::size_t count, Batch& b, bool wait) {
        std::unique_lock lk(mu);
        maybe_reconnect_locked();
        if (!live) return conn.h == nullptr && slots.empty() ? Status::unreachable : Status::disconnected;
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
        s.columns = true;
        s.key_offset = base + p.key;
        s.signature_offset = base + p.signature;
        s.correlate_offset = tail_size != 0 ? base + p.correlate : 0;
        s.results_offset = base + p.results;
        s.count = count;
        s.kind = kind;
        s.key_size = tail_size;
        b = Batch{};
        b.columns = true;
        b.rows = conn.arena + base;
        b.key = conn.arena + s.key_offset;
        b.signature = conn.arena + s.signature_offset;
        b.correlate = tail_size != 0 ? conn.arena + s.correlate_offset : nullptr;
        b.results = conn.arena + s.results_offset;
        b.count = count;
        b.kind = kind;
        b.key_size = tail_size;
        b.slot = index;
        b.generation = s.generation;
        return Status::ok;
    }

    Slot* slot_of(const Batch& b) {
        if (b.generation == 0 || b.slot >= slots.size()) return nullptr;
        Slot& s = slots[b.slot];
        if (s.generation != b.generation || s.state == SlotState::free || s.state == SlotState::released)
            return nullptr;
        return &s;
    }

    Status submit(Batch& b, shm::Opcode opcode, wire::Mode mode, wire::SigEncoding enc, std::uint8_t table) {
        std::unique_lock lk(mu);
        Slot* s = slot_of(b);
        if (s == nullptr || s->state != SlotState::reserved) return Status::invalid_argument;
        if (b.kind == wire::RecordKind::schnorr) enc = wire::SigEncoding::opaque;
        s->mode = mode;
        s->encoding = enc;
        b.encoding = enc;
        auto fail_slot = [&](Status st) {
            s->state = SlotState::done;
            s->result = BatchResult{};
            s->result.status = st;
            return st;
        };
        if (!live) return fail_slot(Status::disconnected);
        if (shm::word(conn.h->state).load(std::memory_order_acquire) !=
            static_cast<std::uint32_t>(shm::SegmentState::ready))
            return fail_slot(Status::shutting_down);
        // Slots never exceed the ring size, so the ring has room unless the
        // daemon lags in consuming; wait for it (bounded by liveness checks).
        for (;;) {
            const std::uint32_t seq = bell_seq();
            const std::uint32_t head = shm::word(conn.h->sq_head).load(std::memory_order_acquire);
            if (!shm::ring_count_ok(head, conn.sq_tail, conn.sq_entries)) {
                mark_dead_locked("sigverifyd published an out-of-range submission index");
                return fail_slot(Status::disconnected);
            }
            if (conn.sq_tail - head < conn.sq_entries) break;
            if (!alive_locked()) return fail_slot(Status::disconnected);
            sleep_locked(lk, seq, Clock::time_point::max());
            s = &slots[b.slot];
        }
        shm::SubmissionEntry e{};
        e.user_tag = (std::uint64_t(s->generation) << 32) | b.slot;
        if (opcode == shm::Opcode::verify && s->columns) opcode = shm::Opcode::verify_columns;
        e.opcode = static_cast<std::uint8_t>(opcode);
        if (opcode == shm::Opcode::verify_columns)
            shm::set_column_offsets(e, shm::ColumnOffsets{s->key_offset, s->signature_offset, s->correlate_offset});
        if (opcode == shm::Opcode::verify || opcode == shm::Opcode::verify_columns) {
            e.rows_offset = s->rows_offset;
            e.results_offset = mode == wire::Mode::results ? s->results_offset : 0;
            e.row_count = s->count;
            e.record_kind = static_cast<std::uint8_t>(s->kind);
            e.key_size = static_cast<std::uint8_t>(s->key_size);
            e.encoding = static_cast<std::uint8_t>(enc);
            e.mode = static_cast<std::uint8_t>(mode);
            e.table = table;
        } else {
            e.table = shm::kTableUnspecified;
        }
        std::memcpy(&conn.sqes[conn.sq_tail & (conn.sq_entries - 1)], &e, sizeof e);
        ++conn.sq_tail;
        shm::word(conn.h->sq_tail).store(conn.sq_tail, std::memory_order_release);
        shm::ring(conn.h->daemon_bell);
        s->state = SlotState::submitted;
        return Status::ok;
    }

    // Waits for a submitted batch; no fallback here.
    BatchResult wait_raw(Batch& b, bool block) {
        std::unique_lock lk(mu);
        if (slot_of(b) == nullptr) return BatchResult{Status::invalid_argument, 0, 0, 0};
        const Clock::time_point deadline =
            opt.batch_timeout.count() > 0 ? Clock::now() + opt.batch_timeout : Clock::time_point::max();
        for (;;) {
            Slot& s = slots[b.slot];
            if (s.state == SlotState::done) return s.result;
            if (s.state != SlotState::submitted) return BatchResult{Status::invalid_argument, 0, 0, 0};
            const std::uint32_t seq = live ? bell_seq() : 0;
            reap_locked();
            if (s.state == SlotState::done) return s.result;
            if (!alive_locked()) continue;  // marks the slot done (disconnected)
            if (!block) return BatchResult{Status::pending, 0, 0, 0};
            if (Clock::now() >= deadline) return BatchResult{Status::timeout, 0, 0, 0};
            sleep_locked(lk, seq, deadline);
        }
    }

    BatchResult local_run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results) {
        BatchResult r;
        if (!local) {
            r.status = Status::unreachable;
            return r;
        }
        const reference::Tally t = local->run(rows, mode, results);
        r.valid = t.valid;
        r.invalid = t.invalid;
        r.local_rows = rows.count;
        return r;
    }

    reference::ColumnVerifier* local_column_verifier() {
        if (opt.fallback != Fallback::local) return nullptr;
        try {
            std::call_once(local_columns_once, [&] {
                local_columns = std::make_unique<reference::ColumnVerifier>(opt.local_threads);
            });
        } catch (...) {
            return nullptr;  // the next call tries again
        }
        return local_columns.get();
    }

    BatchResult local_run_columns(const reference::ColumnBatch& columns, wire::Mode mode, std::uint8_t* results) {
        BatchResult r;
        reference::ColumnVerifier* v = local_column_verifier();
        if (v == nullptr) {
            r.status = Status::unreachable;
            return r;
        }
        try {
            const reference::Tally t = v->run(columns, mode, results);
            r.valid = t.valid;
            r.invalid = t.invalid;
            r.local_rows = columns.count;
        } catch (const std::exception&) {
            r.status = Status::invalid_argument;  // columns the caller's checks should have refused
        }
        return r;
    }

    BatchResult wait(Batch& b, bool block) {
        BatchResult r = wait_raw(b, block);
        if (r.ok() || !is_daemon_failure(r.status) || opt.fallback != Fallback::local) return r;
        if (r.status == Status::timeout) return r;  // still in flight: the daemon may write
        // The batch is not in flight any more and its arena space is ours
        // until release(): verify it in place.
        Slot* s;
        wire::RowSpan span;
        reference::ColumnBatch columns;
        bool is_columns;
        std::uint8_t* results;
        wire::Mode mode;
        {
            std::lock_guard lk(mu);
            s = slot_of(b);
            if (s == nullptr) return BatchResult{Status::invalid_argument, 0, 0, 0};
            span = wire::RowSpan{s->kind, s->key_size, s->encoding, b.rows, s->count};
            is_columns = s->columns;
            columns.kind = s->kind;
            columns.encoding = s->encoding;
            columns.count = s->count;
            columns.tail_size = s->key_size;
            columns.message = b.rows;
            columns.key = b.key;
            columns.signature = b.signature;
            columns.correlate = b.correlate;
            results = b.results;
            mode = s->mode;
        }
        BatchResult lr = is_columns
                             ? local_run_columns(columns, mode, mode == wire::Mode::results ? results : nullptr)
                             : local_run(span, mode, mode == wire::Mode::results ? results : nullptr);
        std::lock_guard lk(mu);
        if ((s = slot_of(b)) != nullptr) s->result = lr;
        return lr;
    }

    void release(Batch& b) {
        std::lock_guard lk(mu);
        Slot* s = slot_of(b);
        if (s != nullptr) {
            if (s->state == SlotState::submitted) s->abandoned = true;
            else free_slot_locked(b.slot);
        }
        b.generation = 0;
    }

    // Copy API over the zero-copy path, pipelined.
    BatchResult run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, std::uint8_t table) {
        BatchResult total;
        if (!rows.valid() || (mode == wire::Mode::results && results == nullptr && rows.count != 0) ||
            (rows.kind == wire::RecordKind::ecdsa && rows.encoding != wire::SigEncoding::opaque &&
             rows.encoding != wire::SigEncoding::compact)) {
            total.status = Status::invalid_argument;
            return total;
        }
        if (mode == wire::Mode::results && rows.count != 0) std::memset(results, 0, rows.count);  // fail closed
        if (rows.count == 0) return total;
        const std::size_t stride = rows.row_stride();
        std::size_t chunk;
        {
            std::lock_guard lk(mu);
            maybe_reconnect_locked();
            const std::uint64_t arena_quarter_rows =
                live ? (conn.arena_size / 4 > 2 * kAlign ? (conn.arena_size / 4 - 2 * kAlign) / (stride + 1) : 0) : 0;
            chunk = std::max<std::uint64_t>(1, std::min<std::uint64_t>(arena_quarter_rows, kMaxChunkRows));
            if (live && chunk > max_alloc_rows(rows.kind, rows.key_size)) chunk = max_alloc_rows(rows.kind, rows.key_size);
        }
        auto sub_span = [&](std::size_t begin, std::size_t count) {
            return wire::RowSpan{rows.kind, rows.key_size, rows.encoding, rows.row(begin), count};
        };
        return pipeline(
            rows.count, chunk, mode, rows.encoding, table,
            [&](std::size_t begin, std::size_t count, Batch& b, bool wait) {
                const Status st = reserve(rows.kind, rows.key_size, count, b, wait);
                if (st == Status::ok) std::memcpy(b.rows, rows.row(begin), count * stride);
                return st;
            },
            [&](std::size_t begin, std::size_t count, const Batch& b) {
                if (mode == wire::Mode::results)
                    std::memcpy(results + begin, b.results, count);
                else
                    std::memcpy(rows.row(begin), b.rows, count * stride);
            },
            // Verifier::run indexes results from row 0 of the sub-span.
            [&](std::size_t begin, std::size_t count) {
                return local_run(sub_span(begin, count), mode, mode == wire::Mode::results ? results + begin : nullptr);
            },
            [&](Status st) { return is_daemon_failure(st) || st == Status::too_large; });
    }

    // Column copy API over the zero-copy column path, pipelined like run().
    // Results mode sends no correlate (the daemon never reads it there).
    BatchResult run_columns(const Columns& cols, wire::Mode mode, std::uint8_t* results, std::uint8_t table) {
        BatchResult total;
        const std::size_t n = cols.count;
        const std::size_t tail = mode == wire::Mode::collect ? cols.tail_size : 0;
        const bool bad_enums = static_cast<std::uint8_t>(cols.kind) > 1 || static_cast<std::uint8_t>(mode) > 1 ||
                               (cols.kind == wire::RecordKind::ecdsa && cols.encoding != wire::SigEncoding::opaque &&
                                cols.encoding != wire::SigEncoding::compact);
        const bool missing = n != 0 && (cols.message == nullptr || cols.key == nullptr || cols.signature == nullptr ||
                                        (mode == wire::Mode::results && results == nullptr) ||
                                        (tail != 0 && cols.correlate == nullptr));
        if (bad_enums || missing || cols.tail_size > wire::kMaxKeySize ||
            n > std::numeric_limits<std::size_t>::max() / (wire::stride(cols.kind, cols.tail_size) + 1)) {
            total.status = Status::invalid_argument;
            return total;
        }
        if (mode == wire::Mode::results && n != 0) std::memset(results, 0, n);  // fail closed
        if (n == 0) return total;
        const wire::SigEncoding enc =
            cols.kind == wire::RecordKind::schnorr ? wire::SigEncoding::opaque : cols.encoding;
        const std::size_t key_width = wire::column_key_width(cols.kind);
        std::size_t chunk;
        {
            std::lock_guard lk(mu);
            maybe_reconnect_locked();
            const std::uint64_t per_row = wire::stride(cols.kind, tail) + 1;
            const std::uint64_t arena_quarter_rows =
                live ? (conn.arena_size / 4 > 5 * kAlign ? (conn.arena_size / 4 - 5 * kAlign) / per_row : 0) : 0;
            chunk = std::max<std::uint64_t>(1, std::min<std::uint64_t>(arena_quarter_rows, kMaxChunkRows));
            if (live && chunk > max_alloc_column_rows(cols.kind, tail))
                chunk = max_alloc_column_rows(cols.kind, tail);
        }
        // Rows [begin, begin + count) of the caller's columns.
        auto sub_batch = [&](std::size_t begin, std::size_t count) {
            reference::ColumnBatch c;
            c.kind = cols.kind;
            c.encoding = enc;
            c.count = count;
            c.tail_size = tail;
            c.message = cols.message + begin * wire::kColumnMessageWidth;
            c.key = cols.key + begin * key_width;
            c.signature = cols.signature + begin * wire::kColumnSignatureWidth;
            c.correlate = tail != 0 ? cols.correlate + begin * tail : nullptr;
            return c;
        };
        return pipeline(
            n, chunk, mode, enc, table,
            [&](std::size_t begin, std::size_t count, Batch& b, bool wait) {
                const Status st = reserve_columns(cols.kind, tail, count, b, wait);
                if (st != Status::ok) return st;
                std::memcpy(b.rows, cols.message + begin * wire::kColumnMessageWidth, count * wire::kColumnMessageWidth);
                std::memcpy(b.key, cols.key + begin * key_width, count * key_width);
                std::memcpy(b.signature, cols.signature + begin * wire::kColumnSignatureWidth,
                            count * wire::kColumnSignatureWidth);
                if (tail != 0) std::memcpy(b.correlate, cols.correlate + begin * tail, count * tail);
                return st;
            },
            [&](std::size_t begin, std::size_t count, const Batch& b) {
                if (mode == wire::Mode::results)
                    std::memcpy(results + begin, b.results, count);
                else if (tail != 0)
                    std::memcpy(cols.correlate + begin * tail, b.correlate, count * tail);
            },
            // ColumnVerifier indexes results from row 0 of the sub-batch.
            [&](std::size_t begin, std::size_t count) {
                return local_run_columns(sub_batch(begin, count), mode,
                                         mode == wire::Mode::results ? results + begin : nullptr);
            },
            // An old daemon (bad_entry) is covered by the fallback as an absent one is.
            [&](Status st) { return is_daemon_failure(st) || st == Status::too_large || st == Status::bad_entry; });
    }

    // The pipeline of both copy APIs: pieces of at most `chunk` of the n rows,
    // up to kPipelineDepth in flight. fill(begin, count, batch, wait) reserves a
    // piece and copies the caller's input into it (reserve's status);
    // copy_back(begin, count, batch) copies a verified piece's output to the
    // caller; local(begin, count) verifies rows here, used with
    // fallback=local when the daemon fails a piece or `falls_back`(reserve's
    // status) says so. The caller has zeroed its results (fail closed).
    template <class Fill, class CopyBack, class Local, class FallsBack>
    BatchResult pipeline(std::size_t n, std::size_t chunk, wire::Mode mode, wire::SigEncoding enc, std::uint8_t table,
                         Fill&& fill, CopyBack&& copy_back, Local&& local, FallsBack&& falls_back) {
        struct InFlight {
            Batch batch;
            std::size_t begin = 0, count = 0;
        };
        InFlight q[kPipelineDepth];
        std::size_t qh = 0, qn = 0, next = 0;
        Status fail = Status::ok;
        BatchResult total;
        auto run_locally = [&](std::size_t begin, std::size_t count) {
            const BatchResult lr = local(begin, count);
            if (lr.status != Status::ok && fail == Status::ok) fail = lr.status;
            total.valid += lr.valid;
            total.invalid += lr.invalid;
            total.local_rows += lr.local_rows;
        };
        auto finish_front = [&] {
            InFlight& f = q[qh];
            const BatchResult r = wait_raw(f.batch, true);
            if (r.ok()) {
                copy_back(f.begin, f.count, f.batch);
                total.valid += r.valid;
                total.invalid += r.invalid;
            } else if (r.status == Status::timeout) {
                if (fail == Status::ok) fail = r.status;
            } else if (opt.fallback == Fallback::local && is_daemon_failure(r.status)) {
                run_locally(f.begin, f.count);
            } else if (fail == Status::ok) {
                fail = r.status;
            }
            release(f.batch);
            qh = (qh + 1) % kPipelineDepth;
            --qn;
        };
        while ((next < n && fail == Status::ok) || qn > 0) {
            if (next < n && qn < kPipelineDepth && fail == Status::ok) {
                const std::size_t count = std::min(chunk, n - next);
                InFlight& f = q[(qh + qn) % kPipelineDepth];
                const Status st = fill(next, count, f.batch, qn == 0);
                if (st == Status::ok) {
                    f.begin = next;
                    f.count = count;
                    submit(f.batch, shm::Opcode::verify, mode, enc, table);
                    // A failed submit marked the slot done with its status: wait_raw() sees it.
                    ++qn;
                    next += count;
                    continue;
                }
                if (st != Status::ring_full) {
                    if (opt.fallback == Fallback::local && falls_back(st)) {
                        run_locally(next, n - next);
                    } else if (fail == Status::ok) {
                        fail = st;
                    }
                    next = n;
                    continue;
                }
            }
            if (qn > 0) finish_front();
        }
        if (fail != Status::ok) total.status = fail;
        return total;
    }
};

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------
Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

std::unique_ptr<Client> Client::connect(const ClientOptions& options, Status& status, std::string& message) noexcept {
    try {
        auto impl = std::make_unique<Impl>();
        impl->opt = options;
        if (impl->opt.liveness_interval.count() <= 0) impl->opt.liveness_interval = std::chrono::milliseconds(20);
        if (options.fallback == Fallback::local)
            impl->local = std::make_unique<reference::Verifier>(options.local_threads);
        std::lock_guard lk(impl->mu);
        status = impl->connect_locked();
        message = impl->last_error;
        if (status != Status::ok) {
            // An absent, stopping or full daemon is covered by the local
            // fallback; a refusal for permission or protocol version is a
            // configuration error and is reported.
            const bool absent = status == Status::unreachable || status == Status::timeout ||
                                status == Status::disconnected || status == Status::shutting_down ||
                                status == Status::busy;
            if (options.fallback != Fallback::local || !absent) return nullptr;
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

BatchResult Client::run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, std::uint8_t table) {
    return impl_->run(rows, mode, results, table);
}

BatchResult Client::verify_ecdsa(const std::uint8_t* rows, std::size_t n, std::size_t key_size,
                                 std::uint8_t* results, wire::SigEncoding encoding) {
    return run(wire::RowSpan{wire::RecordKind::ecdsa, key_size, encoding, const_cast<std::uint8_t*>(rows), n},
               wire::Mode::results, results);
}

BatchResult Client::verify_schnorr(const std::uint8_t* rows, std::size_t n, std::size_t key_size,
                                   std::uint8_t* results) {
    return run(wire::RowSpan{wire::RecordKind::schnorr, key_size, wire::SigEncoding::opaque,
                             const_cast<std::uint8_t*>(rows), n},
               wire::Mode::results, results);
}

namespace {
template <class Row>
wire::RowSpan table_span(std::span<Row> rows, wire::Table table, wire::SigEncoding enc) {
    using Bare = std::remove_const_t<Row>;
    return wire::RowSpan{wire::record_kind(table), wire::canonical_key_size(table), enc,
                         reinterpret_cast<std::uint8_t*>(const_cast<Bare*>(rows.data())), rows.size()};
}
}  // namespace

BatchResult Client::verify_ecdsa(std::span<const wire::EcdsaRow> rows, std::span<std::uint8_t> results,
                                 wire::SigEncoding encoding) {
    if (results.size() < rows.size()) return BatchResult{Status::invalid_argument, 0, 0, 0};
    return run(table_span(rows, wire::Table::ecdsa, encoding), wire::Mode::results, results.data(),
               static_cast<std::uint8_t>(wire::Table::ecdsa));
}

BatchResult Client::verify_multisig(std::span<const wire::MultisigRow> rows, std::span<std::uint8_t> results,
                                    wire::SigEncoding encoding) {
    if (results.size() < rows.size()) return BatchResult{Status::invalid_argument, 0, 0, 0};
    return run(table_span(rows, wire::Table::multisig, encoding), wire::Mode::results, results.data(),
               static_cast<std::uint8_t>(wire::Table::multisig));
}

BatchResult Client::verify_schnorr(std::span<const wire::SchnorrRow> rows, std::span<std::uint8_t> results) {
    if (results.size() < rows.size()) return BatchResult{Status::invalid_argument, 0, 0, 0};
    return run(table_span(rows, wire::Table::schnorr, wire::SigEncoding::opaque), wire::Mode::results,
               results.data(), static_cast<std::uint8_t>(wire::Table::schnorr));
}

BatchResult Client::verify_threshold(std::span<const wire::ThresholdRow> rows, std::span<std::uint8_t> results) {
    if (results.size() < rows.size()) return BatchResult{Status::invalid_argument, 0, 0, 0};
    return run(table_span(rows, wire::Table::threshold, wire::SigEncoding::opaque), wire::Mode::results,
               results.data(), static_cast<std::uint8_t>(wire::Table::threshold));
}

BatchResult Client::collect_ecdsa(std::uint8_t* rows, std::size_t n, std::size_t key_size,
                                  wire::SigEncoding encoding) {
    return run(wire::RowSpan{wire::RecordKind::ecdsa, key_size, encoding, rows, n}, wire::Mode::collect, nullptr);
}

BatchResult Client::collect_schnorr(std::uint8_t* rows, std::size_t n, std::size_t key_size) {
    return run(wire::RowSpan{wire::RecordKind::schnorr, key_size, wire::SigEncoding::opaque, rows, n},
               wire::Mode::collect, nullptr);
}

BatchResult Client::collect_ecdsa(std::span<wire::EcdsaRow> rows, wire::SigEncoding encoding) {
    return run(table_span(rows, wire::Table::ecdsa, encoding), wire::Mode::collect, nullptr,
               static_cast<std::uint8_t>(wire::Table::ecdsa));
}

BatchResult Client::collect_multisig(std::span<wire::MultisigRow> rows, wire::SigEncoding encoding) {
    return run(table_span(rows, wire::Table::multisig, encoding), wire::Mode::collect, nullptr,
               static_cast<std::uint8_t>(wire::Table::multisig));
}

BatchResult Client::collect_schnorr(std::span<wire::SchnorrRow> rows) {
    return run(table_span(rows, wire::Table::schnorr, wire::SigEncoding::opaque), wire::Mode::collect, nullptr,
               static_cast<std::uint8_t>(wire::Table::schnorr));
}

BatchResult Client::collect_threshold(std::span<wire::ThresholdRow> rows) {
    return run(table_span(rows, wire::Table::threshold, wire::SigEncoding::opaque), wire::Mode::collect, nullptr,
               static_cast<std::uint8_t>(wire::Table::threshold));
}

BatchResult Client::run_columns(const Columns& columns, wire::Mode mode, std::uint8_t* results, std::uint8_t table) {
    return impl_->run_columns(columns, mode, results, table);
}

namespace {
Columns make_columns(wire::RecordKind kind, wire::SigEncoding encoding, const std::uint8_t* message,
                     const std::uint8_t* key, const std::uint8_t* signature, std::uint8_t* correlate, std::size_t n,
                     std::size_t tail_size) {
    Columns c;
    c.kind = kind;
    c.encoding = encoding;
    c.count = n;
    c.tail_size = tail_size;
    c.message = message;
    c.key = key;
    c.signature = signature;
    c.correlate = correlate;
    return c;
}
}  // namespace

BatchResult Client::verify_ecdsa_columns(const std::uint8_t* message, const std::uint8_t* key,
                                         const std::uint8_t* signature, std::size_t n, std::uint8_t* results,
                                         wire::SigEncoding encoding) {
    return run_columns(make_columns(wire::RecordKind::ecdsa, encoding, message, key, signature, nullptr, n, 0),
                       wire::Mode::results, results);
}

BatchResult Client::verify_schnorr_columns(const std::uint8_t* message, const std::uint8_t* key,
                                           const std::uint8_t* signature, std::size_t n, std::uint8_t* results) {
    return run_columns(
        make_columns(wire::RecordKind::schnorr, wire::SigEncoding::opaque, message, key, signature, nullptr, n, 0),
        wire::Mode::results, results);
}

BatchResult Client::collect_ecdsa_columns(const std::uint8_t* message, const std::uint8_t* key,
                                          const std::uint8_t* signature, std::uint8_t* correlate, std::size_t n,
                                          std::size_t tail_size, wire::SigEncoding encoding) {
    return run_columns(make_columns(wire::RecordKind::ecdsa, encoding, message, key, signature, correlate, n, tail_size),
                       wire::Mode::collect, nullptr);
}

BatchResult Client::collect_schnorr_columns(const std::uint8_t* message, const std::uint8_t* key,
                                            const std::uint8_t* signature, std::uint8_t* correlate, std::size_t n,
                                            std::size_t tail_size) {
    return run_columns(make_columns(wire::RecordKind::schnorr, wire::SigEncoding::opaque, message, key, signature,
                                    correlate, n, tail_size),
                       wire::Mode::collect, nullptr);
}

Status Client::reserve_columns(wire::RecordKind kind, std::size_t tail_size, std::size_t count, Batch& batch,
                               bool wait) {
    if (tail_size > wire::kMaxKeySize || static_cast<std::uint8_t>(kind) > 1) return Status::invalid_argument;
    return impl_->reserve_columns(kind, tail_size, count, batch, wait);
}

Status Client::reserve(wire::RecordKind kind, std::size_t key_size, std::size_t count, Batch& batch, bool wait) {
    if (key_size > wire::kMaxKeySize || static_cast<std::uint8_t>(kind) > 1) return Status::invalid_argument;
    return impl_->reserve(kind, key_size, count, batch, wait);
}

Status Client::submit(Batch& batch, wire::Mode mode, wire::SigEncoding encoding, std::uint8_t table) {
    if (static_cast<std::uint8_t>(mode) > 1 || static_cast<std::uint8_t>(encoding) > 1) return Status::invalid_argument;
    return impl_->submit(batch, shm::Opcode::verify, mode, encoding, table);
}

BatchResult Client::wait(Batch& batch) { return impl_->wait(batch, true); }

BatchResult Client::poll(Batch& batch) { return impl_->wait(batch, false); }

void Client::release(Batch& batch) { impl_->release(batch); }

std::size_t Client::max_batch_rows(wire::RecordKind kind, std::size_t key_size) const {
    std::lock_guard lk(impl_->mu);
    return impl_->live ? impl_->max_alloc_rows(kind, key_size) : 0;
}

std::size_t Client::max_column_batch_rows(wire::RecordKind kind, std::size_t tail_size) const {
    std::lock_guard lk(impl_->mu);
    return impl_->live && impl_->conn.abi_minor >= shm::kAbiMinorColumns
               ? impl_->max_alloc_column_rows(kind, tail_size)
               : 0;
}

Status Client::ping(std::uint64_t* rtt_ns) {
    const auto t0 = Clock::now();
    Batch b;
    Status st = impl_->reserve(wire::RecordKind::ecdsa, 0, 0, b, true);
    if (st != Status::ok) return st;
    st = impl_->submit(b, shm::Opcode::nop, wire::Mode::results, wire::SigEncoding::opaque, shm::kTableUnspecified);
    const BatchResult r = impl_->wait_raw(b, true);
    impl_->release(b);
    if (st == Status::ok) st = r.status;
    if (rtt_ns != nullptr)
        *rtt_ns = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    return st;
}

bool Client::connected() const {
    std::lock_guard lk(impl_->mu);
    return impl_->live;
}

std::uint64_t Client::epoch() const {
    std::lock_guard lk(impl_->mu);
    return impl_->live ? impl_->conn.epoch : 0;
}

std::uint64_t Client::arena_size() const {
    std::lock_guard lk(impl_->mu);
    return impl_->live ? impl_->conn.arena_size : 0;
}

std::string Client::last_error() const {
    std::lock_guard lk(impl_->mu);
    return impl_->last_error;
}

}  // namespace sigverify
