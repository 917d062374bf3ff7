// SPDX-License-Identifier: MIT
// A registered buffer that shrinks never kills its client (issue 39, item 2).
// Each column of an ECDSA table in a memfd of its own; one of them is cut
// (mid-row) between calls and during calls, with Fallback::local (with a
// daemon and without one) and Fallback::none. Every call must return: a
// status that is ok with exact verdicts, or buffer_lost (never ok) with no
// row answered other than libsecp256k1's verdict; the local fallback answers
// the rows before the cut exactly. Before the fix the local fallback read
// the client's mapping past the file's new end: SIGBUS (the child dies with
// signal 7). Every case runs in a forked child so a crash is seen as one.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "daemon_fixture.hpp"
#include "lbtc/known_tables.hpp"
#include "sigverify/client.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

constexpr std::size_t kRows = 1500;
constexpr std::size_t kCut = 700;  // rows [0, kCut) stay whole; the file ends mid-row kCut
constexpr std::size_t kWidth[3] = {32, 33, 64};

struct Columns3 {
    int fd[3] = {-1, -1, -1};
    RegisteredBuffer buf[3];
};

int memfd_with(const std::vector<std::uint8_t>& bytes) {
    const int fd = memfd_create("sigverify-shrink-test", MFD_CLOEXEC);
    if (fd < 0 || write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) return -1;
    return fd;
}

// Registers the three columns; false when any registration fails.
bool register_columns(Client& c, const lbtc_call_site::Tables& t, Columns3& out) {
    const std::vector<std::uint8_t>* cols[3] = {&t.ecdsa_digest, &t.ecdsa_key, &t.ecdsa_signature};
    for (int i = 0; i < 3; ++i) {
        out.fd[i] = memfd_with(*cols[i]);
        if (out.fd[i] < 0 || c.register_buffer(out.fd[i], 0, cols[i]->size(), out.buf[i]) != Status::ok) return false;
    }
    return true;
}

void cut(const Columns3& cols, int column) {
    (void)ftruncate(cols.fd[column], static_cast<off_t>(kCut * kWidth[column] + kWidth[column] / 2));
}

BatchResult verify(Client& c, const Columns3& cols, std::vector<std::uint8_t>& got) {
    RegisteredColumnBuffers b;
    b.kind = wire::RecordKind::ecdsa;
    b.count = kRows;
    b.message = &cols.buf[0];
    b.key = &cols.buf[1];
    b.signature = &cols.buf[2];
    got.assign(kRows, 7);
    return c.verify_registered_columns(b, got.data());
}

// What every answer must be. After the cut: never ok, buffer_lost, and no
// row other than its true verdict or 0 (none answered); `prefix`: rows
// before the cut are exact (the local fallback verified them).
bool answer_right(const char* what, const BatchResult& r, const std::vector<std::uint8_t>& got,
                  const std::vector<std::uint8_t>& expected, bool after_cut, bool prefix) {
    bool ok = true;
    if (!after_cut) {
        ok = r.ok() && got == expected;
    } else {
        ok = !r.ok() && r.status == Status::buffer_lost;
        for (std::size_t i = 0; i < kRows && ok; ++i)
            ok = got[i] == 0 || got[i] == expected[i];
        for (std::size_t i = 0; i < kCut && ok && prefix; ++i) ok = got[i] == expected[i];
    }
    if (!ok)
        std::fprintf(stderr, "%s: status %s, valid %llu invalid %llu local %llu (after cut %d)\n", what,
                     std::string(shm::to_string(r.status)).c_str(), (unsigned long long)r.valid,
                     (unsigned long long)r.invalid, (unsigned long long)r.local_rows, int(after_cut));
    return ok;
}

ClientOptions options(const std::string& dir, Fallback f) {
    ClientOptions o;
    o.runtime_dir = dir;
    o.fallback = f;
    o.local_threads = 1;
    o.batch_timeout = std::chrono::milliseconds(10000);
    return o;
}

