// SPDX-License-Identifier: MIT
// A registered buffer per column (ring ABI 1.6) end to end through a real
// sigverifyd: the message, key and signature columns each in a memfd of
// their own (as a libbitcoin-like store keeps a file per column), verdicts
// byte for byte against the copy path on the same rows and against verdicts
// known without any verifier of the product; the hostile cases of the
// single-buffer form for each column separately from a raw client (unknown
// and unregistered ids, offsets past the end, overflowing offsets, a set
// outside the arena or with reserved bytes); one column's buffer truncated
// under a batch (buffer_lost, no verdict 1 that is not the known one); one of
// the three unregistered during a batch (the batch keeps it, the next one
// gets not_found); the C ABI compiled as C.
#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <limits>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "raw_session.hpp"
#include "reference/columns.hpp"

using namespace sigverify;
using namespace sigverify::test;
using shm::Status;
using wire::RecordKind;
using wire::SigEncoding;
using wire::Table;

extern "C" int c_abi_column_buffers_check(const char* dir, const int fds[3], const unsigned long long sizes[3],
                                          size_t n, int kind, int encoding, const unsigned long long offsets[3],
                                          unsigned char* results);

namespace {

// Known rows as three columns, each in a memfd of its own behind `lead[i]`
// bytes of junk (so no column starts on a page); the rows repeated `tiles`
// times (cheap many-row batches).
struct ThreeColumns {
    KnownRows known;
    RecordKind kind = RecordKind::ecdsa;
    SigEncoding enc = SigEncoding::opaque;
    std::size_t count = 0;
    std::vector<std::uint8_t> column[3];  // message, key, signature: the bytes after the lead
    std::uint64_t lead[3] = {100, 7, 4097};
    int fd[3] = {-1, -1, -1};

    ThreeColumns(Table table, std::size_t n, SigEncoding e, std::uint64_t seed, std::size_t tiles = 1,
                 const char* name = "column") {
        known = make_known_rows(table, n, e, seed);
        const reference::ColumnTable t =
            reference::rows_to_columns(span_of(table, e, known.rows, n), reference::CorrelateLayout::none);
        kind = t.kind;
        enc = e;
        count = n * tiles;
        const std::vector<std::uint8_t>* src[3] = {&t.message, &t.key, &t.signature};
        for (int i = 0; i < 3; ++i) {
            for (std::size_t k = 0; k < tiles; ++k) column[i].insert(column[i].end(), src[i]->begin(), src[i]->end());
            fd[i] = memfd_create((std::string(name) + "-" + std::to_string(i)).c_str(), MFD_CLOEXEC);
            std::vector<std::uint8_t> all(lead[i], 0xEE);
            all.insert(all.end(), column[i].begin(), column[i].end());
            if (fd[i] < 0 || pwrite(fd[i], all.data(), all.size(), 0) != static_cast<ssize_t>(all.size())) fd[i] = -1;
        }
        const std::vector<std::uint8_t> one = known.expected;
        for (std::size_t k = 1; k < tiles; ++k) known.expected.insert(known.expected.end(), one.begin(), one.end());
        known.valid *= tiles;
        known.invalid *= tiles;
    }
    ~ThreeColumns() {
        for (int f : fd)
            if (f >= 0) close(f);
    }
    std::uint64_t size(int i) const { return lead[i] + column[i].size(); }
};

// Registers each column's whole memfd; the columns then start at lead[i].
RegisteredColumnBuffers register_three(Client& c, const ThreeColumns& t, RegisteredBuffer (&b)[3]) {
    for (int i = 0; i < 3; ++i) b[i] = c.register_buffer(t.fd[i], 0, t.size(i));
    RegisteredColumnBuffers cols;
    cols.kind = t.kind;
    cols.encoding = t.enc;
    cols.count = t.count;
    cols.message = &b[0];
    cols.message_offset = t.lead[0];
    cols.key = &b[1];
    cols.key_offset = t.lead[1];
    cols.signature = &b[2];
    cols.signature_offset = t.lead[2];
    return cols;
}

BatchResult copy_path(Client& c, const ThreeColumns& t, std::uint8_t* out) {
    return t.kind == RecordKind::ecdsa
               ? c.verify_ecdsa_columns(t.column[0].data(), t.column[1].data(), t.column[2].data(), t.count, out, t.enc)
               : c.verify_schnorr_columns(t.column[0].data(), t.column[1].data(), t.column[2].data(), t.count, out);
}

// Descriptors the daemon holds whose link names `name` (a memfd reads "/memfd:NAME (deleted)").
std::size_t daemon_fds_naming(pid_t pid, const std::string& name) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return 0;
    std::size_t n = 0;
    while (const dirent* e = readdir(d)) {
        char target[4096];
        const ssize_t len = readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
        if (len > 0 && std::string(target, static_cast<std::size_t>(len)).find(name) != std::string::npos) ++n;
    }
    closedir(d);
    return n;
}

