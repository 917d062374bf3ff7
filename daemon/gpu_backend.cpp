#include "daemon/gpu_backend.hpp"

#include <algorithm>

namespace sigverify::daemon {

std::unique_ptr<GpuBackend> GpuBackend::open(const std::string& spec, unsigned workers, std::size_t chunk_rows,
                                             unsigned chunks_in_flight, std::vector<GpuDeviceReport>& reports,
                                             std::string& error) {
    reports.clear();
    if (!gpu::built_with_cuda()) {
        error = "this build has no CUDA backend";
        return nullptr;
    }
    const gpu::Discovery found = gpu::discover();
    if (found.devices.empty()) {
        error = found.error.empty() ? "no GPU found" : found.error;
        return nullptr;
    }
    std::vector<int> chosen;
    if (!gpu::select_devices(spec, found.devices, chosen, error)) return nullptr;

    std::unique_ptr<GpuBackend> backend(new GpuBackend());
    backend->chunk_rows_ = std::max<std::size_t>(1, chunk_rows);
    backend->slots_per_device_ = std::max(1u, chunks_in_flight);
    for (int index : chosen) {
        GpuDeviceReport report;
        for (const auto& d : found.devices)
            if (d.index == index) report.info = d;
        gpu::Options options;
        options.device = index;
        // A slot runs one chunk at a time, so one stream and staging sized for
        // the largest chunk of the widest row the daemon hands over.
        options.streams = 1;
        options.chunk_bytes = backend->chunk_rows_ * wire::stride(wire::RecordKind::ecdsa, wire::kMaxTailSize);
        std::vector<std::unique_ptr<Slot>> slots;
        gpu::Status st;
        for (std::size_t k = 0; k < backend->slots_per_device_ && st.ok(); ++k) {
            auto verifier = gpu::DeviceVerifier::open(options, st);
            if (verifier) st = verifier->self_test();  // every slot: its own buffers and stream
            if (verifier && st.ok()) {
                auto slot = std::make_unique<Slot>();
                slot->verifier = std::move(verifier);
                Slot* const own = slot.get();
                // Merged launches of up to two chunks: the staging (sized for
                // chunk_rows rows of the widest stride) holds ~3 chunks of tail-less records.
                slot->coalescer = std::make_unique<LaunchCoalescer>(
                    2 * backend->chunk_rows_, [own](const wire::RowSpan& rows, std::uint8_t* verdicts) {
                        std::lock_guard lock(own->mutex);
                        return own->verifier->verify(rows, wire::Mode::results, verdicts, nullptr).ok();
                    });
                slots.push_back(std::move(slot));
            }
        }
        if (st.ok()) {
            report.usable = true;
            report.self_test = "passed";
            for (auto& slot : slots) backend->slots_.push_back(std::move(slot));
            ++backend->devices_;
        } else {
            report.self_test = std::string(gpu::to_string(st.code)) + ": " + st.message;
        }
        reports.push_back(std::move(report));
    }
    if (backend->devices_ == 0) {
        error = "no selected GPU passed its self-test";
        return nullptr;
    }
    // At least two workers per slot: one runs on the GPU while the other copies and cross-checks.
    backend->workers_ = std::max<unsigned>(workers, unsigned(2 * backend->slots_.size()));
    return backend;
}

GpuBackend::~GpuBackend() = default;

ChunkResult GpuBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    ChunkResult r;
    if (!chunk_args_ok(worker, workers_, records, verdicts)) {
        r.status = shm::Status::backend_error;
        return r;
    }
    try {
        const std::size_t device = worker % devices_;
        const std::size_t slot = (worker / devices_) % slots_per_device_;
        Slot& d = *slots_[device * slots_per_device_ + slot];
        // Merged launches (LaunchCoalescer); the device verifier resolves its
        // recheck verdicts, so verdicts come back as 0 / 1.
        if (!d.coalescer->verify(records, verdicts)) {
            r.status = shm::Status::backend_error;
            return r;
        }
        for (std::size_t i = 0; i < records.count; ++i) {
            if (verdicts[i] == 1) ++r.tally.valid;
            else ++r.tally.invalid;
        }
    } catch (...) {
        r.status = shm::Status::backend_error;
    }
    return r;
}

}  // namespace sigverify::daemon
