// SPDX-License-Identifier: MIT
// Several GPUs as one backend: each chunk goes to one of them.
//
// Every GPU is its own CheckedBackend (its verdicts confirmed, and switched
// off alone when it lies or fails). A worker's chunks go to GPU
// worker % devices, or, when that one is switched off, to the next GPU still
// on; so work is striped over every GPU that passed its self-test, and a GPU
// that is switched off leaves its share to the others. When every GPU is off,
// chunks fail and the scheduler's CPU fallback verifies them.
//
// Every device accepts every worker index (their concurrency is the same), so
// re-routing a worker never makes two threads share a device's per-worker state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/backends/checked_backend.hpp"

namespace sigverify::daemon {

class StripedBackend final : public Backend {
public:
    // devices must be non-empty and share one concurrency().
    explicit StripedBackend(std::vector<std::unique_ptr<CheckedBackend>> devices);

    std::string name() const override;
    unsigned concurrency() const override { return devices_.front()->concurrency(); }
    std::size_t preferred_chunk_rows() const override;
    bool available() const override { return any_enabled(); }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override;
    bool confirms_by_group() const override { return true; }
    // In place only when every device is (a chunk may go to any of them).
    bool verifies_in_place() const override;
    bool map_client_memory(const void* base, std::size_t bytes) noexcept override;
    void unmap_client_memory(const void* base) noexcept override;
    void set_progress(std::atomic<std::uint64_t>* progress) override {
        for (auto& d : devices_) d->set_progress(progress);
    }
    // Every device learns them: a lane worker's chunk may go to any of them.
    void set_lane_workers(unsigned first) override {
        for (auto& d : devices_) d->set_lane_workers(first);
    }
    ChunkResult verify_grouped(unsigned worker, const wire::RowSpan& records, const ChunkGroups& groups,
                               std::uint8_t* verdicts) noexcept override;

    std::size_t devices() const { return devices_.size(); }
    const CheckedBackend& device(std::size_t i) const { return *devices_[i]; }
    CheckedBackend& device(std::size_t i) { return *devices_[i]; }
    // Whether any device is still switched on.
    bool any_enabled() const;

private:
    // The device for this worker's next chunk; null when all are off.
    CheckedBackend* route(unsigned worker) const;

    std::vector<std::unique_ptr<CheckedBackend>> devices_;
};

}  // namespace sigverify::daemon
