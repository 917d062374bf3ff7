// SPDX-License-Identifier: MIT
// The ring ABI under hostile input, live: a raw client that speaks the
// protocol by hand against a real daemon and writes malformed entries,
// out-of-range indices, rewritten columns and a truncated or scribbled
// segment; the daemon answers with error completions and keeps serving
// everyone else. The checks themselves, as units: test_submission_checks.cpp.
#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <limits>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "raw_session.hpp"
#include "ring_entries.hpp"
#include "ops/ops_helpers.hpp"
#include "reference/columns.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"
#include "daemon/memory/submission_checks.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

using namespace sigverify;
using namespace sigverify::test;
using shm::Status;

namespace {

// A bystander through the client library: the daemon still serves it.
bool client_works(const DaemonProcess& d) {
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = "bystander";
    auto c = Client::connect(o);
    return check_batch(*c, wire::Table::schnorr, wire::Mode::results, wire::SigEncoding::opaque, 50, 5);
}

}  // namespace

TEST_CASE("the daemon answers hostile column entries with error completions and keeps serving",
          "[daemon][ring][columns]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    CHECK(s.h->abi_major == shm::kAbiMajor);
    CHECK(s.h->abi_minor == shm::kAbiMinor);
    const std::uint64_t arena = s.h->arena_size;
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t n = 40;
    const Placed p = place(n, 33, 6);

    struct Case {
        shm::SubmissionEntry e;
        Status expected;
        shm::ColumnDetail detail;
    };
    std::vector<Case> cases;
    auto add = [&](shm::SubmissionEntry e, Status st, shm::ColumnDetail detail = shm::ColumnDetail::none) {
        e.user_tag = 2000 + cases.size();
        cases.push_back({e, st, detail});
    };
    using D = shm::ColumnDetail;
    add(column_entry(arena - 8, p.key, p.signature, p.correlate, p.results, n), Status::bad_range, D::message);
    add(column_entry(p.message, max - 100, p.signature, p.correlate, p.results, n), Status::bad_range, D::key);
    add(column_entry(p.message, p.key, arena + 64, p.correlate, p.results, n), Status::bad_range, D::signature);
    add(column_entry(p.message, p.key, p.signature, max, p.results, n), Status::bad_range, D::correlate);
    add(column_entry(p.message, p.key, p.signature, p.correlate, max - 1, n), Status::bad_range, D::results);
    add(column_entry(p.message, p.key, p.signature, p.correlate, p.key, n), Status::bad_range, D::overlap);
    add(column_entry(p.message, p.key, p.signature, p.key, 0, n, 6, wire::Mode::collect), Status::bad_range,
        D::overlap);
    add(column_entry(0, 0, 0, 0, 0, max / 16), Status::bad_range, D::row_count);
    add(column_entry(0, 0, 0, 0, 0, 600, 255, wire::Mode::collect), Status::bad_range, D::row_count);  // tail too large
    auto e = column_entry(p.message, p.key, p.signature, p.correlate, p.results, n);
    e.flags = 4;
    add(e, Status::bad_entry);
    add(column_entry(p.message, p.key, p.signature, p.correlate, p.results, n, 0), Status::bad_entry);
    add(column_entry(p.message, p.key, p.signature, p.correlate, p.results, n, 6, wire::Mode::collect),
        Status::bad_entry);
    // Real columns in the arena: verified, and the verdicts are libsecp256k1's.
    KnownRows known = make_known_rows(wire::Table::multisig, n, wire::SigEncoding::opaque, 17);
    const wire::RowSpan span = span_of(wire::Table::multisig, wire::SigEncoding::opaque, known.rows, n);
    reference::ColumnTable cols = reference::rows_to_columns(span, reference::CorrelateLayout::tail);
    std::memcpy(s.arena() + p.message, cols.message.data(), cols.message.size());
    std::memcpy(s.arena() + p.key, cols.key.data(), cols.key.size());
    std::memcpy(s.arena() + p.signature, cols.signature.data(), cols.signature.size());
    std::memcpy(s.arena() + p.correlate, cols.correlate.data(), cols.correlate.size());
    std::memset(s.arena() + p.results, 0xAA, n);
    add(column_entry(p.message, p.key, p.signature, p.correlate, p.results, n), Status::ok);

    std::size_t next = 0;
    while (next < cases.size()) {
        const std::size_t round = std::min<std::size_t>(4, cases.size() - next);
        for (std::size_t i = 0; i < round; ++i) s.submit(cases[next + i].e);
        for (std::size_t i = 0; i < round; ++i) {
            shm::CompletionEntry c;
            REQUIRE(s.next_completion(c));
            REQUIRE(c.user_tag >= 2000);
            REQUIRE(c.user_tag < 2000 + cases.size());
            const Case& k = cases[c.user_tag - 2000];
            INFO("entry " << c.user_tag - 2000);
            CHECK(c.status == static_cast<std::uint32_t>(k.expected));
            CHECK(c.detail == static_cast<std::uint32_t>(k.detail));
            if (k.expected != Status::ok) CHECK(c.valid + c.invalid == 0);
        }
        next += round;
    }
    CHECK(shm::word(s.h->dropped).load() == cases.size() - 1);
    // Known verdicts (make_known_rows), not the daemon's own verifier.
    CHECK(std::memcmp(s.arena() + p.results, known.expected.data(), n) == 0);
    CHECK(known.valid > 0);
    CHECK(known.invalid > 0);
    // The correlate column was not touched in results mode.
    CHECK(std::memcmp(s.arena() + p.correlate, cols.correlate.data(), cols.correlate.size()) == 0);
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
}

