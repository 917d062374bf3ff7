// SPDX-License-Identifier: MIT
// The CPU lanes as a backend: `sigverifyd --backend lanes`, and AUTO's choice
// on a CPU with AVX-512 IFMA and no usable GPU (daemon/serve/backend_setup.cpp).
//
// Eight signatures at once per core (kernels/lanes, docs/kernels.md "CPU
// lanes"), placed where a GPU would be: behind its own CheckedBackend (every
// invalid verdict that can decide a block confirmed by libsecp256k1, valid
// verdicts sampled, a backend that lies switched off and its rows re-run on
// the CPU fallback), in a StripedBackend of one, without a batch split (the
// lanes and libsecp256k1 would share the same cores) and without a deadline
// thread (CPU code that cannot hang on a driver). Like a GPU it reads the
// packed rows in place from the client's segment.
//
// The width is fixed at start-up: kernels::lanes::chosen_width()
// (SIGVERIFY_LANES=ifma8|ifma4|scalar forces one; scalar is the exact path, row by
// row, and runs anywhere). The name says it ("lanes-ifma8"), so the stats,
// the metrics' backend label and `sigverify info` name the width.
// ECDSA and BIP-340 rows both run in the lanes (daemon/backends/lanes_rows.cpp,
// verify_group8).
#pragma once

#include <atomic>
#include <string>

#include "daemon/backends/backend.hpp"
#include "kernels/lanes/lanes.hpp"

namespace sigverify::daemon {

class LanesBackend final : public Backend {
public:
    LanesBackend(unsigned workers, kernels::lanes::Width width);
    std::string name() const override;
    unsigned concurrency() const override { return workers_; }
    // ~4 ms of one core at the ifma8 rate: a 4,096-row batch still spreads
    // over 8 workers, and the per-chunk costs stay small.
    std::size_t preferred_chunk_rows() const override { return 512; }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override;
    bool verifies_in_place() const override { return true; }

    kernels::lanes::Width width() const { return width_; }
    // Lane verdicts "recheck" the exact path decided, since start.
    std::uint64_t rechecks() const { return rechecks_.load(std::memory_order_relaxed); }

private:
    unsigned workers_;
    kernels::lanes::Width width_;
    std::atomic<std::uint64_t> rechecks_{0};
};

// What the lanes backend runs, for the logs and `sigverify stats`: the width
// and what it means ("ifma8: 8 lanes of AVX-512 IFMA ...").
std::string lanes_device_text(kernels::lanes::Width width);

}  // namespace sigverify::daemon
