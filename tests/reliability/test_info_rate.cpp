// SPDX-License-Identifier: MIT
// Info requests are rate-limited per session (daemon/serve/info_rate.hpp): a
// session asking in a loop is answered busy beyond its bucket, the daemon
// counts each refusal (info_requests_refused), and the other sessions' info
// and verification go on as before. Before the limit every request was
// answered, as fast as the flooder could ask.
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "hostile_client.hpp"
#include "shm_protocol/info_message.hpp"
#include "sigverify/client.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

constexpr int kBurst = 16;  // the bucket the daemon documents (docs/protocol.md "Info request")

// One info round trip on a raw session: the reply's status, or -1 when none came.
long raw_info(RawSession& s) {
    const shm::InfoRequest req{shm::kInfoMagic, 0};
    if (!shm::send_packet(s.sock, &req, sizeof req)) return -1;
    shm::ring_force(s.h->daemon_bell);
    pollfd p{s.sock, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return -1;
    shm::InfoReply reply{};
    if (::recv(s.sock, &reply, sizeof reply, 0) != ssize_t(sizeof reply) || reply.magic != shm::kInfoReplyMagic)
        return -1;
    return reply.status;
}

std::unique_ptr<Client> client_of(const DaemonProcess& d) {
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = "honest";
    return Client::connect(o);
}

}  // namespace

TEST_CASE("a session flooding info requests is refused beyond its bucket; the others are unaffected",
          "[reliability][hostile]") {
    DaemonProcess d({"--cpu-threads", "1"});
    auto honest = client_of(d);
    RawSession flood;
    REQUIRE(flood.handshake(d.socket_path()));
    REQUIRE(counter(d, "info_requests_refused") == 0);

    int ok = 0, busy = 0, other = 0, ok_before_busy = 0;
    for (int i = 0; i < 3 * kBurst; ++i) {
        const long st = raw_info(flood);
        if (st == long(Status::ok)) {
            ++ok;
            if (busy == 0) ++ok_before_busy;
        } else if (st == long(Status::busy)) {
            ++busy;
        } else {
            ++other;
        }
    }
    INFO(ok << " answered, " << busy << " busy, " << other << " other");
    CHECK(other == 0);                    // every request answered: ok or busy
    CHECK(ok_before_busy >= kBurst);      // the burst is answered in full
    CHECK(busy >= 1);                     // and beyond it, refusals
    CHECK(counter(d, "info_requests_refused") == std::uint64_t(busy));

    // Another session: its own bucket, its info and its verdicts as ever.
    DaemonInfo info;
    CHECK(honest->info(info) == Status::ok);
    CHECK(info.cpu_workers == 1);
    CHECK(check_batch(*honest, wire::Table::ecdsa, wire::Mode::results, wire::SigEncoding::opaque, 64, 7));
    // The flooder's session goes on: its verification, and info once a token is due.
    CHECK(flood.verify_one(3));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(raw_info(flood) == long(Status::ok));
}

TEST_CASE("libsigverify maps an info refusal to busy, never a verdict; the session goes on", "[reliability][hostile]") {
    DaemonProcess d({"--cpu-threads", "1"});
    auto c = client_of(d);
    int ok = 0, busy = 0, other = 0;
    for (int i = 0; i < 3 * kBurst; ++i) {
        DaemonInfo info;
        const Status st = c->info(info);
        if (st == Status::ok) ++ok;
        else if (st == Status::busy) ++busy;
        else ++other;
    }
    INFO(ok << " answered, " << busy << " busy, " << other << " other; last error: " << c->last_error());
    CHECK(other == 0);
    CHECK(ok >= kBurst);
    CHECK(busy >= 1);
    CHECK(c->last_error().find("rate limit") != std::string::npos);
    CHECK(c->connected());  // a refusal is not a broken session
    CHECK(check_batch(*c, wire::Table::ecdsa, wire::Mode::results, wire::SigEncoding::opaque, 64, 8));
    CHECK(counter(d, "info_requests_refused") == std::uint64_t(busy));
    // `sigverify info` (a session of its own) still answers.
    DaemonInfo info;
    CHECK(client_of(d)->info(info) == Status::ok);
}
