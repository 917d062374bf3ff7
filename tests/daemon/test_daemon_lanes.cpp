// SPDX-License-Identifier: MIT
// The CPU lanes backend through real daemons (issue 42): `--backend lanes`
// at the width this CPU runs and forced to ifma4 and scalar (SIGVERIFY_LANES), AUTO's
// choice on this machine and its fallback, every verdict against rows whose
// verdicts are known without the product (make_known_rows) or against
// libsecp256k1 row by row (hostile rows), with every lanes verdict re-checked
// by libsecp256k1 (--cross-check-sample 1): a lanes bug switches the lanes
// off and shows in the stats even where the client's verdicts stay right.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "kernels/lanes/lanes.hpp"
#include "ops/ops_helpers.hpp"
#include "reference/reference_verifier.hpp"
#include "support/first_differences.hpp"
#include "stand_in_probe.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

constexpr std::size_t kSig = offsetof(wire::EcdsaRecord, sig);
constexpr std::size_t kKey = offsetof(wire::EcdsaRecord, point);

// The daemons started here inherit SIGVERIFY_LANES from this process.
struct LanesEnv {
    explicit LanesEnv(const char* value) {
        if (value != nullptr) setenv("SIGVERIFY_LANES", value, 1);
        else unsetenv("SIGVERIFY_LANES");
    }
    ~LanesEnv() { unsetenv("SIGVERIFY_LANES"); }
};

std::vector<std::string> lanes_args() {
    return {"--backend", "lanes", "--cpu-threads", "2", "--cross-check-sample", "1", "--cross-check-invalid-sample",
            "1", "--gpu-min-rows", "1", "--arena-size", "8M"};
}

std::string expected_width() { return kernels::lanes::cpu_has_ifma8() ? "lanes-ifma8" : "lanes-scalar"; }

std::string backend_of(const DaemonProcess& d) {
    auto c = connect_to(d, "info");
    DaemonInfo info;
    REQUIRE(c->info(info) == Status::ok);
    return info.backend;
}

// Known rows of the four tables, both modes, ECDSA in both encodings.
void check_known(const DaemonProcess& d, const std::vector<std::size_t>& sizes) {
    auto c = connect_to(d, "known");
    for (wire::Table table : {wire::Table::ecdsa, wire::Table::multisig, wire::Table::schnorr, wire::Table::threshold}) {
        const bool ecdsa = wire::record_kind(table) == wire::RecordKind::ecdsa;
        for (wire::SigEncoding enc : {wire::SigEncoding::opaque, wire::SigEncoding::compact}) {
            if (!ecdsa && enc == wire::SigEncoding::compact) continue;
            for (std::size_t n : sizes)
                for (wire::Mode mode : {wire::Mode::results, wire::Mode::collect}) {
                    INFO(wire::to_string(table) << " n=" << n << " enc=" << int(enc) << " mode=" << int(mode));
                    CHECK(check_batch(*c, table, mode, enc, n, 4200 + n + 7 * int(table)));
                }
        }
    }
}

// The lanes device still on, nothing caught ("" when so, else its line).
std::string lanes_not_clean(const DaemonProcess& d, const std::string& name) {
    const std::string line = backend_line(d, name);
    if (line.find("kind=lanes") != std::string::npos && line.find("self_test=\"passed\"") != std::string::npos &&
        line.find("crosscheck_mismatches=0 ") != std::string::npos && line.find(" errors=0 ") != std::string::npos)
        return "";
    return "backend " + name + ": '" + line + "' in\n" + stats_command(d.dir(), "backends");
}

// ECDSA rows with hostile bytes (r or s = 0 or >= n, bad key prefixes,
// x >= p, flipped bits), each verdict against libsecp256k1's on the same row.
void check_hostile(const DaemonProcess& d, wire::SigEncoding enc) {
    const std::size_t n = 3001, tail = wire::canonical_tail_size(wire::Table::ecdsa),
                      stride = wire::stride(wire::RecordKind::ecdsa, tail);
    std::vector<std::uint8_t> rows = make_rows(wire::Table::ecdsa, n, enc, 77 + int(enc));
    REQUIRE(rows.size() == n * stride);
    for (std::size_t i = 0; i < n; ++i) {
        std::uint8_t* r = rows.data() + i * stride;
        switch (i % 13) {
            case 1: r[kSig] ^= 0x40; break;                   // r changed
            case 2: std::memset(r + kSig + 32, 0xFF, 32); break;  // s >= n
            case 3: std::memset(r + kSig, 0, 32); break;          // r = 0
            case 4: r[kKey] = 0x04; break;                    // not a compressed key
            case 5: std::memset(r + kKey + 1, 0xFF, 32); break;   // x >= p
            case 6: r[kKey + 1 + (i % 32)] ^= 1; break;       // another (maybe off-curve) x
            case 7: r[kKey] ^= 1; break;                      // the other y
            default: break;
        }
    }
    reference::RowVerifier ref;
    const wire::RowSpan span{wire::RecordKind::ecdsa, tail, enc, rows.data(), n};
    std::vector<std::uint8_t> want(n), got(n, 0xAA);
    for (std::size_t i = 0; i < n; ++i) want[i] = ref.verify_row(span, i) ? 1 : 0;
    auto c = connect_to(d, "hostile");
    const BatchResult res = send(*c, wire::Table::ecdsa, wire::Mode::results, enc, rows, n, got.data());
    REQUIRE(res.ok());
    CHECK(first_differences(got, want) == "");
}

}  // namespace

