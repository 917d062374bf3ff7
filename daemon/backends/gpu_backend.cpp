// SPDX-License-Identifier: MIT
#include "daemon/backends/gpu_backend.hpp"

#include <algorithm>

namespace sigverify::daemon {

std::vector<std::unique_ptr<GpuBackend>> GpuBackend::open_all(const std::string& spec, unsigned workers,
                                                              std::size_t chunk_rows, unsigned chunks_in_flight,
                                                              double wait_floor_s,
                                                              std::vector<GpuDeviceReport>& reports,
                                                              std::string& error) {
    std::vector<std::unique_ptr<GpuBackend>> opened;
    reports.clear();
    if (!gpu::built_with_cuda()) {
        error = "this build has no CUDA backend";
        return opened;
    }
    const gpu::Discovery found = gpu::discover();
    if (found.devices.empty()) {
        error = found.error.empty() ? "no GPU found" : found.error;
        return opened;
    }
    std::vector<int> chosen;
    if (!gpu::select_devices(spec, found.devices, chosen, error)) return opened;

    chunk_rows = std::max<std::size_t>(1, chunk_rows);
    const std::size_t slots_per_device = std::max(1u, chunks_in_flight);
    std::size_t slots_total = 0;
    for (int index : chosen) {
        GpuDeviceReport report;
        for (const auto& d : found.devices)
            if (d.index == index) report.info = d;
        gpu::Options options;
        options.device = index;
        // A slot runs one chunk at a time, so one stream and staging sized for
        // the largest chunk of the widest row the daemon hands over.
        options.streams = 1;
        options.chunk_bytes = chunk_rows * wire::stride(wire::RecordKind::ecdsa, wire::kMaxTailSize);
        options.wait_floor_s = wait_floor_s;
        std::unique_ptr<GpuBackend> backend(new GpuBackend());
        backend->device_ = index;
        backend->chunk_rows_ = chunk_rows;
        DeviceSlots tally;
        tally.bulk_wanted = slots_per_device;
        const auto note = [&tally](const gpu::Status& st) {
            tally.wrong_verdict = tally.wrong_verdict || st.code == gpu::Code::self_test_failed;
            if (tally.failure.ok()) tally.failure = st;
        };
        // Up to the first slot that does not open: the next would find the
        // device as short of memory.
        for (std::size_t k = 0; k < slots_per_device && tally.failure.ok(); ++k) {
            gpu::Status st;
            if (auto slot = open_slot(options, chunk_rows, st)) backend->slots_.push_back(std::move(slot));
            else note(st);
        }
        tally.bulk_opened = backend->slots_.size();
        // The lane workers' slot: the same buffers, never shared with bulk
        // work, its stream at the device's greatest priority.
        if (tally.failure.ok()) {
            gpu::Options lane_options = options;
            lane_options.high_priority = true;
            gpu::Status st;
            backend->lane_slot_ = open_slot(lane_options, chunk_rows, st);
            if (!backend->lane_slot_) note(st);
        }
        tally.lane_opened = backend->lane_slot_ != nullptr;
        report.usable = tally.usable();
        report.no_kernel_image = !report.usable && tally.failure.code == gpu::Code::no_kernel_image;
        report.self_test = tally.report();
        if (report.usable) {
            slots_total += backend->slots_.size();
            opened.push_back(std::move(backend));
        }
        reports.push_back(std::move(report));
    }
    if (opened.empty()) {
        error = "no selected GPU passed its self-test";
        return opened;
    }
    // At least two workers per slot: one runs on a GPU while the other copies
    // and cross-checks. Every device takes any worker (StripedBackend).
    const unsigned all_workers = std::max<unsigned>(workers, unsigned(2 * slots_total));
    for (auto& b : opened) b->workers_ = all_workers;
    return opened;
}

std::string DeviceSlots::report() const {
    // (a GPU without an image is reported as exactly that: the message says it)
    const std::string why = failure.ok()                                ? std::string()
                            : failure.code == gpu::Code::no_kernel_image ? failure.message
                                : std::string(gpu::to_string(failure.code)) + ": " + failure.message;
    if (!usable()) return why;
    if (failure.ok()) return "passed";
    std::string left_out;
    if (bulk_opened < bulk_wanted)
        left_out = std::to_string(bulk_wanted - bulk_opened) + " of " + std::to_string(bulk_wanted) + " bulk slots";
    if (!lane_opened) left_out += std::string(left_out.empty() ? "" : " and ") + "the lane slot";
    return "passed; left out " + left_out + " (" + why + ")";
}

GpuBackend::~GpuBackend() = default;

std::unique_ptr<GpuBackend::Slot> GpuBackend::open_slot(const gpu::Options& options, std::size_t chunk_rows,
                                                        gpu::Status& st) {
    auto verifier = gpu::DeviceVerifier::open(options, st);
    if (verifier) st = verifier->self_test();  // every slot: its own buffers and stream
    if (!verifier || !st.ok()) return nullptr;
    verifier->set_wait_floor(backstop_floor(options.wait_floor_s));
    auto slot = std::make_unique<Slot>();
    slot->verifier = std::move(verifier);
    Slot* const own = slot.get();
    // Merged launches of up to two chunks: the staging (sized for
    // chunk_rows rows of the widest stride) holds ~3 chunks of tail-less records.
    slot->coalescer = std::make_unique<LaunchCoalescer>(
        2 * chunk_rows, [own](const wire::RowSpan& rows, std::uint8_t* verdicts) {
            std::lock_guard lock(own->mutex);
            return own->verifier->verify(rows, wire::Mode::results, verdicts, nullptr).ok();
        });
    return slot;
}

GpuBackend::Slot& GpuBackend::slot_for(unsigned worker) const {
    if (worker >= lane_first_ && lane_slot_ != nullptr) return *lane_slot_;
    return *slots_[worker % slots_.size()];
}

bool GpuBackend::map_client_memory(const void* base, std::size_t bytes) noexcept {
    // Unpinned memory still works in place: its rows take one host copy into
    // the slot's pinned staging instead of none.
    try {
        if (gpu::pin_host_memory(base, bytes).ok()) pinned_.add(base, bytes);
    } catch (...) {
    }
    return true;
}

void GpuBackend::unmap_client_memory(const void* base) noexcept {
    if (pinned_.remove(base)) gpu::unpin_host_memory(base);
}

ChunkResult GpuBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    return verify_chunk(worker, workers_, records, verdicts, [&](ChunkResult& r) {
        Slot& d = slot_for(worker);
        // Merged launches (LaunchCoalescer); the device verifier resolves its
        // recheck verdicts, so verdicts come back as 0 / 1.
        if (!d.coalescer->verify(records, verdicts)) {
            r.status = shm::Status::backend_error;
            return;
        }
        for (std::size_t i = 0; i < records.count; ++i) {
            if (verdicts[i] == 1) ++r.tally.valid;
            else ++r.tally.invalid;
        }
    });
}

}  // namespace sigverify::daemon
