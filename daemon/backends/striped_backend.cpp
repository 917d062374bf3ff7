// SPDX-License-Identifier: MIT
#include "daemon/backends/striped_backend.hpp"

#include <algorithm>
#include <stdexcept>

namespace sigverify::daemon {

StripedBackend::StripedBackend(std::vector<std::unique_ptr<CheckedBackend>> devices) : devices_(std::move(devices)) {
    if (devices_.empty()) throw std::invalid_argument("StripedBackend: no device");
    for (const auto& d : devices_)
        if (d->concurrency() != devices_.front()->concurrency())
            throw std::invalid_argument("StripedBackend: devices differ in concurrency");
}

std::string StripedBackend::name() const {
    std::string out;
    for (const auto& d : devices_) {
        if (!out.empty()) out += ',';
        out += d->name();
    }
    return out;
}

std::size_t StripedBackend::preferred_chunk_rows() const {
    std::size_t rows = devices_.front()->preferred_chunk_rows();
    for (const auto& d : devices_) rows = std::min(rows, d->preferred_chunk_rows());
    return rows;
}

bool StripedBackend::any_enabled() const {
    return std::any_of(devices_.begin(), devices_.end(), [](const auto& d) { return d->primary_enabled(); });
}

CheckedBackend* StripedBackend::route(unsigned worker) const {
    const std::size_t n = devices_.size();
    for (std::size_t k = 0; k < n; ++k) {
        CheckedBackend* d = devices_[(worker + k) % n].get();
        if (d->primary_enabled()) return d;
    }
    return nullptr;
}

bool StripedBackend::verifies_in_place() const {
    for (const auto& d : devices_)
        if (!d->verifies_in_place()) return false;
    return true;
}

bool StripedBackend::map_client_memory(const void* base, std::size_t bytes) noexcept {
    bool all = true;
    for (auto& d : devices_) all = d->map_client_memory(base, bytes) && all;
    return all;
}

void StripedBackend::unmap_client_memory(const void* base) noexcept {
    for (auto& d : devices_) d->unmap_client_memory(base);
}

ChunkResult StripedBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    CheckedBackend* d = route(worker);
    return d != nullptr ? d->verify(worker, records, verdicts) : ChunkResult{shm::Status::backend_error, {}};
}

ChunkResult StripedBackend::verify_grouped(unsigned worker, const wire::RowSpan& records, const ChunkGroups& groups,
                                           std::uint8_t* verdicts) noexcept {
    CheckedBackend* d = route(worker);
    return d != nullptr ? d->verify_grouped(worker, records, groups, verdicts)
                        : ChunkResult{shm::Status::backend_error, {}};
}

}  // namespace sigverify::daemon