TEST_CASE("--backend lanes: known and hostile rows of every table as libsecp256k1 says, its width named everywhere",
          "[daemon][lanes]") {
    LanesEnv env(nullptr);
    DaemonProcess d(lanes_args());
    const std::string name = expected_width();
    CHECK(backend_of(d) == name);
    check_known(d, {1, 7, 40, 1500});
    for (wire::SigEncoding enc : {wire::SigEncoding::opaque, wire::SigEncoding::compact}) check_hostile(d, enc);
    CHECK(lanes_not_clean(d, name) == "");
    CHECK(metric(d, "sigverifyd_backend_enabled{backend=\"" + name + "\",kind=\"lanes\"}") == 1);
    CHECK(metric(d, "sigverifyd_backend_rows_confirmed_total{backend=\"" + name + "\"}") > 1000);
    CHECK(metric(d, "sigverifyd_cpu_fallback_chunks_total") == 0);
    const std::string backends = stats_command(d.dir(), "backends");
    CHECK(backends.find(kernels::lanes::cpu_has_ifma8() ? "AVX-512 IFMA" : "the exact path") != std::string::npos);
}

TEST_CASE("SIGVERIFY_LANES=scalar: --backend lanes runs the scalar width, verdicts unchanged", "[daemon][lanes][scalar]") {
    LanesEnv env("scalar");
    DaemonProcess d(lanes_args());
    CHECK(backend_of(d) == "lanes-scalar");
    check_known(d, {1, 9, 300});
    CHECK(lanes_not_clean(d, "lanes-scalar") == "");
    CHECK(d.log().find("the exact path, one row at a time") != std::string::npos);
}

TEST_CASE("SIGVERIFY_LANES=ifma4: --backend lanes runs four lanes, named so everywhere, verdicts unchanged",
          "[daemon][lanes][ifma4]") {
    LanesEnv env("ifma4");
    DaemonProcess d(lanes_args());
    const bool four = kernels::lanes::cpu_has_ifma4();
    if (!four) WARN("CPU without AVX-512 IFMA and VL: ifma4 falls back to scalar");
    const std::string name = four ? "lanes-ifma4" : "lanes-scalar";
    CHECK(backend_of(d) == name);
    check_known(d, {1, 7, 40, 1500});
    for (wire::SigEncoding enc : {wire::SigEncoding::opaque, wire::SigEncoding::compact}) check_hostile(d, enc);
    CHECK(lanes_not_clean(d, name) == "");
    CHECK(metric(d, "sigverifyd_backend_enabled{backend=\"" + name + "\",kind=\"lanes\"}") == 1);
    const std::string what = four ? "4 lanes of AVX-512 IFMA" : "the exact path";
    CHECK(stats_command(d.dir(), "backends").find(what) != std::string::npos);
    CHECK(d.log().find(what) != std::string::npos);
}

TEST_CASE("AUTO without a GPU: the lanes on an IFMA CPU once they pass their self-test; forced scalar, the CPU",
          "[daemon][lanes][auto]") {
    const std::vector<std::string> args = {"--backend", "auto", "--cpu-threads", "2", "--arena-size", "4M"};
    {
        LanesEnv env(nullptr);
        DaemonProcess d(args);
        const bool ifma = kernels::lanes::cpu_has_ifma8();
        INFO(d.log());
        if (backend_of(d) == "gpu") {
            WARN("a usable GPU here: AUTO took it, the lanes case does not apply");
            return;
        }
        CHECK(backend_of(d) == (ifma ? "lanes-ifma8" : "cpu"));
        CHECK(d.log().find(ifma ? "passed their self-test: using them" : "no AVX-512 IFMA") != std::string::npos);
        check_known(d, {40});
    }
    {
        LanesEnv env("scalar");
        DaemonProcess d(args);
        INFO(d.log());
        CHECK(backend_of(d) == "cpu");
        if (kernels::lanes::cpu_has_ifma8())
            CHECK(d.log().find("SIGVERIFY_LANES=scalar leaves the lanes only their scalar width") != std::string::npos);
        check_known(d, {40});
        CHECK(metric(d, "sigverifyd_backend_enabled{backend=\"cpu\",kind=\"cpu\"}") == 1);
    }
}
