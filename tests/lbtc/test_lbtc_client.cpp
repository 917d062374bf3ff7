// SPDX-License-Identifier: MIT
// What libbitcoin-like nodes asked of libsigverify, through real daemons:
// results == nullptr on every verify call (counts only) in C++ and C, a
// cancel flag the caller already has (const std::atomic<bool>*), and the
// daemon info request (Client::info, sigverify_info) including a hostile one.
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <regex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "daemon_fixture.hpp"
#include "known_tables.hpp"
#include "ops_helpers.hpp"
#include "raw_session.hpp"
#include "shm_protocol/info_message.hpp"
#include "sigverify/sigverify.h"

using namespace sigverify;
using namespace sigverify::test;

namespace {

std::uint64_t prometheus_counter(const DaemonProcess& d, const std::string& name) {
    const std::string text = stats_command(d.dir(), "stats");
    const std::regex line("\n" + name + " ([0-9]+)");
    std::smatch m;
    return std::regex_search(text, m, line) ? std::stoull(m[1].str()) : ~std::uint64_t{0};
}

std::uint64_t ones(const std::vector<std::uint8_t>& v) { return std::count(v.begin(), v.end(), std::uint8_t{1}); }

ClientOptions options(const std::string& dir, Fallback f = Fallback::none) {
    ClientOptions o;
    o.runtime_dir = dir;
    o.fallback = f;
    return o;
}

}  // namespace

TEST_CASE("results == nullptr: counts only, on every verify call, daemon and local fallback", "[lbtc][client]") {
    const lbtc_call_site::Tables t = make_tables(3001, 5);
    const std::uint64_t ev = ones(t.ecdsa_expected), sv = ones(t.schnorr_expected);
    DaemonProcess d({"--cpu-threads", "2"});
    const std::string empty = make_temp_dir();
    for (const std::string& dir : {d.dir(), empty}) {
        INFO("runtime dir " << dir);
        auto c = Client::connect(options(dir, Fallback::local));
        CHECK(c->connected() == (dir == d.dir()));
        BatchResult r = c->verify_ecdsa_columns(t.ecdsa_digest.data(), t.ecdsa_key.data(), t.ecdsa_signature.data(),
                                                t.ecdsa_rows(), nullptr);
        CHECK(r.status == Status::ok);
        CHECK(r.valid == ev);
        CHECK(r.invalid == t.ecdsa_rows() - ev);
        r = c->verify_schnorr_columns(t.schnorr_digest.data(), t.schnorr_key.data(), t.schnorr_signature.data(),
                                      t.schnorr_rows(), nullptr);
        CHECK(r.status == Status::ok);
        CHECK(r.valid == sv);
        // Rows (packed from the same columns) through the row path.
        wire::ColumnSpan b;
        b.kind = wire::RecordKind::ecdsa;
        b.count = t.ecdsa_rows();
        b.message = t.ecdsa_digest.data();
        b.key = t.ecdsa_key.data();
        b.signature = t.ecdsa_signature.data();
        std::vector<std::uint8_t> rows = reference::columns_to_rows(b, reference::CorrelateLayout::none);
        r = c->verify_ecdsa(rows.data(), t.ecdsa_rows(), 0, nullptr);
        CHECK(r.status == Status::ok);
        CHECK(r.valid == ev);
        // Registered columns (a memfd holding the three ECDSA columns).
        const int fd = memfd_create("lbtc-null-results", MFD_CLOEXEC);
        REQUIRE(fd >= 0);
        const std::size_t n = t.ecdsa_rows();
        REQUIRE(::write(fd, t.ecdsa_digest.data(), n * 32) == ssize_t(n * 32));
        REQUIRE(::write(fd, t.ecdsa_key.data(), n * 33) == ssize_t(n * 33));
        REQUIRE(::write(fd, t.ecdsa_signature.data(), n * 64) == ssize_t(n * 64));
        RegisteredBuffer buf;
        REQUIRE(c->register_buffer(fd, 0, n * 129, buf) == Status::ok);
        RegisteredColumns rc;
        rc.count = n;
        rc.message_offset = 0;
        rc.key_offset = n * 32;
        rc.signature_offset = n * 65;
        r = c->verify_registered_columns(buf, rc, nullptr);
        CHECK(r.status == Status::ok);
        CHECK(r.valid == ev);
        buf.reset();
        ::close(fd);
        // The C ABI.
        sigverify_options co;
        sigverify_options_init(&co);
        co.runtime_dir = dir.c_str();
        co.fallback_local = 1;
        sigverify_client* cc = nullptr;
        REQUIRE(sigverify_connect(&co, &cc) == SIGVERIFY_OK);
        CHECK(sigverify_verify_schnorr_columns(cc, t.schnorr_digest.data(), t.schnorr_key.data(),
                                               t.schnorr_signature.data(), t.schnorr_rows(), nullptr) == SIGVERIFY_OK);
        std::uint64_t valid = 0, invalid = 0;
        sigverify_last_counts(&valid, &invalid);
        CHECK(valid == sv);
        CHECK(invalid == t.schnorr_rows() - sv);
        sigverify_close(cc);
    }
    remove_tree(empty);
}

