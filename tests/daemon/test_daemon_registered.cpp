// SPDX-License-Identifier: MIT
// Registered buffers (ring ABI 1.4) end to end through a real sigverifyd:
// column tables in a memfd and in a real file in a temporary directory are
// registered and verified in place, compared verdict by verdict with verdicts
// known without any verifier of the product and with the copy path; hostile
// registrations and entries from a raw client (bad ids, offsets past the end,
// overflowing offsets, more than the limits) get their documented statuses
// and the daemon keeps serving; a client truncating or rewriting its buffer
// mid-batch cannot crash the daemon; the daemon never maps a registered
// buffer (its /proc/PID/maps), it holds one descriptor of it (/proc/PID/fd)
// until the buffer is unregistered or its client killed; the local fallback
// verifies from the client's own mapping; the C ABI compiled as C.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <atomic>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon/memory/submission_checks.hpp"
#include "daemon_fixture.hpp"
#include "raw_session.hpp"
#include "reference/columns.hpp"
#include "support/eventually.hpp"

using namespace sigverify;
using namespace sigverify::test;
using shm::Status;
using wire::RecordKind;
using wire::SigEncoding;
using wire::Table;

extern "C" int c_abi_registered_check(const char* dir, int fd, unsigned long long size, size_t n,
                                      unsigned long long message_offset, unsigned long long key_offset,
                                      unsigned long long signature_offset, unsigned char* results,
                                      unsigned long long counts[2]);

namespace {

// Column tables of known rows laid out in one buffer: a header of `lead`
// bytes (so columns are not page aligned), then message, key and signature.
struct BufferImage {
    KnownRows known;
    std::vector<std::uint8_t> bytes;
    RegisteredColumns cols;
};

// With tiles > 1 the n known rows are repeated (cheap many-row batches);
// known.expected, valid and invalid then describe all n * tiles rows.
BufferImage make_image(Table table, std::size_t n, SigEncoding enc, std::uint64_t seed, std::size_t lead = 100,
                       std::size_t tiles = 1) {
    BufferImage img;
    img.known = make_known_rows(table, n, enc, seed);
    const wire::RowSpan span = span_of(table, enc, img.known.rows, n);
    const reference::ColumnTable t = reference::rows_to_columns(span, reference::CorrelateLayout::none);
    img.bytes.assign(lead, 0x5A);
    img.cols.kind = t.kind;
    img.cols.encoding = enc;
    img.cols.count = n * tiles;
    auto append = [&](const std::vector<std::uint8_t>& column) {
        for (std::size_t i = 0; i < tiles; ++i) img.bytes.insert(img.bytes.end(), column.begin(), column.end());
    };
    img.cols.message_offset = img.bytes.size();
    append(t.message);
    img.cols.key_offset = img.bytes.size();
    append(t.key);
    img.cols.signature_offset = img.bytes.size();
    append(t.signature);
    const std::vector<std::uint8_t> one = img.known.expected;
    for (std::size_t i = 1; i < tiles; ++i) img.known.expected.insert(img.known.expected.end(), one.begin(), one.end());
    img.known.valid *= tiles;
    img.known.invalid *= tiles;
    return img;
}

// A memfd (or, with `path`, a new regular file) holding `prefix` bytes and then the image.
int write_buffer(const BufferImage& img, std::size_t prefix = 0, const std::string& path = {}) {
    const int fd = path.empty() ? memfd_create("sigverify-test", MFD_CLOEXEC)
                                : ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    std::vector<std::uint8_t> all(prefix, 0xEE);
    all.insert(all.end(), img.bytes.begin(), img.bytes.end());
    if (::pwrite(fd, all.data(), all.size(), 0) != static_cast<ssize_t>(all.size())) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// A client for a runtime directory with no daemon: the local fallback, one thread.
ClientOptions lone_options(const std::string& empty_dir) {
    ClientOptions o;
    o.runtime_dir = empty_dir;
    o.fallback = Fallback::local;
    o.local_threads = 1;
    return o;
}

// Lines of the daemon's /proc/PID/maps that name `path`.
std::size_t maps_lines_naming(pid_t pid, const std::string& path) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::size_t n = 0;
    for (std::string line; std::getline(maps, line);)
        if (line.find(path) != std::string::npos) ++n;
    return n;
}

// Descriptors the daemon holds open on `path` (/proc/PID/fd links).
std::size_t fds_naming(pid_t pid, const std::string& path) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return 0;
    std::size_t n = 0;
    while (const dirent* e = readdir(d)) {
        char target[4096];
        const ssize_t len = readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
        if (len > 0 && std::string(target, static_cast<std::size_t>(len)) == path) ++n;
    }
    closedir(d);
    return n;
}

}  // namespace