TEST_CASE("a client rewriting its columns while they are verified cannot hurt the daemon", "[daemon][ring][columns]") {
    DaemonProcess d({"--arena-size", "256K", "--ring-entries", "8", "--cpu-threads", "2", "--chunk-rows", "32"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    const std::uint64_t n = 1000;
    const Placed p = place(n, 33, 6);
    REQUIRE(p.end <= s.h->arena_size);
    auto rows = make_rows(wire::Table::multisig, n, wire::SigEncoding::opaque, 23);
    const wire::RowSpan span = span_of(wire::Table::multisig, wire::SigEncoding::opaque, rows, n);
    reference::ColumnTable cols = reference::rows_to_columns(span, reference::CorrelateLayout::tail);
    std::uint64_t x = 0x243F6A8885A308D3ull;
    for (int round = 0; round < 6; ++round) {
        std::memcpy(s.arena() + p.message, cols.message.data(), cols.message.size());
        std::memcpy(s.arena() + p.key, cols.key.data(), cols.key.size());
        std::memcpy(s.arena() + p.signature, cols.signature.data(), cols.signature.size());
        std::memcpy(s.arena() + p.correlate, cols.correlate.data(), cols.correlate.size());
        const wire::Mode mode = round % 2 ? wire::Mode::collect : wire::Mode::results;
        auto e = column_entry(p.message, p.key, p.signature, p.correlate, mode == wire::Mode::results ? p.results : 0,
                              n, 6, mode);
        e.user_tag = 3000 + round;
        s.submit(e);
        // Scribble over every column (and the results) until the answer comes.
        shm::CompletionEntry c{};
        bool answered = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!answered && std::chrono::steady_clock::now() < deadline) {
            for (int i = 0; i < 256; ++i) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.arena()[x % p.end] = static_cast<std::uint8_t>(x >> 56);
            }
            answered = s.next_completion(c, std::chrono::milliseconds(1));
        }
        REQUIRE(answered);
        CHECK(c.user_tag == 3000u + round);
        CHECK(c.status == static_cast<std::uint32_t>(Status::ok));
        CHECK(c.valid + c.invalid == n);
    }
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
}