// A verify_registered_column_set entry: the set at set_offset in the arena
// names the buffers (the entry's own offset fields stay 0).
shm::SubmissionEntry column_set_entry(std::uint64_t set_offset, std::uint64_t results, std::uint64_t n,
                                      RecordKind kind = RecordKind::ecdsa) {
    shm::SubmissionEntry e = registered_entry(0, set_offset, 0, 0, results, n, kind);
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_registered_column_set);
    return e;
}

}  // namespace

TEST_CASE("a registered buffer per column verifies byte for byte like the copy path", "[daemon][registered]") {
    // A 64K arena: 18,000 rows are several pieces, each naming its columns
    // in a set of its own.
    DaemonProcess d({"--arena-size", "64K"});
    auto c = Client::connect(options_for(d, "per-column"));
    struct Case {
        Table table;
        SigEncoding enc;
        std::size_t n, tiles;
    };
    const Case cases[] = {{Table::ecdsa, SigEncoding::opaque, 1500, 12},
                          {Table::multisig, SigEncoding::compact, 777, 1},
                          {Table::schnorr, SigEncoding::opaque, 1200, 15},
                          {Table::threshold, SigEncoding::opaque, 1, 1}};
    for (const Case& k : cases) {
        INFO(wire::to_string(k.table) << " " << wire::to_string(k.enc) << " n=" << k.n << " x" << k.tiles);
        const ThreeColumns t(k.table, k.n, k.enc, 600 + k.n, k.tiles);
        REQUIRE(t.fd[0] >= 0);
        REQUIRE(t.fd[1] >= 0);
        REQUIRE(t.fd[2] >= 0);
        RegisteredBuffer b[3];
        const RegisteredColumnBuffers cols = register_three(*c, t, b);
        std::vector<std::uint8_t> results(t.count, 0xAA), copied(t.count, 0xAA);
        const BatchResult r = c->verify_registered_columns(cols, results.data());
        REQUIRE(r.status == Status::ok);
        CHECK(r.local_rows == 0);
        CHECK(r.valid == t.known.valid);
        CHECK(r.invalid == t.known.invalid);
        CHECK(results == t.known.expected);
        const BatchResult rc = copy_path(*c, t, copied.data());
        REQUIRE(rc.status == Status::ok);
        CHECK(copied == results);
        // The daemon holds a descriptor of each buffer, and maps none.
        CHECK(daemon_fds_naming(d.pid(), "/memfd:column-") == 3);
    }
    // Two columns in one buffer, the third in another: as valid.
    const ThreeColumns t(Table::ecdsa, 300, SigEncoding::opaque, 71);
    RegisteredBuffer b[3];
    RegisteredColumnBuffers cols = register_three(*c, t, b);
    std::vector<std::uint8_t> image(t.size(0), 0);
    REQUIRE(pread(t.fd[0], image.data(), image.size(), 0) == static_cast<ssize_t>(image.size()));
    image.insert(image.end(), t.column[1].begin(), t.column[1].end());  // the key column after the messages
    const int mixed = memfd_create("mixed", MFD_CLOEXEC);
    REQUIRE(pwrite(mixed, image.data(), image.size(), 0) == static_cast<ssize_t>(image.size()));
    RegisteredBuffer m = c->register_buffer(mixed, 0, image.size());
    cols.message = &m;
    cols.key = &m;
    cols.key_offset = t.size(0);
    std::vector<std::uint8_t> results(t.count);
    REQUIRE(c->verify_registered_columns(cols, results.data()).status == Status::ok);
    CHECK(results == t.known.expected);
    // A column past the end of its own buffer, or a missing buffer, never leaves the client.
    RegisteredColumnBuffers past = cols;
    past.signature_offset = t.size(2) - 64 * t.count + 1;
    CHECK(c->verify_registered_columns(past, results.data()).status == Status::invalid_argument);
    past = cols;
    past.key_offset = std::numeric_limits<std::uint64_t>::max() - 10;
    CHECK(c->verify_registered_columns(past, results.data()).status == Status::invalid_argument);
    past = cols;
    past.signature = nullptr;
    CHECK(c->verify_registered_columns(past, results.data()).status == Status::invalid_argument);
    close(mixed);
}