TEST_CASE("registered memfds and files verify in place like the copy path", "[daemon][registered]") {
    DaemonProcess d({"--arena-size", "64K"});
    auto c = Client::connect(options_for(d, "registered"));
    struct Case {
        Table table;
        SigEncoding enc;
        std::size_t n;
        bool file;
        std::size_t prefix;  // registered range starts this far into the file (not page aligned)
        std::size_t tiles;   // the n rows repeated: 16,800 rows are two pieces in a 64K arena
    };
    const Case cases[] = {{Table::ecdsa, SigEncoding::opaque, 1500, false, 0, 1},
                          {Table::multisig, SigEncoding::compact, 1, false, 4097, 1},
                          {Table::schnorr, SigEncoding::opaque, 1200, true, 123, 14},
                          {Table::ecdsa, SigEncoding::compact, 777, true, 0, 1}};
    const std::string dir = make_temp_dir();
    for (const Case& k : cases) {
        INFO(wire::to_string(k.table) << " " << wire::to_string(k.enc) << " n=" << k.n << " x" << k.tiles
                                      << (k.file ? " file" : " memfd"));
        const BufferImage img = make_image(k.table, k.n, k.enc, 1000 + k.n, 100, k.tiles);
        const std::size_t rows = img.cols.count;
        const std::string path = k.file ? dir + "/table-" + std::to_string(k.n) : std::string();
        const int fd = write_buffer(img, k.prefix, path);
        REQUIRE(fd >= 0);
        // A table file is registered read-only, as a node opens it.
        const int ro = k.file ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC) : fd;
        RegisteredBuffer b;
        REQUIRE(c->register_buffer(ro, k.prefix, img.bytes.size(), b) == Status::ok);
        CHECK(b.id() != 0);
        REQUIRE(b.size() == img.bytes.size());
        CHECK(std::memcmp(b.data(), img.bytes.data(), img.bytes.size()) == 0);
        std::vector<std::uint8_t> results(rows, 0xAA), copied(rows, 0xAA);
        const BatchResult r = c->verify_registered_columns(b, img.cols, results.data());
        REQUIRE(r.status == Status::ok);
        CHECK(r.local_rows == 0);
        CHECK(r.valid == img.known.valid);
        CHECK(r.invalid == img.known.invalid);
        CHECK(results == img.known.expected);
        // The copy path on the same bytes: byte-identical verdicts.
        const std::uint8_t* base = img.bytes.data();
        const std::size_t compared = std::min<std::size_t>(rows, 1500);
        copied.resize(compared);
        const BatchResult rc =
            img.cols.kind == RecordKind::ecdsa
                ? c->verify_ecdsa_columns(base + img.cols.message_offset, base + img.cols.key_offset,
                                          base + img.cols.signature_offset, compared, copied.data(), k.enc)
                : c->verify_schnorr_columns(base + img.cols.message_offset, base + img.cols.key_offset,
                                            base + img.cols.signature_offset, compared, copied.data());
        REQUIRE(rc.status == Status::ok);
        CHECK(std::equal(copied.begin(), copied.end(), results.begin()));
        if (k.file) {
            // Read with pread through a descriptor of its own, never mapped
            // (a mapping's reads would allocate a sparse file's holes).
            CHECK(maps_lines_naming(d.pid(), path) == 0);
            CHECK(fds_naming(d.pid(), path) == 1);
            b.reset();
            CHECK(eventually([&] { return fds_naming(d.pid(), path) == 0; }));
            ::close(ro);
            unlink(path.c_str());
        }
        ::close(fd);
    }
    remove_tree(dir);
    // Columns past the end of the registered range never leave the client.
    const BufferImage img = make_image(Table::ecdsa, 10, SigEncoding::opaque, 5);
    const int fd = write_buffer(img);
    RegisteredBuffer b = c->register_buffer(fd, 0, img.bytes.size());
    std::vector<std::uint8_t> results(10);
    RegisteredColumns past = img.cols;
    past.signature_offset = img.bytes.size() - 64 * 10 + 1;
    CHECK(c->verify_registered_columns(b, past, results.data()).status == Status::invalid_argument);
    past.signature_offset = std::numeric_limits<std::uint64_t>::max() - 10;
    CHECK(c->verify_registered_columns(b, past, results.data()).status == Status::invalid_argument);
    // Registrations the client can refuse itself.
    RegisteredBuffer bad;
    CHECK(c->register_buffer(fd, 0, 0, bad) == Status::invalid_argument);
    CHECK(c->register_buffer(fd, 1, img.bytes.size(), bad) == Status::invalid_argument);
    CHECK(c->register_buffer(fd, std::numeric_limits<std::uint64_t>::max(), 2, bad) == Status::invalid_argument);
    CHECK_FALSE(bad.registered());
    ::close(fd);
}