TEST_CASE("a client rewriting rows a GPU reads in place cannot switch the GPU off", "[daemon][ring][gpu-path]") {
    // The GPU path with the kernel math on the CPU (--backend host-kernel):
    // packed rows are read in place from the client's segment, and every
    // verdict is re-checked by libsecp256k1 (samples 1 in 1). The client
    // scribbles over its rows until each answer comes, so the "GPU" and the
    // re-check see different bytes; the daemon must settle that on private
    // copies and leave the GPU on.
    std::vector<std::string> args = gpu_path_args("0");
    for (const char* o : {"--cpu-threads", "2", "--cross-check-sample", "1", "--cross-check-invalid-sample", "1",
                          "--gpu-min-rows", "1", "--gpu-split", "off", "--arena-size", "1M", "--ring-entries", "8"})
        args.push_back(o);
    DaemonProcess d(args);
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    const std::uint64_t n = 2000, stride = wire::kEcdsaRecordSize + 3, results = n * stride;
    REQUIRE(results + n <= s.h->arena_size);
    const auto rows = make_rows(wire::Table::ecdsa, n, wire::SigEncoding::opaque, 29);
    std::uint64_t x = 0x13198A2E03707344ull;
    for (int round = 0; round < 4; ++round) {
        std::memcpy(s.arena(), rows.data(), rows.size());
        auto e = verify_entry(0, results, n);
        e.user_tag = 4000 + round;
        s.submit(e);
        shm::CompletionEntry c{};
        bool answered = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!answered && std::chrono::steady_clock::now() < deadline) {
            for (int i = 0; i < 64; ++i) {  // signature bytes of random rows
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.arena()[(x % n) * stride + 65 + (x >> 40) % 64] ^= static_cast<std::uint8_t>(1 + (x >> 56) % 255);
            }
            answered = s.next_completion(c, std::chrono::milliseconds(1));
        }
        REQUIRE(answered);
        CHECK(c.status == static_cast<std::uint32_t>(Status::ok));
        CHECK(c.valid + c.invalid == n);
    }
    const std::string backends = stats_command(d.dir(), "backends");
    INFO(backends);
    CHECK(backends.find("switched off") == std::string::npos);
    CHECK(backends.find("crosscheck_mismatches=0 ") != std::string::npos);
    const std::string metrics = stats_command(d.dir(), "stats");
    CHECK(metrics.find("sigverifyd_rows_in_place_total 0\n") == std::string::npos);  // rows were read in place
    const std::string rewritten = "sigverifyd_backend_rows_rewritten_total{backend=\"" + gpu_path_device(backends) + "\"}";
    CHECK(metrics.find(rewritten) != std::string::npos);
    CHECK(metrics.find(rewritten + " 0\n") == std::string::npos);
    CHECK(client_works(d));
}

TEST_CASE("ring index bounds survive wrap-around", "[daemon][ring]") {
    CHECK(shm::ring_count_ok(0xFFFFFFF0u, 0x10u, 32));
    CHECK_FALSE(shm::ring_count_ok(0xFFFFFFF0u, 0x11u, 32));
    CHECK_FALSE(shm::ring_count_ok(5, 4, 32));  // tail behind head
    CHECK(shm::ring_count_ok(7, 7, 2));
}

