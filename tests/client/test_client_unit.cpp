// SPDX-License-Identifier: MIT
// Client-side guarantees that need a controllable peer or instrumentation:
// a fake daemon that answers with a wrong epoch (the verdict must never be
// applied), and zero heap allocations per batch after connect.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "support/first_differences.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"

// --- allocation counter ------------------------------------------------------
static std::atomic<std::uint64_t> g_allocations{0};

void* operator new(std::size_t n) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n != 0 ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
// The nothrow forms too (Catch uses them): otherwise they come from the runtime
// and their blocks reach the free() above (ASan: alloc-dealloc-mismatch).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(n != 0 ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

using namespace sigverify;
using namespace sigverify::test;

namespace {

// A fake daemon: one session, answers every verify submission with "all rows
// valid" — but stamped with another epoch — after writing 1s into the results.
class FakeDaemon {
public:
    explicit FakeDaemon(std::uint64_t epoch_in_completions, std::uint16_t abi_minor = 0)
        : dir_(make_temp_dir()), lie_(epoch_in_completions), abi_minor_(abi_minor) {
        listen_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const std::string p = dir_ + "/sigverifyd.sock";
        std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
        REQUIRE(bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(listen(listen_, 4) == 0);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeDaemon() {
        stop_ = true;
        shutdown(listen_, SHUT_RDWR);
        thread_.join();
        close(listen_);
        remove_tree(dir_);
    }
    const std::string& dir() const { return dir_; }
    // The flags of every submission seen so far.
    std::vector<std::uint16_t> flags_seen() {
        std::lock_guard lock(mutex_);
        return flags_;
    }
    static constexpr std::uint64_t kEpoch = 0x1111222233334444ull;

private:
    void serve() {
        const int fd = accept(listen_, nullptr, nullptr);
        if (fd < 0) return;
        shm::HelloRequest hello{};
        if (recv(fd, &hello, sizeof hello, 0) != static_cast<ssize_t>(sizeof hello)) return;
        shm::Layout l;
        shm::compute_layout(8, 8, 1 << 20, l);
        const int mfd = memfd_create("fake-sigverifyd", MFD_CLOEXEC);
        if (ftruncate(mfd, static_cast<off_t>(l.segment_size)) != 0) return;
        auto* base = static_cast<std::uint8_t*>(
            mmap(nullptr, l.segment_size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0));
        auto* h = reinterpret_cast<shm::SegmentHeader*>(base);
        h->magic = shm::kSegmentMagic;
        h->abi_major = shm::kAbiMajor;
        h->abi_minor = abi_minor_;
        h->header_size = shm::kHeaderSize;
        h->segment_size = l.segment_size;
        h->epoch = kEpoch;
        h->sq_entries = h->cq_entries = 8;
        h->sq_mask = h->cq_mask = 7;
        h->sqe_size = sizeof(shm::SubmissionEntry);
        h->cqe_size = sizeof(shm::CompletionEntry);
        h->sq_entries_offset = l.sq_entries_offset;
        h->cq_entries_offset = l.cq_entries_offset;
        h->arena_offset = l.arena_offset;
        h->arena_size = l.arena_size;
        shm::word(h->state).store(1, std::memory_order_release);
        shm::HelloReply reply{};
        reply.magic = shm::kReplyMagic;
        reply.protocol_version = shm::kProtocolVersion;
        reply.segment_size = l.segment_size;
        reply.epoch = kEpoch;
        shm::send_packet(fd, &reply, sizeof reply, mfd);
        close(mfd);
        shm::MappedAck ack{};
        recv(fd, &ack, sizeof ack, 0);
        auto* sqes = reinterpret_cast<shm::SubmissionEntry*>(base + l.sq_entries_offset);
        auto* cqes = reinterpret_cast<shm::CompletionEntry*>(base + l.cq_entries_offset);
        std::uint8_t* arena = base + l.arena_offset;
        std::uint32_t head = 0, tail = 0;
        while (!stop_) {
            const std::uint32_t t = shm::word(h->sq_tail).load(std::memory_order_acquire);
            if (t == head) {
                std::this_thread::sleep_for(std::chrono::microseconds(100));
                continue;
            }
            shm::SubmissionEntry e = sqes[head & 7];
            ++head;
            shm::word(h->sq_head).store(head, std::memory_order_release);
            {
                std::lock_guard lock(mutex_);
                flags_.push_back(e.flags);
            }
            if (e.mode == 0 && e.results_offset + e.row_count <= l.arena_size)
                std::memset(arena + e.results_offset, 1, e.row_count);
            shm::CompletionEntry ce{};
            ce.user_tag = e.user_tag;
            ce.valid = e.row_count;
            ce.epoch = lie_;
            cqes[tail & 7] = ce;
            ++tail;
            shm::word(h->cq_tail).store(tail, std::memory_order_release);
            shm::ring(h->client_bell);
        }
        munmap(base, l.segment_size);
        close(fd);
    }

    std::string dir_;
    std::uint64_t lie_;
    std::uint16_t abi_minor_;
    std::mutex mutex_;
    std::vector<std::uint16_t> flags_;
    int listen_ = -1;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace

TEST_CASE("a completion from another epoch is never applied", "[client][epoch]") {
    const std::size_t n = 40;
    // Known verdicts: the local fallback runs the reference verifier, so it cannot judge itself.
    KnownRows known = make_known_rows(wire::Table::ecdsa, n, wire::SigEncoding::opaque, 77);  // 25% invalid
    auto& rows = known.rows;
    const std::vector<std::uint8_t>& expected = known.expected;
    REQUIRE(known.invalid > 0);
    {
        FakeDaemon fake(FakeDaemon::kEpoch + 1);
        ClientOptions o;
        o.runtime_dir = fake.dir();
        auto c = Client::connect(o);
        REQUIRE(c->epoch() == FakeDaemon::kEpoch);
        std::vector<std::uint8_t> got(n, 0xAA);
        const BatchResult r = c->verify_ecdsa(rows.data(), n, 3, got.data());
        CHECK(r.status == Status::stale_epoch);
        CHECK(std::all_of(got.begin(), got.end(), [](std::uint8_t v) { return v == 0; }));  // nothing applied
    }
    {
        FakeDaemon fake(FakeDaemon::kEpoch + 1);
        ClientOptions o;
        o.runtime_dir = fake.dir();
        o.fallback = Fallback::local;
        o.local_threads = 1;
        auto c = Client::connect(o);
        std::vector<std::uint8_t> got(n, 0xAA);
        const BatchResult r = c->verify_ecdsa(rows.data(), n, 3, got.data());
        REQUIRE(r.ok());
        CHECK(r.local_rows == n);
        CHECK(first_differences(got, expected) == "");  // the lying "all valid" never reached the caller
    }
    {
        FakeDaemon honest(FakeDaemon::kEpoch);  // same epoch: its (fake) verdicts are applied
        ClientOptions o;
        o.runtime_dir = honest.dir();
        auto c = Client::connect(o);
        std::vector<std::uint8_t> got(n, 0);
        const BatchResult r = c->verify_ecdsa(rows.data(), n, 3, got.data());
        REQUIRE(r.ok());
        CHECK(std::all_of(got.begin(), got.end(), [](std::uint8_t v) { return v == 1; }));
    }
}

TEST_CASE("no heap allocation per batch after connect", "[client][alloc]") {
    DaemonProcess d({"--arena-size", "256K"});
    ClientOptions o;
    o.runtime_dir = d.dir();
    const std::uint64_t at_start = g_allocations.load();
    auto c = Client::connect(o);
    CHECK(g_allocations.load() > at_start);  // the counter sees the library's allocations
    const std::size_t n = 3000;  // split into several pieces by the 256K arena
    auto rows = make_rows(wire::Table::schnorr, n, wire::SigEncoding::opaque, 5);
    auto rows2 = rows;
    std::vector<std::uint8_t> results(n);
    REQUIRE(c->verify_schnorr(rows.data(), n, 3, results.data()).ok());  // warm-up
    RowBatch b;
    const std::uint64_t before = g_allocations.load();
    bool ok = true;
    for (int i = 0; i < 5; ++i) {
        ok &= c->verify_schnorr(rows.data(), n, 3, results.data()).ok();
        ok &= c->collect_schnorr(rows2.data(), 100, 3).ok();
        ok &= c->ping() == Status::ok;
        ok &= c->reserve(wire::RecordKind::schnorr, 3, 10, b) == Status::ok;
        std::memcpy(b.rows, rows.data(), 10 * 131);
        ok &= c->submit(b, wire::Mode::results) == Status::ok;
        ok &= c->wait(b).ok();
        c->release(b);
    }
    const std::uint64_t after = g_allocations.load();
    CHECK(ok);
    CHECK(after - before == 0);
}

TEST_CASE("no heap allocation per column batch after connect", "[client][alloc][columns]") {
    DaemonProcess d({"--arena-size", "256K"});
    ClientOptions o;
    o.runtime_dir = d.dir();
    auto c = Client::connect(o);
    const std::size_t n = 3000;  // 3000 x 136 bytes: split into several pieces by the 256K arena
    auto rows = make_rows(wire::Table::multisig, n, wire::SigEncoding::opaque, 6);
    // Columns by hand (no library helper inside the measured loop).
    std::vector<std::uint8_t> message(n * 32), key(n * 33), signature(n * 64), correlate(n * 6), results(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint8_t* row = rows.data() + i * 135;
        std::memcpy(&message[i * 32], row, 32);
        std::memcpy(&key[i * 33], row + 32, 33);
        std::memcpy(&signature[i * 64], row + 65, 64);
        std::memcpy(&correlate[i * 6], row + 129, 6);
    }
    REQUIRE(c->verify_ecdsa_columns(message.data(), key.data(), signature.data(), n, results.data()).ok());  // warm-up
    const std::uint64_t valid = std::count(results.begin(), results.end(), 1);
    REQUIRE(valid > 0);
    REQUIRE(valid < n);
    ColumnBatch b;
    const std::uint64_t before = g_allocations.load();
    bool ok = true;
    std::uint64_t counted = 0;
    for (int i = 0; i < 5; ++i) {
        const BatchResult r = c->verify_ecdsa_columns(message.data(), key.data(), signature.data(), n, results.data());
        ok &= r.ok();
        counted += r.valid;
        ok &= c->collect_ecdsa_columns(message.data(), key.data(), signature.data(), correlate.data(), n, 6).ok();
        ok &= c->reserve_columns(wire::RecordKind::ecdsa, 6, 10, b) == Status::ok;
        std::memcpy(b.message, message.data(), 10 * 32);
        std::memcpy(b.key, key.data(), 10 * 33);
        std::memcpy(b.signature, signature.data(), 10 * 64);
        std::memcpy(b.correlate, correlate.data(), 10 * 6);
        ok &= c->submit(b, wire::Mode::results) == Status::ok;
        ok &= c->wait(b).ok();
        c->release(b);
    }
    const std::uint64_t after = g_allocations.load();
    CHECK(ok);
    CHECK(counted == 5 * valid);
    CHECK(after - before == 0);
}

TEST_CASE("strict_confirm flags each batch, and only to a daemon of ABI 1.2 or later", "[client]") {
    const std::size_t n = 8;
    auto rows = make_rows(wire::Table::multisig, n, wire::SigEncoding::opaque, 79);
    for (const std::uint16_t minor : {std::uint16_t(1), shm::kAbiMinorStrictConfirm}) {
        for (const bool strict : {false, true}) {
            FakeDaemon daemon(FakeDaemon::kEpoch, minor);
            ClientOptions o;
            o.runtime_dir = daemon.dir();
            o.strict_confirm = strict;
            auto c = Client::connect(o);
            REQUIRE(c->connected());
            std::vector<std::uint8_t> got(n);
            const std::span<const wire::MultisigRow> typed(reinterpret_cast<const wire::MultisigRow*>(rows.data()), n);
            REQUIRE(c->verify_multisig(typed, got).ok());
            const auto flags = daemon.flags_seen();
            REQUIRE(flags.size() == 1);
            // An older daemon refuses any flag, and confirms every invalid verdict anyway.
            CHECK(flags[0] == (strict && minor >= shm::kAbiMinorStrictConfirm ? shm::kSubmitStrictConfirm : 0));
        }
    }
}

TEST_CASE("column batches are never sent to a daemon older than ABI 1.1", "[client][columns]") {
    // The fake daemon announces ABI 1.0 and would answer anything with "all valid".
    const std::size_t n = 40;
    KnownRows known = make_known_rows(wire::Table::schnorr, n, wire::SigEncoding::opaque, 78);  // 25% invalid
    auto& rows = known.rows;
    const std::vector<std::uint8_t>& expected = known.expected;
    REQUIRE(known.invalid > 0);
    std::vector<std::uint8_t> message(n * 32), key(n * 32), signature(n * 64);
    for (std::size_t i = 0; i < n; ++i) {
        std::memcpy(&message[i * 32], rows.data() + i * 131, 32);
        std::memcpy(&key[i * 32], rows.data() + i * 131 + 32, 32);
        std::memcpy(&signature[i * 64], rows.data() + i * 131 + 64, 64);
    }
    {
        FakeDaemon old(FakeDaemon::kEpoch);
        ClientOptions o;
        o.runtime_dir = old.dir();
        auto c = Client::connect(o);
        REQUIRE(c->connected());
        CHECK(c->max_column_batch_rows(wire::RecordKind::schnorr, 0) == 0);
        std::vector<std::uint8_t> got(n, 0xAA);
        const BatchResult r = c->verify_schnorr_columns(message.data(), key.data(), signature.data(), n, got.data());
        CHECK(r.status == Status::bad_entry);
        CHECK(c->last_error().find("ABI") != std::string::npos);
        CHECK(std::all_of(got.begin(), got.end(), [](std::uint8_t v) { return v == 0; }));  // fail closed, nothing sent
        ColumnBatch b;
        CHECK(c->reserve_columns(wire::RecordKind::schnorr, 0, 1, b) == Status::bad_entry);
        // Rows still go to it.
        CHECK(c->verify_schnorr(rows.data(), n, 3, got.data()).ok());
        CHECK(std::all_of(got.begin(), got.end(), [](std::uint8_t v) { return v == 1; }));
    }
    {
        FakeDaemon old(FakeDaemon::kEpoch);
        ClientOptions o;
        o.runtime_dir = old.dir();
        o.fallback = Fallback::local;
        o.local_threads = 1;
        auto c = Client::connect(o);
        std::vector<std::uint8_t> got(n, 0xAA);
        const BatchResult r = c->verify_schnorr_columns(message.data(), key.data(), signature.data(), n, got.data());
        REQUIRE(r.ok());
        CHECK(r.local_rows == n);
        CHECK(first_differences(got, expected) == "");
    }
}