TEST_CASE("hostile registrations and registered entries get documented statuses", "[daemon][registered]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8", "--max-registered-buffers", "2",
                     "--max-registered-bytes", "1M"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    REQUIRE(s.h->abi_minor >= shm::kAbiMinorRegistered);
    const std::uint64_t n = 40;
    const BufferImage img = make_image(Table::ecdsa, n, SigEncoding::opaque, 77);
    const int fd = write_buffer(img);
    REQUIRE(fd >= 0);
    const std::uint64_t size = img.bytes.size();
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    auto status_of = [](const shm::RegisterReply& r) { return static_cast<Status>(r.status); };

    // Registrations the daemon refuses.
    CHECK(status_of(raw_register(s, -1, 0, size)) == Status::invalid_argument);      // no descriptor
    CHECK(status_of(raw_register(s, fd, 0, 0)) == Status::invalid_argument);         // empty
    CHECK(status_of(raw_register(s, fd, 1, size)) == Status::invalid_argument);      // past the end
    CHECK(status_of(raw_register(s, fd, max, 2)) == Status::invalid_argument);       // overflowing
    CHECK(status_of(raw_register(s, fd, 0, size, 1)) == Status::invalid_argument);   // reserved flags
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    CHECK(status_of(raw_register(s, pipe_fds[0], 0, 1)) == Status::invalid_argument);  // not a regular file
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    const int big = memfd_create("big", MFD_CLOEXEC);
    REQUIRE(ftruncate(big, 2 << 20) == 0);
    CHECK(status_of(raw_register(s, big, 0, (1 << 20) + 1)) == Status::too_large);  // over --max-registered-bytes
    // Two buffers are the limit; ids are distinct and never 0.
    const shm::RegisterReply one = raw_register(s, fd, 0, size);
    REQUIRE(one.magic == shm::kRegisterReplyMagic);
    REQUIRE(status_of(one) == Status::ok);
    const shm::RegisterReply two = raw_register(s, big, 0, 4096);
    REQUIRE(status_of(two) == Status::ok);
    CHECK(one.buffer_id != two.buffer_id);
    CHECK(one.buffer_id != 0);
    const shm::RegisterReply three = raw_register(s, fd, 0, size);
    CHECK(status_of(three) == Status::too_large);
    CHECK(std::string(three.error).find("--max-registered-buffers") != std::string::npos);
    CHECK(status_of(raw_unregister(s, 999)) == Status::not_found);
    CHECK(status_of(raw_unregister(s, two.buffer_id)) == Status::ok);
    CHECK(status_of(raw_unregister(s, two.buffer_id)) == Status::not_found);
    close(big);

    // Entries: every column bounded against the buffer, overflow-safe.
    const std::uint64_t id = one.buffer_id;
    const std::uint64_t m = img.cols.message_offset, k = img.cols.key_offset, g = img.cols.signature_offset;
    struct Case {
        shm::SubmissionEntry e;
        Status expected;
        shm::ColumnDetail detail;
    };
    std::vector<Case> cases;
    auto add = [&](shm::SubmissionEntry e, Status st, shm::ColumnDetail detail = shm::ColumnDetail::none) {
        e.user_tag = 3000 + cases.size();
        cases.push_back({e, st, detail});
    };
    using D = shm::ColumnDetail;
    add(registered_entry(999, m, k, g, 0, n), Status::not_found);
    add(registered_entry(two.buffer_id, m, k, g, 0, n), Status::not_found);  // unregistered
    add(registered_entry(id, size - 8, k, g, 0, n), Status::bad_range, D::message);
    add(registered_entry(id, m, max - 100, g, 0, n), Status::bad_range, D::key);
    add(registered_entry(id, m, k, size + 64, 0, n), Status::bad_range, D::signature);
    add(registered_entry(id, m, k, g + 1, 0, n), Status::bad_range, D::signature);  // one byte past the end
    add(registered_entry(id, m, k, g, 0, max / 16), Status::bad_range, D::results);
    add(registered_entry(id, m, k, g, 0, size / 128 + 1), Status::bad_range, D::row_count);
    // Three columns at one offset: each fits, but n rows of all three only by
    // overlapping (n * 129 > size). The library never sends this (issue
    // 39.5); the daemon refuses it all the same.
    add(registered_entry(id, 0, 0, 0, 0, size / 129 + 1), Status::bad_range, D::row_count);
    add(registered_entry(id, m, k, g, max - 1, n), Status::bad_range, D::results);
    auto collect = registered_entry(id, m, k, g, 0, n);
    collect.mode = static_cast<std::uint8_t>(wire::Mode::collect);
    add(collect, Status::bad_entry);
    auto tail = registered_entry(id, m, k, g, 0, n);
    tail.key_size = 3;
    add(tail, Status::bad_entry);
    add(registered_entry(id, m, k, g, 0, n, RecordKind::schnorr), Status::ok);  // schnorr reading ecdsa columns: in range
    add(registered_entry(id, m, k, g, 64, n), Status::ok);
    std::memset(s.arena() + 64, 0xAA, n);
    for (std::size_t next = 0; next < cases.size();) {
        const std::size_t round = std::min<std::size_t>(4, cases.size() - next);
        for (std::size_t i = 0; i < round; ++i) s.submit(cases[next + i].e);
        for (std::size_t i = 0; i < round; ++i) {
            shm::CompletionEntry c;
            REQUIRE(s.next_completion(c));
            REQUIRE(c.user_tag >= 3000);
            REQUIRE(c.user_tag < 3000 + cases.size());
            const Case& want = cases[c.user_tag - 3000];
            INFO("entry " << c.user_tag - 3000);
            CHECK(c.status == static_cast<std::uint32_t>(want.expected));
            CHECK(c.detail == static_cast<std::uint32_t>(want.detail));
            if (want.expected != Status::ok) CHECK(c.valid + c.invalid == 0);
        }
        next += round;
    }
    CHECK(shm::word(s.h->dropped).load() == cases.size() - 2);  // every refusal counted
    // Known verdicts, read straight from the registered memfd.
    CHECK(std::memcmp(s.arena() + 64, img.known.expected.data(), n) == 0);
    close(fd);
    CHECK(kill(d.pid(), 0) == 0);
    auto c = Client::connect(options_for(d, "bystander"));
    CHECK(check_batch(*c, Table::schnorr, wire::Mode::results, SigEncoding::opaque, 50, 5));
}