// docs/protocol.md: "sq_tail - sq_head > sq_entries is a protocol violation";
// a ring holding exactly sq_entries entries is full, not a violation. Both
// edges against the real daemon: exactly `entries` entries published in one
// tail store are all consumed and answered, then a tail `entries + 1` past the
// daemon's head ends the session. An off-by-one either way fails one half.
TEST_CASE("a full submission ring is served; one entry past full ends the session", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    const std::uint32_t entries = s.h->sq_entries;
    REQUIRE(entries == 8);
    REQUIRE(s.h->cq_entries >= entries);  // so the daemon can take all of them without our reaping
    REQUIRE(shm::word(s.h->sq_head).load() == 0);

    auto publish = [&](std::uint32_t count, std::uint64_t tag_base) {
        // Write all entries first, then store the tail once: the daemon sees
        // either the old tail or head + count, never anything in between.
        for (std::uint32_t i = 0; i < count; ++i) {
            shm::SubmissionEntry nop{};
            nop.opcode = static_cast<std::uint8_t>(shm::Opcode::nop);
            nop.user_tag = tag_base + i;
            std::memcpy(&s.sqes()[(s.sq_tail + i) & s.h->sq_mask], &nop, sizeof nop);
        }
        s.sq_tail += count;
        shm::word(s.h->sq_tail).store(s.sq_tail, std::memory_order_release);
        shm::ring(s.h->daemon_bell);
    };

    // 1. Exactly `entries` entries: a full ring, all answered.
    publish(entries, 5000);
    std::vector<bool> seen(entries, false);
    for (std::uint32_t i = 0; i < entries; ++i) {
        shm::CompletionEntry c{};
        REQUIRE(s.next_completion(c));
        REQUIRE(c.user_tag >= 5000);
        REQUIRE(c.user_tag < 5000 + entries);
        CHECK(c.status == static_cast<std::uint32_t>(Status::ok));
        seen[c.user_tag - 5000] = true;
    }
    CHECK(std::count(seen.begin(), seen.end(), true) == entries);
    CHECK(shm::word(s.h->sq_head).load() == entries);
    CHECK_FALSE(s.closed_by_daemon(std::chrono::milliseconds(300)));
    CHECK(shm::word(s.h->state).load() == static_cast<std::uint32_t>(shm::SegmentState::ready));

    // 2. Full again at a non-zero head (the daemon's head is now `entries`).
    publish(entries, 6000);
    for (std::uint32_t i = 0; i < entries; ++i) {
        shm::CompletionEntry c{};
        REQUIRE(s.next_completion(c));
        CHECK(c.user_tag >= 6000);
        CHECK(c.status == static_cast<std::uint32_t>(Status::ok));
    }
    REQUIRE(shm::word(s.h->sq_head).load() == 2 * entries);
    CHECK_FALSE(s.closed_by_daemon(std::chrono::milliseconds(300)));

    // 3. One past full: tail - head == entries + 1 is a protocol violation.
    publish(entries + 1, 7000);
    CHECK(s.closed_by_daemon(std::chrono::seconds(2)));
    CHECK(shm::word(s.h->state).load() == static_cast<std::uint32_t>(shm::SegmentState::closed));
    shm::CompletionEntry c{};
    CHECK_FALSE(s.next_completion(c, std::chrono::milliseconds(200)));  // none of the 9 was consumed
    CHECK(shm::word(s.h->sq_head).load() == 2 * entries);
    // Only that session ended.
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
}

TEST_CASE("the daemon answers malformed entries with error completions and keeps serving", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    REQUIRE(shm::word(s.h->state).load() == static_cast<std::uint32_t>(shm::SegmentState::ready));
    CHECK(s.h->epoch == s.reply.epoch);
    const std::uint64_t arena = s.h->arena_size;

    struct Case {
        shm::SubmissionEntry e;
        Status expected;
    };
    std::vector<Case> cases;
    auto add = [&](shm::SubmissionEntry e, Status st) {
        e.user_tag = 1000 + cases.size();
        cases.push_back({e, st});
    };
    add(verify_entry(arena - 10, 0, 1), Status::bad_range);
    add(verify_entry(0, 0, 1), Status::bad_range);  // results overlap rows
    add(verify_entry(std::numeric_limits<std::uint64_t>::max() - 3, 0, 2), Status::bad_range);
    auto e = verify_entry(0, 1000, 1);
    e.opcode = 9;
    add(e, Status::bad_entry);
    e = verify_entry(0, 1000, 1);
    e.mode = 5;
    add(e, Status::bad_entry);
    shm::SubmissionEntry nop{};
    nop.opcode = static_cast<std::uint8_t>(shm::Opcode::nop);
    add(nop, Status::ok);
    // Cancel (ABI 1.3): a tag no batch in flight has is answered not_found; a
    // cancel entry with any other field set is malformed.
    shm::SubmissionEntry cancel{};
    cancel.opcode = static_cast<std::uint8_t>(shm::Opcode::cancel);
    cancel.rows_offset = 0xdeadbeef;
    add(cancel, Status::not_found);
    cancel.row_count = 1;
    add(cancel, Status::bad_entry);
    // A real row in the arena: verified.
    const KnownRows known = make_known_rows(wire::Table::ecdsa, 1, wire::SigEncoding::opaque, 3);  // valid
    std::memcpy(s.arena(), known.rows.data(), known.rows.size());
    std::memset(s.arena() + 4096, 0xAA, 1);
    add(verify_entry(0, 4096, 1), Status::ok);

    // More entries than the ring holds: submit in rounds.
    std::size_t next = 0;
    while (next < cases.size()) {
        const std::size_t round = std::min<std::size_t>(4, cases.size() - next);
        for (std::size_t i = 0; i < round; ++i) s.submit(cases[next + i].e);
        for (std::size_t i = 0; i < round; ++i) {
            shm::CompletionEntry c;
            REQUIRE(s.next_completion(c));
            REQUIRE(c.user_tag >= 1000);
            const Case& k = cases[c.user_tag - 1000];
            INFO("entry " << c.user_tag - 1000);
            CHECK(c.status == static_cast<std::uint32_t>(k.expected));
            CHECK(c.epoch == s.reply.epoch);
            if (k.expected == Status::ok && k.e.row_count == 1) {
                CHECK(c.valid + c.invalid == 1);
                CHECK(s.arena()[4096] == known.expected[0]);
            }
        }
        next += round;
    }
    // Five malformed verify entries and the malformed cancel (not_found is an answer, not a drop).
    CHECK(shm::word(s.h->dropped).load() == 6);
    CHECK(client_works(d));
}