TEST_CASE("hostile per-column registered entries get documented statuses, column by column",
          "[daemon][registered]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    REQUIRE(s.h->abi_minor >= shm::kAbiMinorRegisteredColumnSet);
    constexpr std::uint64_t n = 40;
    const ThreeColumns t(Table::ecdsa, n, SigEncoding::opaque, 88);
    std::uint64_t id[3];
    for (int i = 0; i < 3; ++i) {
        const shm::RegisterReply r = raw_register(s, t.fd[i], 0, t.size(i));
        REQUIRE(r.status == 0);
        id[i] = r.buffer_id;
    }
    const shm::RegisterReply gone = raw_register(s, t.fd[0], 0, t.size(0));
    REQUIRE(gone.status == 0);
    REQUIRE(raw_unregister(s, gone.buffer_id).status == 0);
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t widths[3] = {32, 33, 64};
    using D = shm::ColumnDetail;
    const D column_detail[3] = {D::message, D::key, D::signature};

    struct Case {
        shm::RegisteredColumnSet set;
        shm::SubmissionEntry e;
        Status expected;
        D detail;
    };
    std::vector<Case> cases;
    const shm::RegisteredColumnSet good{{id[0], t.lead[0]}, {id[1], t.lead[1]}, {id[2], t.lead[2]}, {0, 0}};
    // Every set at arena offset 0, the verdicts at 4096.
    auto add = [&](const shm::RegisteredColumnSet& set, Status st, D detail = D::none,
                   shm::SubmissionEntry e = column_set_entry(0, 4096, 40)) {
        e.user_tag = 5000 + cases.size();
        cases.push_back({set, e, st, detail});
    };
    // Column i of the case added last.
    auto column = [&](int i) -> shm::RegisteredColumnRef& {
        shm::RegisteredColumnSet& set = cases.back().set;
        return i == 0 ? set.message : i == 1 ? set.key : set.signature;
    };
    for (int i = 0; i < 3; ++i) {
        add(good, Status::not_found);
        column(i).buffer_id = 999;
        add(good, Status::not_found);
        column(i).buffer_id = gone.buffer_id;  // unregistered
        add(good, Status::bad_range, column_detail[i]);
        column(i).offset = t.size(i) - widths[i] * n + 1;  // one byte past the end
        add(good, Status::bad_range, column_detail[i]);
        column(i).offset = max - 10;  // overflowing
        add(good, Status::bad_range, column_detail[i]);
        column(i).offset = t.size(i);  // at the end
    }
    add(good, Status::bad_range, D::message, column_set_entry(0, 4096, t.size(0) / 32 + 1));  // more rows than held
    add(good, Status::bad_range, D::results, column_set_entry(0, 4096, max / 16));
    const std::uint64_t arena = s.h->arena_size;
    add(good, Status::bad_range, D::column_set, column_set_entry(arena - 32, 4096, n));  // set past the arena
    add(good, Status::bad_range, D::column_set, column_set_entry(max - 8, 4096, n));
    add(good, Status::bad_range, D::column_set, column_set_entry(4, 4096, n));  // misaligned
    add(good, Status::bad_entry);
    cases.back().set.reserved[1] = 1;
    auto words = column_set_entry(0, 4096, n);
    shm::set_registered_offsets(words, shm::RegisteredColumnOffsets{0, 0, id[0]});  // bytes 40..63 reserved here
    add(good, Status::bad_entry, D::none, words);
    auto collect = column_set_entry(0, 4096, n);
    collect.mode = static_cast<std::uint8_t>(wire::Mode::collect);
    add(good, Status::bad_entry, D::none, collect);
    auto tail = column_set_entry(0, 4096, n);
    tail.key_size = 6;
    add(good, Status::bad_entry, D::none, tail);
    add(good, Status::ok);
    const std::size_t refusals = cases.size() - 1;
    // One entry at a time: each reads its set from arena offset 0.
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const Case& k = cases[i];
        INFO("case " << i);
        std::memcpy(s.arena(), &k.set, sizeof k.set);
        std::memset(s.arena() + 4096, 0xAA, n);
        s.submit(k.e);
        shm::CompletionEntry c;
        REQUIRE(s.next_completion(c));
        REQUIRE(c.user_tag == k.e.user_tag);
        CHECK(c.status == static_cast<std::uint32_t>(k.expected));
        CHECK(c.detail == static_cast<std::uint32_t>(k.detail));
        if (k.expected != Status::ok) CHECK(c.valid + c.invalid == 0);
    }
    CHECK(shm::word(s.h->dropped).load() == refusals);  // every refusal counted
    CHECK(std::memcmp(s.arena() + 4096, t.known.expected.data(), n) == 0);  // the good one: known verdicts
    CHECK(kill(d.pid(), 0) == 0);
    auto c = Client::connect(options_for(d, "bystander"));
    CHECK(check_batch(*c, Table::schnorr, wire::Mode::results, SigEncoding::opaque, 50, 5));
}