TEST_CASE("a caller's cancel flag stops a call: every row verified or untouched", "[lbtc][client]") {
    const lbtc_call_site::Tables t = make_tables(8000, 9);
    DaemonProcess d({"--cpu-threads", "1"});
    auto c = Client::connect(options(d.dir()));
    Columns cols;
    cols.kind = wire::RecordKind::ecdsa;
    cols.count = t.ecdsa_rows();
    cols.message = t.ecdsa_digest.data();
    cols.key = t.ecdsa_key.data();
    cols.signature = t.ecdsa_signature.data();
    // Raised before the call: nothing is verified.
    std::atomic<bool> stop{true};
    std::vector<std::uint8_t> results(t.ecdsa_rows(), 0xAA);
    BatchResult r = c->run_columns(cols, wire::Mode::results, results.data(), shm::kTableUnspecified, &stop);
    CHECK(r.status == Status::cancelled);
    CHECK(r.valid + r.invalid == 0);
    CHECK(ones(results) == 0);
    // Raised while the call runs (one daemon worker: the call takes a while).
    stop = false;
    std::thread raiser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        stop = true;
    });
    const auto t0 = std::chrono::steady_clock::now();
    r = c->run_columns(cols, wire::Mode::results, results.data(), shm::kTableUnspecified, &stop);
    raiser.join();
    INFO("valid " << r.valid << " invalid " << r.invalid);
    CHECK(r.status == Status::cancelled);
    CHECK(r.valid + r.invalid < t.ecdsa_rows());
    // A 1 only for a row that is valid; the verified valid rows are exactly the 1 bytes.
    for (std::size_t i = 0; i < results.size(); ++i)
        if (results[i] == 1) REQUIRE(t.ecdsa_expected[i] == 1);
    CHECK(ones(results) == r.valid);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
    // A null flag never stops.
    r = c->run_columns(cols, wire::Mode::results, results.data(), shm::kTableUnspecified,
                       static_cast<const std::atomic<bool>*>(nullptr));
    CHECK(r.status == Status::ok);
    CHECK(results == t.ecdsa_expected);
}

