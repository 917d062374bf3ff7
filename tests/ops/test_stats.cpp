// SPDX-License-Identifier: MIT
// The stats socket against a real sigverifyd: exact counters after known
// batches, every command, hostile and slow readers, access control, the
// metrics textfile.
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "ops_helpers.hpp"
#include "reference/row_generator.hpp"
#include "sigverify/client.hpp"
#include "support/first_differences.hpp"

using namespace sigverify;
using namespace sigverify::test;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Expected {
    std::uint64_t valid = 0, invalid = 0, batches = 0, bytes = 0;
};

// Verifies rows of `table` whose verdicts are known (make_known_rows: a
// quarter invalid) through the daemon as one labelled batch; returns the
// known counts, which the daemon's must equal.
Expected run_known_batch(Client& c, wire::Table table, std::size_t count, std::uint64_t seed) {
    // Known verdicts (make_known_rows), not the reference verifier the daemon's CPU backend runs.
    test::KnownRows known = test::make_known_rows(table, count, wire::SigEncoding::opaque, seed);
    const wire::RowSpan span = test::span_of(table, wire::SigEncoding::opaque, known.rows, count);
    Expected e;
    e.valid = known.valid;
    e.invalid = known.invalid;
    REQUIRE(e.valid > 0);
    REQUIRE(e.invalid > 0);
    std::vector<std::uint8_t> results(count);
    const BatchResult r = c.run(span, wire::Mode::results, results.data(), static_cast<std::uint8_t>(table));
    REQUIRE(r.ok());
    REQUIRE(r.valid == e.valid);
    REQUIRE(r.invalid == e.invalid);
    REQUIRE(test::first_differences(results, known.expected) == "");
    e.batches = 1;
    e.bytes = span.size_bytes();
    return e;
}

std::string prom_line(const std::string& text, const std::string& prefix) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(prefix + " ", 0) == 0) return line.substr(prefix.size() + 1);
    return "<missing>";
}

}  // namespace