TEST_CASE("one column's buffer truncated under a per-column batch gives buffer_lost, never a wrong verdict",
          "[daemon][registered]") {
    DaemonProcess d({"--cpu-threads", "1"});
    auto c = Client::connect(options_for(d, "truncator"));
    for (int cut_column = 0; cut_column < 3; ++cut_column) {
        INFO("column " << cut_column << " truncated");
        unsigned lost = 0;
        for (int attempt = 0; attempt < 4 && lost == 0; ++attempt) {
            ThreeColumns t(Table::ecdsa, 2000, SigEncoding::opaque, 31 + cut_column, 8);
            RegisteredBuffer b[3];
            const RegisteredColumnBuffers cols = register_three(*c, t, b);
            std::vector<std::uint8_t> results(t.count, 0xAA);
            std::thread cut([&] {
                std::this_thread::sleep_for(std::chrono::milliseconds(30 + 40 * attempt));
                (void)!ftruncate(t.fd[cut_column], 0);
            });
            const BatchResult r = c->verify_registered_columns(cols, results.data());
            cut.join();
            INFO("attempt " << attempt << ": " << shm::to_string(r.status));
            REQUIRE((r.status == Status::buffer_lost || (r.ok() && results == t.known.expected)));
            if (r.status == Status::buffer_lost) {
                ++lost;
                // What was verified is right; what was not stays 0 (fail closed).
                std::size_t wrong = 0, verified_valid = 0;
                for (std::size_t i = 0; i < t.count; ++i) {
                    if (results[i] > 1 || (results[i] == 1 && t.known.expected[i] != 1)) ++wrong;
                    verified_valid += results[i] == 1;
                }
                CHECK(wrong == 0);
                CHECK(verified_valid == r.valid);
            }
            REQUIRE(kill(d.pid(), 0) == 0);
        }
        CHECK(lost >= 1);
    }
    CHECK(check_batch(*c, Table::schnorr, wire::Mode::results, SigEncoding::opaque, 50, 5));
}