TEST_CASE("overlapping columns in one registered buffer: invalid_argument before anything is sent",
          "[daemon][registered][overlap]") {
    DaemonProcess d({"--cpu-threads", "1"});
    auto c = Client::connect(options_for(d, "overlap"));
    const std::size_t n = 40;
    const BufferImage img = make_image(Table::ecdsa, n, SigEncoding::opaque, 31);
    const int fd = write_buffer(img);
    REQUIRE(fd >= 0);
    // A client with no daemon at all and the local fallback: a refusal there
    // is the library's own (the local fallback would otherwise verify).
    const std::string empty = make_temp_dir();
    auto alone = Client::connect(lone_options(empty));
    for (Client* client : {c.get(), alone.get()}) {
        RegisteredBuffer b = client->register_buffer(fd, 0, img.bytes.size());
        std::vector<std::uint8_t> results(n + 1, 7);
        // Adjacent columns are fine.
        BatchResult r = client->verify_registered_columns(b, img.cols, results.data());
        CHECK(r.ok());
        CHECK(std::equal(results.begin(), results.begin() + n, img.known.expected.begin()));
        const RegisteredColumns& a = img.cols;
        RegisteredColumns key_into_message = a;
        key_into_message.key_offset = a.message_offset + n * 32 - 1;  // one byte shared
        RegisteredColumns signature_on_message = a;
        signature_on_message.signature_offset = a.message_offset;
        RegisteredColumns all_at_zero = a;  // 40 rows of all three fit the buffer; 41 only by overlapping
        all_at_zero.message_offset = all_at_zero.key_offset = all_at_zero.signature_offset = 0;
        RegisteredColumns all_at_zero_41 = all_at_zero;
        all_at_zero_41.count = n + 1;
        for (const RegisteredColumns* bad : {&key_into_message, &signature_on_message, &all_at_zero, &all_at_zero_41}) {
            std::fill(results.begin(), results.end(), 7);
            r = client->verify_registered_columns(b, *bad, results.data());
            INFO("status " << shm::to_string(r.status) << ", local rows " << r.local_rows);
            CHECK(r.status == Status::invalid_argument);
            CHECK(r.valid + r.invalid + r.local_rows == 0);
        }
        // A buffer per column where two name the same buffer: the same rule.
        RegisteredBuffer other = client->register_buffer(fd, 0, img.bytes.size());
        RegisteredColumnBuffers set;
        set.kind = a.kind;
        set.count = n;
        set.message = &b;
        set.message_offset = a.message_offset;
        set.key = &b;
        set.key_offset = a.message_offset + 31;
        set.signature = &other;
        set.signature_offset = a.signature_offset;
        r = client->verify_registered_columns(set, results.data());
        CHECK(r.status == Status::invalid_argument);
        set.key_offset = a.key_offset;  // apart again: fine
        r = client->verify_registered_columns(set, results.data());
        CHECK(r.ok());
        CHECK(std::equal(results.begin(), results.begin() + n, img.known.expected.begin()));
    }
    close(fd);
    remove_tree(empty);
}

