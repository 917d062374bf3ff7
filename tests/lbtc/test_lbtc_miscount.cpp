// SPDX-License-Identifier: MIT
// The libbitcoin hook's fail-closed check (client/src/lbtc.cpp): an `ok`
// answer is taken only when its counts account for every row (valid +
// invalid == count) and, with results, its 1 bytes number `valid`. Here the
// answers of a real daemon, through a real client and real shared memory,
// are changed before the hook judges them, as a daemon or client bug (or
// hostile shared memory) would change them: counts that do not add up, that
// add up only modulo 2^64, a claim that every row is valid, a verdict byte
// turned either way. Whatever the answer says, the hook must verify again in
// process and return libsecp256k1's verdicts.
//
// How the answer is changed: this test compiles client/src/lbtc.cpp itself
// with SIGVERIFY_LBTC_FAULT_SEAM, which adds test_seam::answer_fault; the
// libraries never define the macro, so no product build has the seam (the
// linker takes the hook from this test's object, never the library's: a
// second copy would not link, and the seam's call count below is checked).
// Each case runs in a forked child (the hook's session is process-wide).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "daemon_fixture.hpp"
#include "known_tables.hpp"

namespace sigverify::lbtc::test_seam {
extern void (*answer_fault)(BatchResult& answer, std::uint8_t* results, std::size_t count);
}

using namespace sigverify;
using namespace sigverify::test;

namespace {

enum class Fault {
    one_more_valid,    // valid + 1: more rows than the batch has
    invalid_dropped,   // invalid = 0 (all-valid batches: valid - 1): fewer
    wraps_to_count,    // valid = 2^64 - 1, invalid = count + 1: the sum is count modulo 2^64
    claims_all_valid,  // valid = count, invalid = 0; the bytes say otherwise (results only)
    zero_byte_to_one,  // a 0 byte of the results turned 1, counts untouched (a false VALID)
    one_byte_to_zero,  // a 1 byte of the results turned 0, counts untouched (a false INVALID)
};

const char* name_of(Fault f) {
    switch (f) {
    case Fault::one_more_valid: return "one more valid";
    case Fault::invalid_dropped: return "invalid dropped";
    case Fault::wraps_to_count: return "wraps to count";
    case Fault::claims_all_valid: return "claims all valid";
    case Fault::zero_byte_to_one: return "zero byte to one";
    case Fault::one_byte_to_zero: return "one byte to zero";
    }
    return "?";
}

Fault g_fault = Fault::one_more_valid;
std::atomic<std::uint64_t> g_changed{0};  // answers the seam changed

// Changes an `ok` answer; an answer that is not ok is the hook's own case
// (verified here) and stays as it came.
void change_answer(BatchResult& r, std::uint8_t* results, std::size_t count) {
    if (!r.ok()) return;
    auto flip_first = [&](std::uint8_t from) {
        if (results == nullptr) return false;
        for (std::size_t i = 0; i < count; ++i)
            if (results[i] == from) {
                results[i] = std::uint8_t(1 - from);
                return true;
            }
        return false;
    };
    bool changed = true;
    switch (g_fault) {
    case Fault::one_more_valid: ++r.valid; break;
    case Fault::invalid_dropped:
        if (r.invalid != 0) r.invalid = 0;
        else --r.valid;
        break;
    case Fault::wraps_to_count:
        r.valid = std::numeric_limits<std::uint64_t>::max();
        r.invalid = count + 1;
        break;
    case Fault::claims_all_valid:
        changed = results != nullptr && r.invalid != 0;
        if (changed) {
            r.valid = count;
            r.invalid = 0;
        }
        break;
    case Fault::zero_byte_to_one: changed = flip_first(0); break;
    case Fault::one_byte_to_zero: changed = flip_first(1); break;
    }
    if (changed) g_changed.fetch_add(1, std::memory_order_relaxed);
}

// Mixed tables of 7 and 300 rows, and an all-valid one (the fast paths).
const std::vector<lbtc_call_site::Tables>& tables() {
    static const std::vector<lbtc_call_site::Tables> t = {make_tables(7, 11), make_tables(300, 12),
                                                          make_tables(300, 13, true)};
    return t;
}

// In a child against d: the call site over every table with `fault` on
// every answer; exit 0 iff every verdict and return value is exact and the
// seam changed at least one answer.
int run_with_fault(const DaemonProcess& d, Fault fault) {
    return wait_child(run_in_child([&] {
        setenv("SIGVERIFY_RUNTIME_DIR", d.dir().c_str(), 1);
        g_fault = fault;
        lbtc::test_seam::answer_fault = change_answer;
        for (const auto& t : tables())
            if (std::string why = lbtc_call_site::run(t, 0); !why.empty()) {
                std::fprintf(stderr, "%s: %s\n", name_of(fault), why.c_str());
                return false;
            }
        if (g_changed.load() == 0) {
            std::fprintf(stderr, "%s: the seam changed no answer (the library's hook was linked?)\n", name_of(fault));
            return false;
        }
        return true;
    }));
}

}  // namespace

TEST_CASE("the tables are what libsecp256k1 says", "[lbtc][miscount]") {
    for (const auto& t : tables()) CHECK(check_against_reference(t).empty());
}

TEST_CASE("the hook given an ok answer whose counts or bytes do not add up verifies again and gives the true verdicts",
          "[lbtc][miscount]") {
    DaemonProcess d({"--cpu-threads", "2"});
    for (Fault f : {Fault::one_more_valid, Fault::invalid_dropped, Fault::wraps_to_count, Fault::claims_all_valid,
                    Fault::zero_byte_to_one, Fault::one_byte_to_zero}) {
        INFO(name_of(f));
        CHECK(run_with_fault(d, f) == 0);
    }
}

TEST_CASE("with the seam set to change nothing the daemon's answers are taken as they are", "[lbtc][miscount]") {
    // The control: the same children with a fault that never applies to an
    // answer of these tables would fail on "changed no answer"; an honest
    // answer passes through the seam untouched and is exact.
    DaemonProcess d({"--cpu-threads", "2"});
    const int rc = wait_child(run_in_child([&] {
        setenv("SIGVERIFY_RUNTIME_DIR", d.dir().c_str(), 1);
        lbtc::test_seam::answer_fault = [](BatchResult&, std::uint8_t*, std::size_t) {
            g_changed.fetch_add(1, std::memory_order_relaxed);
        };
        for (const auto& t : tables())
            if (!lbtc_call_site::run(t, 0).empty()) return false;
        return g_changed.load() > 0;
    }));
    CHECK(rc == 0);
}