TEST_CASE("an out-of-range ring index ends only that session", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    shm::word(s.h->sq_tail).store(1000, std::memory_order_release);  // 1000 entries in an 8-entry ring
    shm::ring_force(s.h->daemon_bell);
    CHECK(s.closed_by_daemon(std::chrono::seconds(2)));
    CHECK(shm::word(s.h->state).load() == static_cast<std::uint32_t>(shm::SegmentState::closed));
    CHECK(client_works(d));

    RawSession t;  // a completion head beyond the tail
    REQUIRE(t.handshake(d.socket_path()));
    shm::word(t.h->cq_head).store(0x80000000u, std::memory_order_release);
    t.submit(verify_entry(0, 4096, 0));
    CHECK(t.closed_by_daemon(std::chrono::seconds(2)));
    CHECK(client_works(d));
    CHECK(d.log().find("out of bounds") != std::string::npos);
}

TEST_CASE("a client truncating its segment cannot crash the daemon", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K"});
    {
        RawSession s;
        REQUIRE(s.handshake(d.socket_path()));
        munmap(s.base, s.size);  // we must not touch it either
        s.base = nullptr;
        REQUIRE(ftruncate(s.seg_fd, 0) == 0);
        // The daemon looks at the header at least every 50 ms.
        CHECK(s.closed_by_daemon(std::chrono::seconds(3)));
    }
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
}

TEST_CASE("malformed handshakes get a clear refusal", "[daemon][ring]") {
    DaemonProcess d;
    {
        RawSession s;
        REQUIRE(s.open(d.socket_path()));
        s.send_raw("hello", 5);
        REQUIRE(s.recv_reply());
        CHECK(s.reply.status == static_cast<std::uint32_t>(Status::handshake));
        CHECK(std::string(shm::read_text(s.reply.error)).find("malformed") != std::string::npos);
        CHECK(s.seg_fd < 0);
    }
    {
        RawSession s;
        REQUIRE(s.open(d.socket_path()));
        shm::HelloRequest hello{};
        hello.magic = 0x12345678;
        hello.protocol_version = shm::kProtocolVersion;
        s.send_raw(&hello, sizeof hello);
        REQUIRE(s.recv_reply());
        CHECK(s.reply.status == static_cast<std::uint32_t>(Status::handshake));
    }
    {
        RawSession s;  // requested ring entries not a power of two
        REQUIRE(s.open(d.socket_path()));
        shm::HelloRequest hello{};
        hello.magic = shm::kHelloMagic;
        hello.protocol_version = shm::kProtocolVersion;
        hello.requested_ring_entries = 3;
        s.send_raw(&hello, sizeof hello);
        REQUIRE(s.recv_reply());
        CHECK(s.reply.status == static_cast<std::uint32_t>(Status::handshake));
    }
    {
        RawSession s;  // an oversized arena request is bounded by the daemon
        REQUIRE(s.open(d.socket_path()));
        shm::HelloRequest hello{};
        hello.magic = shm::kHelloMagic;
        hello.protocol_version = shm::kProtocolVersion;
        hello.requested_arena_size = std::numeric_limits<std::uint64_t>::max();
        s.send_raw(&hello, sizeof hello);
        REQUIRE(s.recv_reply());
        CHECK(s.reply.status == 0);
        CHECK(s.reply.segment_size <= (64ull << 20) + 1024 * 1024);
    }
    CHECK(client_works(d));
    CHECK(leftover_segments(d).empty());
}