TEST_CASE("a client truncating or rewriting its registered buffer mid-batch cannot hurt the daemon",
          "[daemon][registered]") {
    DaemonProcess d({"--cpu-threads", "1"});
    auto c = Client::connect(options_for(d, "truncator"));
    const std::size_t n = 5000;
    const BufferImage img = make_image(Table::ecdsa, n, SigEncoding::opaque, 9);
    {
        // Truncation: the batch ends with buffer_lost (or, had it finished
        // first, with the right verdicts); the registration is dropped.
        const int fd = write_buffer(img);
        RegisteredBuffer b = c->register_buffer(fd, 0, img.bytes.size());
        std::vector<std::uint8_t> results(n);
        std::thread cut([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            (void)!ftruncate(fd, 0);
        });
        const BatchResult r = c->verify_registered_columns(b, img.cols, results.data());
        cut.join();
        INFO("status " << shm::to_string(r.status));
        CHECK((r.status == Status::buffer_lost || (r.ok() && results == img.known.expected)));
        CHECK(kill(d.pid(), 0) == 0);
        // The file is empty now: the library finds it shorter than its
        // registered range and answers buffer_lost without registering it
        // again (issue 39.2; the daemon would refuse it as invalid_argument).
        CHECK(c->verify_registered_columns(b, img.cols, results.data()).status == Status::buffer_lost);
        close(fd);
    }
    {
        // Rewrite: a thread flips signature bytes while the batch runs. Every
        // verdict is that of the bytes the daemon read; nothing else happens.
        const int fd = write_buffer(img);
        RegisteredBuffer b = c->register_buffer(fd, 0, img.bytes.size());
        std::vector<std::uint8_t> results(n);
        std::atomic<bool> done{false};
        std::thread scribble([&] {
            std::uint8_t junk[4096];
            for (std::uint8_t i = 0; !done.load(); ++i) {
                std::memset(junk, i, sizeof junk);
                (void)!pwrite(fd, junk, sizeof junk, static_cast<off_t>(img.cols.signature_offset + (i % 64) * 4096));
            }
        });
        const BatchResult r = c->verify_registered_columns(b, img.cols, results.data());
        done = true;
        scribble.join();
        CHECK(r.status == Status::ok);
        CHECK(r.valid + r.invalid == n);
        // Restored, the same registration gives the known verdicts again.
        REQUIRE(pwrite(fd, img.bytes.data(), img.bytes.size(), 0) == static_cast<ssize_t>(img.bytes.size()));
        RegisteredColumns head = img.cols;
        head.count = 500;
        std::vector<std::uint8_t> again(head.count);
        REQUIRE(c->verify_registered_columns(b, head, again.data()).status == Status::ok);
        CHECK(std::equal(again.begin(), again.end(), img.known.expected.begin()));
        close(fd);
    }
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(check_batch(*c, Table::schnorr, wire::Mode::results, SigEncoding::opaque, 50, 5));
}