// A client for dir with the three columns registered; null when either fails.
std::unique_ptr<Client> client_with(const std::string& dir, Fallback f, const lbtc_call_site::Tables& t,
                                    Columns3& cols) {
    Status st = Status::ok;
    std::string why;
    auto c = Client::connect(options(dir, f), st, why);
    if (!c || !register_columns(*c, t, cols)) return nullptr;
    return c;
}

// Between calls: verify, cut `column`, then three calls (the first may meet
// the daemon's lost registration, the later ones find the file short before
// registering again, and with Fallback::local verify here).
bool between_calls(const std::string& dir, Fallback f, int column, const lbtc_call_site::Tables& t) {
    // The client is declared first, so it is destroyed after the buffers it
    // registered (a RegisteredBuffer must not outlive its Client: client.hpp).
    std::unique_ptr<Client> c;
    Columns3 cols;
    c = client_with(dir, f, t, cols);
    if (!c) return false;
    std::vector<std::uint8_t> got;
    if (!answer_right("before", verify(*c, cols, got), got, t.ecdsa_expected, false, false)) return false;
    cut(cols, column);
    for (int call = 0; call < 3; ++call) {
        const BatchResult r = verify(*c, cols, got);
        // Here the prefix is exact only where the local fallback answered.
        if (!answer_right("after", r, got, t.ecdsa_expected, true, f == Fallback::local && r.local_rows > 0))
            return false;
    }
    return true;
}

// During calls: a thread verifies in a loop while the column is cut once.
bool during_calls(const std::string& dir, Fallback f, int column, const lbtc_call_site::Tables& t) {
    // The client is declared first, so it is destroyed after the buffers it
    // registered (a RegisteredBuffer must not outlive its Client: client.hpp).
    std::unique_ptr<Client> c;
    Columns3 cols;
    c = client_with(dir, f, t, cols);
    if (!c) return false;
    std::atomic<bool> is_cut{false}, failed{false};
    std::atomic<int> calls{0};
    std::thread caller([&] {
        int lost = 0;
        while (lost < 3 && !failed) {
            std::vector<std::uint8_t> got;
            const bool cut_before = is_cut.load();
            const BatchResult r = verify(*c, cols, got);
            ++calls;
            if (r.ok() && !cut_before) {
                if (got != t.ecdsa_expected) failed = true;
                continue;
            }
            // Cut during or before this call: either all of it before the cut, or lost.
            if (r.ok() ? got != t.ecdsa_expected : !answer_right("during", r, got, t.ecdsa_expected, true, false))
                failed = true;
            if (!r.ok()) ++lost;
        }
    });
    while (calls.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    is_cut = true;
    cut(cols, column);
    caller.join();
    std::fprintf(stderr, "during: %d calls\n", calls.load());
    return !failed;
}

template <class Case>
void in_child(const char* what, Case&& fn) {
    const int rc = wait_child(run_in_child(fn));
    INFO(what << ": child exit " << rc << (rc == 128 + SIGBUS ? " (SIGBUS: read past the file's end)" : ""));
    CHECK(rc == 0);
}

}  // namespace

TEST_CASE("a column memfd cut between and during calls never kills the client", "[shrink]") {
    const lbtc_call_site::Tables t = make_tables(kRows, 39, false);
    REQUIRE(check_against_reference(t).empty());
    DaemonProcess d({"--cpu-threads", "1"});
    const std::string empty = make_temp_dir();  // no daemon there
    for (int column = 0; column < 3; ++column) {
        INFO("column " << column);
        in_child("local, daemon, between", [&] { return between_calls(d.dir(), Fallback::local, column, t); });
        in_child("none, daemon, between", [&] { return between_calls(d.dir(), Fallback::none, column, t); });
        in_child("local, no daemon, between", [&] { return between_calls(empty, Fallback::local, column, t); });
        in_child("local, daemon, during", [&] { return during_calls(d.dir(), Fallback::local, column, t); });
        in_child("none, daemon, during", [&] { return during_calls(d.dir(), Fallback::none, column, t); });
        in_child("local, no daemon, during", [&] { return during_calls(empty, Fallback::local, column, t); });
    }
    remove_tree(empty);
}