TEST_CASE("stats: counters are exact after known batches of every table", "[ops][stats]") {
    DaemonProcess d({"--backend", "cpu"});  // (auto picks the lanes on an IFMA CPU)
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = "stats-test";
    auto c = Client::connect(o);

    const std::vector<std::pair<wire::Table, std::string>> tables = {
        {wire::Table::ecdsa, "ecdsa"}, {wire::Table::multisig, "multisig"},
        {wire::Table::schnorr, "schnorr"}, {wire::Table::threshold, "threshold"}};
    std::map<std::string, Expected> expect;
    std::uint64_t batches = 0;
    for (const auto& [t, name] : tables) {
        Expected sum;
        for (int rep = 0; rep < 2; ++rep) {
            const Expected e = run_known_batch(*c, t, 150 + 50 * rep, 100 + static_cast<unsigned>(t) * 10 + rep);
            sum.valid += e.valid;
            sum.invalid += e.invalid;
            sum.batches += e.batches;
            sum.bytes += e.bytes;
            ++batches;
        }
        expect[name] = sum;
    }
    // A ping (no-op submission) is not a batch.
    REQUIRE(c->ping() == Status::ok);

    const json j = json::parse(stats_command(d.dir(), "stats json"));
    for (const auto& [name, e] : expect) {
        INFO(name);
        CHECK(j["tables"][name]["valid"].get<std::uint64_t>() == e.valid);
        CHECK(j["tables"][name]["invalid"].get<std::uint64_t>() == e.invalid);
        CHECK(j["tables"][name]["batches"].get<std::uint64_t>() == e.batches);
        CHECK(j["tables"][name]["batches_failed"].get<std::uint64_t>() == 0);
        CHECK(j["tables"][name]["bytes"].get<std::uint64_t>() == e.bytes);
    }
    CHECK(j["tables"]["unspecified"]["valid"].get<std::uint64_t>() == 0);
    CHECK(j["batch_latency_seconds"]["count"].get<std::uint64_t>() == batches);
    CHECK(j["batch_latency_seconds"]["sum"].get<double>() > 0);
    CHECK(j["gauges"]["clients_connected"].get<std::uint64_t>() == 1);
    CHECK(j["gauges"]["queue_depth"].get<std::uint64_t>() == 0);
    CHECK(j["counters"]["connections_accepted"].get<std::uint64_t>() == 1);
    CHECK(j["counters"]["protocol_errors"].get<std::uint64_t>() == 0);
    CHECK(j["counters"]["gpu_errors"].get<std::uint64_t>() == 0);
    CHECK(j["counters"]["chunks"].get<std::uint64_t>() >= batches);
    REQUIRE(j["clients"].size() == 1);
    CHECK(j["clients"][0]["name"] == "stats-test");
    CHECK(j["clients"][0]["pid"].get<std::int64_t>() == getpid());
    CHECK(j["clients"][0]["batches"].get<std::uint64_t>() == batches);
    CHECK(j["clients"][0]["in_flight"].get<std::uint64_t>() == 0);
    REQUIRE(j["backends"].size() >= 1);
    CHECK(j["backends"][0]["self_test"].get<std::string>().rfind("passed", 0) == 0);
    CHECK(j["backends"][0]["enabled"] == true);

    // The Prometheus text says the same.
    const std::string prom = stats_command(d.dir(), "stats");
    for (const auto& [name, e] : expect) {
        INFO(name);
        CHECK(prom_line(prom, "sigverifyd_rows_verified_total{table=\"" + name + "\",verdict=\"valid\"}") ==
              std::to_string(e.valid));
        CHECK(prom_line(prom, "sigverifyd_rows_verified_total{table=\"" + name + "\",verdict=\"invalid\"}") ==
              std::to_string(e.invalid));
        CHECK(prom_line(prom, "sigverifyd_batches_total{table=\"" + name + "\"}") == std::to_string(e.batches));
    }
    CHECK(prom_line(prom, "sigverifyd_batch_latency_seconds_count") == std::to_string(batches));
    CHECK(prom_line(prom, "sigverifyd_batch_latency_seconds_bucket{le=\"+Inf\"}") == std::to_string(batches));
    CHECK(prom_line(prom, "sigverifyd_clients_connected") == "1");
    CHECK(prom.find("# TYPE sigverifyd_batch_latency_seconds histogram") != std::string::npos);
    CHECK(prom.find("sigverifyd_build_info{version=\"") != std::string::npos);
    CHECK(prom_line(prom, "sigverifyd_backend_crosscheck_mismatches_total{backend=\"cpu\"}") == "0");
    CHECK(prom_line(prom, "sigverifyd_backend_errors_total{backend=\"cpu\"}") == "0");
    CHECK(prom_line(prom, "sigverifyd_backend_workers{backend=\"cpu\"}") != "<missing>");
    CHECK(prom_line(prom, "sigverifyd_backend_enabled{backend=\"cpu\",kind=\"cpu\"}") == "1");

    // Exposition format: every sample line is `name{labels} value`, every
    // family has HELP and TYPE before its samples, no series appears twice,
    // counters end in _total.
    {
        const std::regex sample_re(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*",?)*\})? (-?[0-9.e+-]+|\+Inf)$)");
        std::map<std::string, std::string> types;
        std::set<std::string> series;
        std::istringstream in(prom);
        std::string line;
        while (std::getline(in, line)) {
            INFO(line);
            if (line.rfind("# HELP ", 0) == 0) continue;
            if (line.rfind("# TYPE ", 0) == 0) {
                std::istringstream t(line.substr(7));
                std::string name, type;
                t >> name >> type;
                CHECK(types.count(name) == 0);
                types[name] = type;
                CHECK(name.rfind("sigverifyd_", 0) == 0);
                if (type == "counter") CHECK(name.size() > 6);
                if (type == "counter") CHECK(name.substr(name.size() - 6) == "_total");
                continue;
            }
            std::smatch m;
            REQUIRE(std::regex_match(line, m, sample_re));
            std::string family = m[1];
            for (const char* suffix : {"_bucket", "_sum", "_count"})
                if (!types.count(family) && family.size() > std::strlen(suffix) &&
                    family.substr(family.size() - std::strlen(suffix)) == suffix)
                    family = family.substr(0, family.size() - std::strlen(suffix));
            CHECK(types.count(family) == 1);
            CHECK(series.insert(m[1].str() + m[2].str()).second);
        }
        CHECK(types.size() >= 25);
    }

    // Histogram buckets are cumulative and non-decreasing.
    std::uint64_t last = 0;
    for (const auto& b : j["batch_latency_seconds"]["buckets"]) {
        CHECK(b["count"].get<std::uint64_t>() >= last);
        last = b["count"].get<std::uint64_t>();
    }
    CHECK(last == batches);

    // The client's session ends: the gauge follows.
    c.reset();
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    std::uint64_t connected = 1;
    while (connected != 0 && Clock::now() < deadline) {
        connected = json::parse(stats_command(d.dir(), "stats json"))["gauges"]["clients_connected"].get<std::uint64_t>();
        if (connected != 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(connected == 0);
}

TEST_CASE("stats: every command answers, unknown commands get one error line", "[ops][stats]") {
    DaemonProcess d;
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = "lister";
    auto c = Client::connect(o);
    REQUIRE(c->ping() == Status::ok);  // the session is past its handshake

    const std::string help = stats_command(d.dir(), "help");
    for (const char* cmd : {"help", "stats", "stats json", "clients", "backends", "version"})
        CHECK(help.find(std::string("  ") + cmd + " ") != std::string::npos);
    CHECK(stats_command(d.dir(), "version").rfind("sigverifyd ", 0) == 0);
    const std::string clients = stats_command(d.dir(), "clients");
    CHECK(clients.find("name=\"lister\"") != std::string::npos);
    CHECK(clients.find("pid=" + std::to_string(getpid()) + " ") != std::string::npos);
    CHECK(clients.find("in_flight=0") != std::string::npos);
    const std::string backends = stats_command(d.dir(), "backends");
    CHECK(backends.find("backend=cpu") != std::string::npos);
    CHECK(backends.find("self_test=\"passed") != std::string::npos);
    CHECK(stats_command(d.dir(), "  stats   json \r").front() == '{');  // blanks and CR are tolerated

    for (const char* bad : {"bogus", "stats xml", "", "STATS", "help me"}) {
        INFO(bad);
        const std::string a = stats_command(d.dir(), bad);
        CHECK(a.rfind("error: unknown command", 0) == 0);
        CHECK(std::count(a.begin(), a.end(), '\n') == 1);
    }
    // Binary junk without a newline, then EOF: still one error line.
    const std::string junk("\x01\xff\x7f\x00zz", 6);
    const std::string a = stats_raw(d.dir(), junk, /*newline=*/false);
    CHECK(a.rfind("error: unknown command", 0) == 0);
    // An oversized request is refused without reading it all.
    const std::string big = stats_raw(d.dir(), std::string(100000, 'x'), true);
    CHECK(big.rfind("error: request longer than", 0) == 0);
    // The daemon still serves.
    REQUIRE(c->ping() == Status::ok);
    CHECK(json::parse(stats_command(d.dir(), "stats json"))["counters"]["stats_dropped"].get<std::uint64_t>() >= 1);
}

TEST_CASE("stats: slow, idle and flooding readers never block batches", "[ops][stats]") {
    DaemonProcess d;
    // A reader that asks and never reads, one that connects and says nothing,
    // and more connections than the stats limit.
    const int slow = stats_connect(d.dir());
    REQUIRE(slow >= 0);
    const std::string cmd = "stats json\n";
    REQUIRE(send(slow, cmd.data(), cmd.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(cmd.size()));
    std::vector<int> idle;
    for (int i = 0; i < 24; ++i) {
        const int fd = stats_connect(d.dir());
        REQUIRE(fd >= 0);
        idle.push_back(fd);
    }

    ClientOptions o;
    o.runtime_dir = d.dir();
    auto c = Client::connect(o);
    reference::GenOptions g;
    g.table = wire::Table::schnorr;
    g.count = 200;
    g.threads = 1;
    std::vector<std::uint8_t> rows = reference::generate_rows(g);
    const wire::RowSpan span{wire::RecordKind::schnorr, reference::effective_key_size(g), wire::SigEncoding::opaque,
                             rows.data(), g.count};
    std::vector<std::uint8_t> results(g.count);
    const auto t0 = Clock::now();
    for (int i = 0; i < 20; ++i) {
        const BatchResult r = c->run(span, wire::Mode::results, results.data(),
                                     static_cast<std::uint8_t>(wire::Table::schnorr));
        REQUIRE(r.ok());
        REQUIRE(r.valid == g.count);
    }
    // 4000 rows on 2 shared cores take well under a second; a blocked daemon would stall.
    CHECK(Clock::now() - t0 < std::chrono::seconds(10));

    // Over the limit: the oldest connections that sent nothing made room for
    // the newer ones, each closed with one line saying why.
    bool saw_evicted = false;
    for (int fd : idle) {
        char buf[256];
        timeval tv{0, 200000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0 && std::string(buf, std::size_t(n)).rfind("error: closed: idle at the stats connection limit", 0) == 0)
            saw_evicted = true;
    }
    CHECK(saw_evicted);
    // Stats answer at once (an idle connection makes room); the idle ones left
    // are dropped after the request timeout (2 s).
    const std::string first = stats_command(d.dir(), "stats json");
    CHECK(first.front() == '{');
    const auto deadline = Clock::now() + std::chrono::seconds(8);
    std::string answer;
    while (Clock::now() < deadline) {
        answer = stats_command(d.dir(), "stats json");
        if (answer.front() == '{' && json::parse(answer)["counters"]["stats_dropped"].get<std::uint64_t>() >= 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    REQUIRE(answer.front() == '{');
    const json j = json::parse(answer);
    CHECK(j["tables"]["schnorr"]["valid"].get<std::uint64_t>() == 20 * g.count);
    CHECK(j["counters"]["stats_evicted"].get<std::uint64_t>() >= 24 + 1 - 16);
    CHECK(j["counters"]["stats_dropped"].get<std::uint64_t>() >= 1);
    // The slow reader's answer was written and the connection closed: it can
    // still read it all, the daemon never waited for it.
    std::string slow_answer;
    char buf[65536];
    ssize_t n;
    timeval tv{2, 0};
    setsockopt(slow, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while ((n = recv(slow, buf, sizeof buf, 0)) > 0) slow_answer.append(buf, std::size_t(n));
    CHECK(slow_answer.front() == '{');
    close(slow);
    for (int fd : idle) close(fd);
    REQUIRE(c->ping() == Status::ok);
}

TEST_CASE("stats: a peer without permission is refused", "[ops][stats]") {
    DaemonProcess d;
    // The socket file is owner-only: another user cannot even connect.
    struct stat st{};
    REQUIRE(stat((d.dir() + "/stats.sock").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    auto [rc1, out1] = stats_as_nobody(d.dir(), "stats");
    CHECK(rc1 == EACCES);
    // Opened up on the file system, the daemon's SO_PEERCRED check still refuses.
    REQUIRE(chmod(d.dir().c_str(), 0755) == 0);
    REQUIRE(chmod((d.dir() + "/stats.sock").c_str(), 0666) == 0);
    auto [rc2, out2] = stats_as_nobody(d.dir(), "stats");
    CHECK(rc2 == 0);
    CHECK(out2.rfind("error: permission denied: uid 65534", 0) == 0);
    CHECK(out2.find("sigverifyd_") == std::string::npos);
    const json j = json::parse(stats_command(d.dir(), "stats json"));
    CHECK(j["counters"]["stats_refused"].get<std::uint64_t>() == 1);
    CHECK(j["counters"]["stats_requests"].get<std::uint64_t>() == 0);  // this request is being answered
}

TEST_CASE("stats: a group member is allowed on stats.sock", "[ops][stats]") {
    // Any group the machine has will do (the child joins it): nogroup (65534)
    // where it exists, else this process's own primary group, so the test
    // never needs to skip.
    const group* g = getgrgid(65534);
    if (g == nullptr) g = getgrgid(getgid());
    REQUIRE(g != nullptr);
    const gid_t gid = g->gr_gid;
    const std::string name = g->gr_name;
    INFO("group " << name << " (" << gid << ")");
    DaemonProcess d({"--group", name});
    struct stat st{};
    REQUIRE(stat((d.dir() + "/stats.sock").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0660);
    CHECK(st.st_gid == gid);
    REQUIRE(chmod(d.dir().c_str(), 0755) == 0);
    auto [rc, out] = stats_as_nobody(d.dir(), "version", gid);
    CHECK(rc == 0);
    CHECK(out.rfind("sigverifyd ", 0) == 0);
}

TEST_CASE("stats: --metrics-textfile is written atomically and refreshed", "[ops][stats]") {
    const std::string dir = make_temp_dir();
    const std::string prom = dir + "/sigverifyd.prom";
    {
        DaemonProcess d({"--metrics-textfile", prom, "--metrics-interval", "1"});
        ClientOptions o;
        o.runtime_dir = d.dir();
        auto c = Client::connect(o);
        reference::GenOptions g;
        g.table = wire::Table::ecdsa;
        g.count = 64;
        g.threads = 1;
        std::vector<std::uint8_t> rows = reference::generate_rows(g);
        const wire::RowSpan span{wire::RecordKind::ecdsa, reference::effective_key_size(g), wire::SigEncoding::opaque,
                                 rows.data(), g.count};
        std::vector<std::uint8_t> results(g.count);
        REQUIRE(c->run(span, wire::Mode::results, results.data(), 0).valid == g.count);
        // The next write (at most one interval later) has the batch.
        const auto deadline = Clock::now() + std::chrono::seconds(5);
        std::string text;
        while (Clock::now() < deadline) {
            std::ifstream in(prom);
            text.assign(std::istreambuf_iterator<char>(in), {});
            if (prom_line(text, "sigverifyd_rows_verified_total{table=\"ecdsa\",verdict=\"valid\"}") == "64") break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        CHECK(prom_line(text, "sigverifyd_rows_verified_total{table=\"ecdsa\",verdict=\"valid\"}") == "64");
        CHECK(text.find("# TYPE sigverifyd_rows_verified_total counter") != std::string::npos);
        // Only the final file: no temporary left beside it.
        std::size_t files = 0;
        if (DIR* dd = opendir(dir.c_str())) {
            while (dirent* e = readdir(dd)) files += e->d_name[0] != '.';
            closedir(dd);
        }
        CHECK(files == 1);
    }
    remove_tree(dir);
}