TEST_CASE("a client scribbling over its whole segment cannot hurt the daemon or others", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8", "--cpu-threads", "2"});
    std::uint64_t x = 0x9E3779B97F4A7C15ull;
    auto rnd = [&] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    };
    int sessions = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (std::chrono::steady_clock::now() < until) {
        RawSession s;
        if (!s.handshake(d.socket_path())) {
            // One process opening sessions this fast meets the per-process
            // connection rate limit (a clear busy refusal): wait for a token.
            REQUIRE(s.reply.status == static_cast<std::uint32_t>(Status::busy));
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        ++sessions;
        const std::uint32_t entries = s.h->sq_entries;
        std::uint8_t* sq = reinterpret_cast<std::uint8_t*>(s.sqes());
        for (int round = 0; round < 200; ++round) {
            // Random entries, random arena bytes, random completion head; the
            // submission tail mostly in bounds so the entries get parsed.
            for (std::uint32_t i = 0; i < entries * sizeof(shm::SubmissionEntry); i += 8) {
                const std::uint64_t v = rnd();
                std::memcpy(sq + i, &v, 8);
            }
            for (std::uint32_t i = 0; i < entries; ++i) {
                auto* e = &s.sqes()[i];
                if (rnd() % 3 == 0) {  // plausible column entries with hostile offsets/counts
                    e->opcode = static_cast<std::uint8_t>(shm::Opcode::verify_columns);
                    e->record_kind = rnd() % 2;
                    e->encoding = 0;
                    e->key_size = rnd() % 2 ? 0 : static_cast<std::uint8_t>(rnd());
                    e->mode = rnd() % 2;
                    e->table = shm::kTableUnspecified;
                    e->flags = 0;
                    e->rows_offset = rnd() % (s.h->arena_size + 2);
                    e->results_offset = e->mode == 0 ? rnd() % (s.h->arena_size + 2) : 0;
                    e->row_count = rnd() % 600;
                    shm::set_column_offsets(*e, {rnd() % (s.h->arena_size + 2), rnd() % (s.h->arena_size + 2),
                                                 e->key_size != 0 ? rnd() % (s.h->arena_size + 2) : 0});
                } else if (rnd() % 2) {  // plausible entries with hostile offsets/counts
                    e->opcode = 1;
                    e->record_kind = rnd() % 2;
                    e->encoding = 0;
                    e->mode = rnd() % 2;
                    e->table = shm::kTableUnspecified;
                    e->flags = 0;
                    std::memset(e->reserved, 0, sizeof e->reserved);
                    e->rows_offset = rnd() % (s.h->arena_size + 2);
                    e->results_offset = e->mode == 0 ? rnd() % (s.h->arena_size + 2) : 0;
                    e->row_count = rnd() % 600;
                }
            }
            for (int i = 0; i < 64; ++i) s.arena()[rnd() % s.h->arena_size] = static_cast<std::uint8_t>(rnd());
            const std::uint32_t head = shm::word(s.h->sq_head).load();
            const std::uint32_t tail = rnd() % 8 == 0 ? static_cast<std::uint32_t>(rnd()) : head + rnd() % (entries + 1);
            shm::word(s.h->sq_tail).store(tail, std::memory_order_release);
            if (rnd() % 4 == 0) shm::word(s.h->cq_head).store(static_cast<std::uint32_t>(rnd()));
            else shm::word(s.h->cq_head).store(shm::word(s.h->cq_tail).load());
            shm::ring(s.h->daemon_bell);
            if (s.closed_by_daemon(std::chrono::milliseconds(1))) break;
        }
    }
    INFO(sessions << " scribbling sessions");
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
    CHECK(leftover_segments(d).empty());
}