TEST_CASE("a killed client's registered buffers are released by the daemon", "[daemon][registered]") {
    DaemonProcess d;
    const std::string dir = make_temp_dir();
    const std::string path = dir + "/killed-client-table";
    const BufferImage img = make_image(Table::schnorr, 300, SigEncoding::opaque, 3);
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const pid_t child = run_in_child([&] {
        auto c = Client::connect(options_for(d, "doomed"));
        const int fd = write_buffer(img, 0, path);
        RegisteredBuffer b = c->register_buffer(fd, 0, img.bytes.size());
        std::vector<std::uint8_t> results(300);
        if (!c->verify_registered_columns(b, img.cols, results.data()).ok()) return false;
        (void)!write(ready[1], "r", 1);
        pause();  // killed here, buffer registered
        return true;
    });
    char byte = 0;
    REQUIRE(read(ready[0], &byte, 1) == 1);
    CHECK(fds_naming(d.pid(), path) == 1);
    CHECK(maps_lines_naming(d.pid(), path) == 0);
    kill(child, SIGKILL);
    wait_child(child);
    CHECK(eventually([&] { return fds_naming(d.pid(), path) == 0; }));
    close(ready[0]);
    close(ready[1]);
    unlink(path.c_str());
    remove_tree(dir);
    CHECK(kill(d.pid(), 0) == 0);
}

