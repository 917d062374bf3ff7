// SPDX-License-Identifier: MIT
// DeviceVerifier::self_test (kernels/gpu_verifier.hpp): the known answers
// through verify(), in both modes, against the host twin's own rechecks. Host
// code only: built beside gpu_verifier.cu in CUDA builds (the build without
// CUDA answers not_built itself).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/gpu_verifier.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/record_layout.hpp"
#include "kernels/selftest_vectors.hpp"
#include "kernels/verify32.hpp"  // the verdict values

namespace sigverify::gpu {

namespace k = sigverify::kernels;

namespace {

std::vector<std::uint8_t> from_hex(const char* hex) {
    std::vector<std::uint8_t> out;
    auto nib = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return 0;
    };
    for (std::size_t i = 0; hex[i] && hex[i + 1]; i += 2)
        out.push_back(static_cast<std::uint8_t>(nib(hex[i]) * 16 + nib(hex[i + 1])));
    return out;
}

}  // namespace

Status DeviceVerifier::self_test() {
    struct Set {
        wire::RecordKind kind;
        wire::SigEncoding enc;
        const k::KnownAnswer* begin;
        std::size_t n;
    };
    const Set sets[] = {
        {wire::RecordKind::ecdsa, wire::SigEncoding::compact, k::kSelfTestEcdsa, std::size(k::kSelfTestEcdsa)},
        {wire::RecordKind::ecdsa, wire::SigEncoding::opaque, k::kSelfTestEcdsa, std::size(k::kSelfTestEcdsa)},
        {wire::RecordKind::schnorr, wire::SigEncoding::opaque, k::kSelfTestSchnorr, std::size(k::kSelfTestSchnorr)},
    };
    constexpr std::size_t kTail = 5;
    for (const Set& s : sets) {
        const std::size_t rec = wire::record_size(s.kind), stride = rec + kTail;
        std::vector<std::uint8_t> rows(s.n * stride, 0xA5);
        for (std::size_t i = 0; i < s.n; ++i) {
            const auto bytes = from_hex(s.begin[i].record_hex);
            if (bytes.size() != rec) return Status{Code::self_test_failed, "malformed known-answer vector"};
            std::uint8_t* row = rows.data() + i * stride;
            std::memcpy(row, bytes.data(), rec);
            if (s.kind == wire::RecordKind::ecdsa && s.enc == wire::SigEncoding::opaque) {
                // compact (r BE || s BE) -> opaque (r LE || s LE)
                std::reverse(row + k::kEcdsaSig, row + k::kEcdsaSig + 32);
                std::reverse(row + k::kEcdsaSig + 32, row + k::kEcdsaSig + 64);
            }
        }
        const wire::RowSpan span{s.kind, kTail, s.enc, rows.data(), s.n};
        std::vector<std::uint8_t> results(s.n, 0xEE);
        Counts c;
        Status st = verify(span, wire::Mode::results, results.data(), &c);
        if (!st.ok()) return st;
        // the device must send the exact path what the host twin sends it
        // (the BIP-340 vectors whose R is infinity), no more: a row that came
        // back beyond those is a defect of the device code (e.g. a parity
        // step that did not run) whose verdicts the exact path would hide
        std::size_t want_rechecks = 0;
        for (std::size_t i = 0; i < s.n; ++i)
            want_rechecks += k::verify_record32(rows.data() + i * stride, s.kind, s.enc) == k::kVerdictRecheck;
        if (last_timing().rechecked != want_rechecks)
            return Status{Code::self_test_failed,
                          "GPU " + std::to_string(info().index) + ": " + std::to_string(last_timing().rechecked) +
                              " " + std::string(wire::to_string(s.kind)) + " known answers came back for the exact "
                              "path, the host twin sends " + std::to_string(want_rechecks)};
        std::size_t want_valid = 0;
        for (std::size_t i = 0; i < s.n; ++i) {
            want_valid += s.begin[i].valid;
            if (results[i] != s.begin[i].valid) {
                return Status{Code::self_test_failed,
                              std::string("GPU ") + std::to_string(info().index) + " gave verdict " +
                                  std::to_string(results[i]) + " on " + std::string(wire::to_string(s.kind)) + "/" +
                                  std::string(wire::to_string(s.enc)) + " known answer " + std::to_string(i) +
                                  " (expected " + std::to_string(s.begin[i].valid) + ")"};
            }
        }
        if (c.valid != want_valid || c.valid + c.invalid != s.n)
            return Status{Code::self_test_failed, "GPU self-test: wrong counts"};
        // collect mode: tails of valid rows zeroed, all other bytes untouched
        std::vector<std::uint8_t> collected = rows;
        const wire::RowSpan cspan{s.kind, kTail, s.enc, collected.data(), s.n};
        st = verify(cspan, wire::Mode::collect, nullptr, &c);
        if (!st.ok()) return st;
        for (std::size_t i = 0; i < s.n; ++i) {
            const std::uint8_t* a = rows.data() + i * stride;
            const std::uint8_t* b = collected.data() + i * stride;
            bool good = std::memcmp(a, b, rec) == 0;
            for (std::size_t t = 0; t < kTail; ++t) good &= b[rec + t] == (s.begin[i].valid ? 0 : a[rec + t]);
            if (!good)
                return Status{Code::self_test_failed, "GPU self-test: collect mode wrote the wrong bytes on row " +
                                                          std::to_string(i)};
        }
    }
    return Status::success();
}

}  // namespace sigverify::gpu
