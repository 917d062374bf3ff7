// SPDX-License-Identifier: MIT
// Old C callers (issue 28.3): sigverify_options of every historical
// struct_size (c_abi_versions_check.c, compiled as C) against a real daemon,
// placed so that a read past the caller's struct is caught (ASan on a heap
// block of exactly that size, or a PROT_NONE page right after it); each call
// runs in a child process, so a fault is a failed check, not a lost test.
// What the struct says must still be honoured: the daemon's log shows the
// client name, arena size and ring entries the struct asked for, and the
// collect gives the known verdicts. (strict_confirm, the one 0.2 field, has
// no effect a C caller could see today: the C calls never label a table
// multisig, so every C batch is confirmed under the strict rule anyway.)
#include <cstddef>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "reference/columns.hpp"
#include "sigverify/sigverify.h"

extern "C" {
std::size_t c_abi_options_size(int version);
int c_abi_connect_versioned(const char* dir, const char* name, int version, int guard_page, int strict,
                            const std::uint8_t* message, const std::uint8_t* key, const std::uint8_t* signature,
                            std::uint8_t* correlate, std::size_t n);
int c_abi_connect_too_short(const char* dir, std::size_t size, int guard_page);
}

using namespace sigverify;
using namespace sigverify::test;

namespace {


}  // namespace

TEST_CASE("the C ABI's options struct of each historical size: nothing past it is read, what it holds is honoured",
          "[daemon][c-abi][versions]") {
    // The sizes the headers had (the C file's copies of the old structs).
    REQUIRE(c_abi_options_size(1) == offsetof(sigverify_options, strict_confirm));
    REQUIRE(c_abi_options_size(2) == sizeof(sigverify_options));

    DaemonProcess d({"--backend", "host-kernel", "--gpus", "0", "--cpu-threads", "1", "--gpu-min-rows", "1",
                     "--gpu-split", "off", "--arena-size", "1M"});
    // Multisig rows as ECDSA columns with libbitcoin's correlate: a table the
    // groups rule applies to unless the caller asks for strict.
    const std::size_t n = 40;
    reference::GenOptions g;
    g.table = wire::Table::multisig;
    g.count = n;
    g.invalid_rate = 0.1;
    g.seed = 283;
    g.threads = 1;
    std::vector<std::uint8_t> rows = reference::generate_rows(g);
    const wire::RowSpan span = span_of(wire::Table::multisig, wire::SigEncoding::opaque, rows, n);
    std::vector<std::uint8_t> want(n);
    {
        reference::RowVerifier v;
        for (std::size_t i = 0; i < n; ++i) want[i] = v.verify_row(span, i) ? 1 : 0;
    }
    const reference::ColumnTable pristine =
        reference::rows_to_columns(span, reference::CorrelateLayout::libbitcoin, wire::Table::multisig);
    REQUIRE(pristine.tail_size == 6);

    struct Case {
        int version;
        int strict;
    };
    for (const Case k : {Case{1, 1}, Case{2, 0}, Case{2, 1}}) {
        for (int guard_page : {0, 1}) {
            const std::string name = "c-abi-0." + std::to_string(k.version) + "-strict" + std::to_string(k.strict) +
                                     (guard_page ? "-guard" : "-heap");
            INFO("header 0." << k.version << " (" << c_abi_options_size(k.version) << " bytes), strict_confirm "
                             << k.strict << (guard_page ? ", before a PROT_NONE page" : ", a heap block of its size"));
            reference::ColumnTable cols = pristine;
            const pid_t child = run_in_child([&] {
                const int line = c_abi_connect_versioned(d.dir().c_str(), name.c_str(), k.version, guard_page, k.strict,
                                                         cols.message.data(), cols.key.data(), cols.signature.data(),
                                                         cols.correlate.data(), n);
                if (line != 0) std::fprintf(stderr, "c_abi_versions_check.c:%d\n", line);
                if (line != 0) return false;
                // The collected correlate: valid rows zeroed, invalid ones untouched.
                for (std::size_t i = 0; i < n; ++i)
                    for (std::size_t b = 0; b < 6; ++b)
                        if (cols.correlate[i * 6 + b] != (want[i] ? 0 : pristine.correlate[i * 6 + b])) return false;
                return true;
            });
            CHECK(wait_child(child) == 0);
            // The 0.1 fields as the struct gave them: name, arena, ring entries.
            const std::string log = d.log();
            const std::size_t at = log.find("'" + name + "' connected (");
            REQUIRE(at != std::string::npos);
            const std::string line = log.substr(at, log.find('\n', at) - at);
            INFO(line);
            CHECK(line.find("arena 262144 bytes, 8 ring entries") != std::string::npos);
        }
    }
    // Shorter than any header's struct: refused, reading only struct_size.
    for (std::size_t size : {std::size_t(8), std::size_t(48)}) {
        for (int guard_page : {0, 1}) {
            INFO(size << " bytes" << (guard_page ? ", before a PROT_NONE page" : ", a heap block of its size"));
            const pid_t child = run_in_child([&] { return c_abi_connect_too_short(d.dir().c_str(), size, guard_page) == 0; });
            CHECK(wait_child(child) == 0);
        }
    }
}