TEST_CASE("registered buffers: limits from the client API, local fallback, C ABI", "[daemon][registered]") {
    const BufferImage img = make_image(Table::ecdsa, 257, SigEncoding::compact, 21);
    const int fd = write_buffer(img, 10);
    REQUIRE(fd >= 0);
    {
        // No daemon: the fallback verifies copies of the file (pread).
        const std::string empty = make_temp_dir();
        auto c = Client::connect(lone_options(empty));
        RegisteredBuffer b;
        REQUIRE(c->register_buffer(fd, 10, img.bytes.size(), b) == Status::ok);
        CHECK(b.id() == 0);
        std::vector<std::uint8_t> results(257);
        const BatchResult r = c->verify_registered_columns(b, img.cols, results.data());
        CHECK(r.status == Status::ok);
        CHECK(r.local_rows == 257);
        CHECK(results == img.known.expected);
        remove_tree(empty);
    }
    DaemonProcess d({"--max-registered-buffers", "1"});
    {
        auto c = Client::connect(options_for(d, "limited"));
        RegisteredBuffer first = c->register_buffer(fd, 10, img.bytes.size());
        RegisteredBuffer second;
        CHECK(c->register_buffer(fd, 10, img.bytes.size(), second) == Status::too_large);
        CHECK(c->last_error().find("--max-registered-buffers") != std::string::npos);
        first.reset();  // unregistered: room for another
        CHECK(c->register_buffer(fd, 10, img.bytes.size(), second) == Status::ok);
        // Moving the handle moves the registration.
        RegisteredBuffer moved = std::move(second);
        CHECK_FALSE(second.registered());
        std::vector<std::uint8_t> results(257);
        CHECK(c->verify_registered_columns(moved, img.cols, results.data()).status == Status::ok);
        CHECK(results == img.known.expected);
    }
    std::vector<std::uint8_t> results(257);
    unsigned long long counts[2] = {0, 0};
    CHECK(c_abi_registered_check(d.dir().c_str(), fd, img.bytes.size() + 10, 257, img.cols.message_offset,
                                 img.cols.key_offset, img.cols.signature_offset, results.data(), counts) == 0);
    CHECK(results == img.known.expected);
    CHECK(counts[0] == img.known.valid);
    CHECK(counts[1] == img.known.invalid);
    close(fd);
}

TEST_CASE("a registered buffer is registered again with the next daemon after a restart", "[daemon][registered]") {
    DaemonProcess d;
    ClientOptions o = options_for(d, "survivor");
    auto c = Client::connect(o);
    const BufferImage img = make_image(Table::schnorr, 64, SigEncoding::opaque, 31);
    const int fd = write_buffer(img);
    RegisteredBuffer b = c->register_buffer(fd, 0, img.bytes.size());
    close(fd);  // the library keeps its own descriptor
    std::vector<std::uint8_t> results(64);
    REQUIRE(c->verify_registered_columns(b, img.cols, results.data()).ok());
    const std::uint64_t first_epoch = c->epoch();
    REQUIRE(d.stop() >= 0);
    d.start();
    // A client idle across the restart notices that the daemon ended its
    // session (the segment says closed) and reconnects: the copy path first
    // (it used to answer shutting_down forever), then the registered buffer,
    // which the next call registers again with the new daemon.
    const std::uint8_t* base = img.bytes.data();
    CHECK(eventually([&] {
        return c->verify_schnorr_columns(base + img.cols.message_offset, base + img.cols.key_offset,
                                         base + img.cols.signature_offset, 64, results.data())
            .ok();
    }));
    BatchResult r;
    CHECK(eventually([&] {
        r = c->verify_registered_columns(b, img.cols, results.data());
        return r.ok();
    }));
    CHECK(c->epoch() != first_epoch);
    CHECK(b.id() != 0);
    CHECK(r.local_rows == 0);
    CHECK(results == img.known.expected);
}