TEST_CASE("unregistering one of the three buffers during a batch: the batch keeps it, the next gets not_found",
          "[daemon][registered]") {
    DaemonProcess d({"--cpu-threads", "1"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    // 16,000 rows: long enough on one worker to unregister under.
    const ThreeColumns t(Table::ecdsa, 2000, SigEncoding::opaque, 55, 8, "held");
    std::uint64_t id[3];
    for (int i = 0; i < 3; ++i) {
        const shm::RegisterReply r = raw_register(s, t.fd[i], 0, t.size(i));
        REQUIRE(r.status == 0);
        id[i] = r.buffer_id;
    }
    const shm::RegisteredColumnSet set{{id[0], t.lead[0]}, {id[1], t.lead[1]}, {id[2], t.lead[2]}, {0, 0}};
    std::memcpy(s.arena(), &set, sizeof set);
    const std::uint64_t results = 4096;
    std::memset(s.arena() + results, 0xAA, t.count);
    auto e = column_set_entry(0, results, t.count);
    e.user_tag = 1;
    s.submit(e);
    // The set was copied when the entry was taken: scribbling over it changes nothing.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::memset(s.arena(), 0xFF, sizeof set);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(raw_unregister(s, id[1]).status == 0);  // the key column's buffer
    const std::size_t held = daemon_fds_naming(d.pid(), "/memfd:held-1");
    if (shm::word(s.h->cq_tail).load(std::memory_order_acquire) == s.cq_head)
        CHECK(held == 1);  // the batch was still running: it holds the buffer
    shm::CompletionEntry done;
    REQUIRE(s.next_completion(done, std::chrono::seconds(60)));
    INFO("the batch ran " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                          << " s after the unregistration");
    CHECK(done.user_tag == 1);
    CHECK(done.status == 0);
    CHECK(done.valid == t.known.valid);
    CHECK(std::memcmp(s.arena() + results, t.known.expected.data(), t.count) == 0);
    CHECK(daemon_fds_naming(d.pid(), "/memfd:held-1") == 0);  // closed with the batch
    CHECK(daemon_fds_naming(d.pid(), "/memfd:held-0") == 1);
    // Naming it again: not_found, counted.
    std::memcpy(s.arena(), &set, sizeof set);
    auto again = column_set_entry(0, results, 10);
    again.user_tag = 2;
    s.submit(again);
    shm::CompletionEntry c2;
    REQUIRE(s.next_completion(c2));
    CHECK(c2.status == static_cast<std::uint32_t>(Status::not_found));
    CHECK(shm::word(s.h->dropped).load() == 1u);
}

TEST_CASE("per-column registered buffers through the C ABI", "[daemon][registered]") {
    DaemonProcess d;
    const ThreeColumns t(Table::schnorr, 333, SigEncoding::opaque, 19);
    const int fds[3] = {t.fd[0], t.fd[1], t.fd[2]};
    const unsigned long long sizes[3] = {t.size(0), t.size(1), t.size(2)};
    const unsigned long long offsets[3] = {t.lead[0], t.lead[1], t.lead[2]};
    std::vector<std::uint8_t> results(t.count, 0xAA);
    CHECK(c_abi_column_buffers_check(d.dir().c_str(), fds, sizes, t.count, 1, 0, offsets, results.data()) == 0);
    CHECK(results == t.known.expected);
}
