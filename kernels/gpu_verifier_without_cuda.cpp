// SPDX-License-Identifier: MIT
// The GPU API in a build without CUDA: discovery finds nothing and says why,
// open() fails with Code::not_built. Lets every caller compile and link the
// same way with or without the CUDA toolkit.
#include "kernels/gpu_verifier.hpp"

namespace sigverify::gpu {

namespace {
const char* const kNotBuilt = "no GPU (built without CUDA)";
}

struct DeviceVerifier::Impl {
    DeviceInfo info;
    Options options;
};

bool built_with_cuda() { return false; }

Discovery discover() {
    Discovery d;
    d.error = kNotBuilt;
    return d;
}

std::unique_ptr<DeviceVerifier> DeviceVerifier::open(const Options&, Status& status) {
    status = Status{Code::not_built, kNotBuilt};
    return nullptr;
}

DeviceVerifier::DeviceVerifier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceVerifier::~DeviceVerifier() = default;
const DeviceInfo& DeviceVerifier::info() const { return impl_->info; }
const Options& DeviceVerifier::options() const { return impl_->options; }
void DeviceVerifier::set_wait_floor(double seconds) {
    if (seconds > 0) impl_->options.wait_floor_s = seconds;
}
Status DeviceVerifier::self_test() { return Status{Code::not_built, kNotBuilt}; }
Status DeviceVerifier::verify(const wire::RowSpan&, wire::Mode, std::uint8_t*, Counts*) {
    return Status{Code::not_built, kNotBuilt};
}
Status DeviceVerifier::benchmark_kernel(const wire::RowSpan&, int, double& rows_per_s) {
    rows_per_s = 0;
    return Status{Code::not_built, kNotBuilt};
}
Timing DeviceVerifier::last_timing() const { return {}; }
LaunchShape DeviceVerifier::launch_shape() const { return {}; }
Status pin_host_memory(const void*, std::size_t) { return Status{Code::not_built, kNotBuilt}; }
void unpin_host_memory(const void*) {}

}  // namespace sigverify::gpu