TEST_CASE("Client::info and sigverify_info describe the daemon", "[lbtc][client][info]") {
    SECTION("a CPU daemon: no GPU") {
        DaemonProcess d({"--backend", "cpu", "--cpu-threads", "2", "--max-clients", "9", "--confirm", "strict"});
        auto c = Client::connect(options(d.dir()));
        DaemonInfo info;
        REQUIRE(c->info(info) == Status::ok);
        CHECK(info.backend == "cpu");
        CHECK(info.abi_major == shm::kAbiMajor);
        CHECK(info.abi_minor == shm::kAbiMinor);
        CHECK(info.protocol_version == shm::kProtocolVersion);
        CHECK(info.epoch == c->epoch());
        CHECK(info.cpu_workers == 2);
        CHECK(info.gpu_count == 0);
        CHECK(info.gpus_enabled == 0);
        CHECK(info.gpus.empty());
        CHECK(info.max_clients == 9);
        CHECK(info.confirm_rule == "strict");
        CHECK(!info.version.empty());
        // The session still verifies after the exchange.
        CHECK(c->ping() == Status::ok);
        sigverify_options co;
        sigverify_options_init(&co);
        co.runtime_dir = d.dir().c_str();
        sigverify_client* cc = nullptr;
        REQUIRE(sigverify_connect(&co, &cc) == SIGVERIFY_OK);
        sigverify_daemon_info ci;
        std::memset(&ci, 0, sizeof ci);
        CHECK(sigverify_info(cc, &ci) == SIGVERIFY_E_INVALID_ARGUMENT);  // struct_size not set
        ci.struct_size = sizeof ci;
        REQUIRE(sigverify_info(cc, &ci) == SIGVERIFY_OK);
        CHECK(std::string(ci.backend) == "cpu");
        CHECK(std::string(ci.confirm_rule) == "strict");
        CHECK(ci.gpus_enabled == 0);
        CHECK(ci.max_clients == 9);
        sigverify_close(cc);
    }
    SECTION("a host-kernel daemon: its GPUs enabled") {
        DaemonProcess d({"--backend", "host-kernel", "--cpu-threads", "1"});
        auto c = Client::connect(options(d.dir()));
        DaemonInfo info;
        REQUIRE(c->info(info) == Status::ok);
        CHECK(info.backend == "host-kernel");
        CHECK(info.confirm_rule == "groups");
        REQUIRE(info.gpu_count >= 1);
        CHECK(info.gpus_enabled == info.gpu_count);
        REQUIRE(!info.gpus.empty());
        CHECK(info.gpus[0].enabled);
        CHECK(info.gpus[0].self_test == "passed");
    }
    SECTION("no daemon") {
        const std::string empty = make_temp_dir();
        auto c = Client::connect(options(empty, Fallback::local));
        DaemonInfo info;
        CHECK(c->info(info) == Status::unreachable);
        remove_tree(empty);
    }
}

TEST_CASE("a malformed info request is refused, counted, and the session lives on", "[lbtc][info][hostile]") {
    DaemonProcess d({"--backend", "cpu", "--cpu-threads", "1"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    const std::uint64_t before = prometheus_counter(d, "sigverifyd_protocol_errors_total");
    auto exchange = [&](const void* req, std::size_t n, shm::InfoReply& reply) {
        s.send_raw(req, n);
        shm::ring_force(s.h->daemon_bell);
        pollfd p{s.sock, POLLIN, 0};
        if (::poll(&p, 1, 5000) != 1) return ssize_t(-1);
        return ::recv(s.sock, &reply, sizeof reply, 0);
    };
    shm::InfoReply reply{};
    const shm::InfoRequest bad_flags{shm::kInfoMagic, 1};
    REQUIRE(exchange(&bad_flags, sizeof bad_flags, reply) == ssize_t(sizeof reply));
    CHECK(reply.magic == shm::kInfoReplyMagic);
    CHECK(reply.status == std::uint32_t(Status::invalid_argument));
    std::uint8_t long_req[64] = {};
    std::memcpy(long_req, &shm::kInfoMagic, 4);
    REQUIRE(exchange(long_req, sizeof long_req, reply) == ssize_t(sizeof reply));
    CHECK(reply.status == std::uint32_t(Status::invalid_argument));
    CHECK(prometheus_counter(d, "sigverifyd_protocol_errors_total") == before + 2);
    const shm::InfoRequest good{shm::kInfoMagic, 0};
    REQUIRE(exchange(&good, sizeof good, reply) == ssize_t(sizeof reply));
    CHECK(reply.status == std::uint32_t(Status::ok));
    CHECK(std::string(shm::read_text(reply.backend)) == "cpu");
}
