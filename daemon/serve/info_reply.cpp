// SPDX-License-Identifier: MIT
#include "daemon/serve/info_reply.hpp"

#include <cstdlib>
#include <cstring>

#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "sigverify/version.h"  // generated from the CMake project version

namespace sigverify::daemon {

shm::InfoReply refused_info_reply(const DaemonContext& ctx, shm::Status status) {
    shm::InfoReply r{};
    r.magic = shm::kInfoReplyMagic;
    r.status = static_cast<std::uint32_t>(status);
    r.protocol_version = shm::kProtocolVersion;
    r.abi_major = shm::kAbiMajor;
    r.abi_minor = shm::kAbiMinor;
    r.epoch = ctx.epoch;
    return r;
}

shm::InfoReply make_info_reply(const DaemonContext& ctx, const std::uint8_t* data, std::size_t size) {
    shm::InfoRequest req{};
    if (size != sizeof req) return refused_info_reply(ctx, shm::Status::invalid_argument);
    std::memcpy(&req, data, sizeof req);
    if (req.magic != shm::kInfoMagic || req.flags != 0) return refused_info_reply(ctx, shm::Status::invalid_argument);
    shm::InfoReply r = refused_info_reply(ctx, shm::Status::ok);
    shm::copy_text(r.version, SIGVERIFY_VERSION_STRING);
    shm::copy_text(r.backend, ctx.backend_kind);
    r.confirm_rule = ctx.config.confirm == ConfirmRule::strict ? shm::kConfirmStrict : shm::kConfirmGroups;
    r.max_arena_size = ctx.config.arena_size;
    r.max_registered_bytes = ctx.config.max_registered_bytes;
    r.max_registered_buffers = ctx.config.max_registered_buffers;
    r.max_ring_entries = ctx.config.ring_entries;
    r.max_clients = ctx.config.max_clients;
    if (!ctx.backends) return r;
    for (const BackendInfo& b : ctx.backends()) {
        if (b.kind != "gpu") {  // the lanes are named by r.backend ("lanes-ifma8")
            if (b.kind == "cpu") r.cpu_workers = b.workers;
            continue;
        }
        if (b.enabled) ++r.gpus_enabled;
        if (r.gpu_count < shm::kInfoMaxDevices) {
            shm::InfoDevice& d = r.devices[r.gpu_count];
            d.index = static_cast<std::uint32_t>(std::strtoul(b.name.c_str() + 3, nullptr, 10));  // "gpuN"
            d.state = b.enabled ? shm::kDeviceEnabled : shm::kDeviceDisabled;
            d.memory_bytes = b.memory_bytes;
            shm::copy_text(d.name, b.device);
            shm::copy_text(d.self_test, b.self_test);
        }
        ++r.gpu_count;
    }
    return r;
}

}  // namespace sigverify::daemon
