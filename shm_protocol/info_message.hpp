// SPDX-License-Identifier: MIT
// The daemon info exchange on the control socket (ring ABI 1.5): a client asks
// what the daemon is (versions, backend, each GPU and its state, the
// confirmation rule, limits) without a batch.
//
//   client -> daemon   InfoRequest
//   daemon -> client   InfoReply (status ok), or InfoReply with status
//                      invalid_argument for a request whose reserved field
//                      is not 0 (the daemon counts it as a protocol error)
//
// One request at a time, like the registration messages (segment_layout.hpp):
// the client waits for the reply before it sends anything else on the socket.
// A daemon older than ABI 1.5 drops the request as an unexpected packet and
// never answers, so a client asks only a daemon whose header says 1.5+.
//
// Every field is fixed-size and every text NUL-terminated inside its array; a
// daemon with more than kInfoMaxDevices GPUs lists the first ones and counts
// them all in gpu_count / gpus_enabled.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sigverify::shm {

constexpr std::uint16_t kAbiMinorInfo = 5;             // first ABI minor that answers InfoRequest
constexpr std::uint32_t kInfoMagic = 0x51495653;       // "SVIQ"
constexpr std::uint32_t kInfoReplyMagic = 0x52495653;  // "SVIR"
constexpr std::size_t kInfoMaxDevices = 8;
constexpr std::size_t kInfoTextSize = 48;

struct InfoRequest {
    std::uint32_t magic;  // kInfoMagic
    std::uint32_t flags;  // must be 0
};
static_assert(sizeof(InfoRequest) == 8);

// InfoDevice::state
constexpr std::uint32_t kDeviceDisabled = 0;  // failed its self-test, or switched off after a lie
constexpr std::uint32_t kDeviceEnabled = 1;   // verifying now

struct InfoDevice {
    std::uint32_t index;         // the CUDA device index
    std::uint32_t state;         // kDeviceDisabled / kDeviceEnabled
    std::uint64_t memory_bytes;  // device memory
    char name[kInfoTextSize];    // model name
    char self_test[kInfoTextSize];  // "passed", "failed: ...", "passed; switched off: ..."
};
static_assert(sizeof(InfoDevice) == 112);

// A GPU the daemon's build has no machine code (or PTX) for: its self_test
// text starts with kNoKernelImage and names the GPU's architecture ("no
// kernel image for sm_86 in this build"); the daemon's log and stats socket
// give the whole report, and kRebuildForEveryGpu is how to get one.
inline constexpr const char* kNoKernelImage = "no kernel image for ";
inline constexpr const char* kRebuildForEveryGpu =
    "./scripts/run.sh, or cmake -B build -DSIGVERIFY_CUDA_ALL_ARCHITECTURES=ON -UCMAKE_CUDA_ARCHITECTURES && "
    "cmake --build build";

// InfoReply::confirm_rule (the daemon's --confirm; daemon/confirm/confirmation.hpp)
constexpr std::uint32_t kConfirmStrict = 0;
constexpr std::uint32_t kConfirmGroups = 1;

struct InfoReply {
    std::uint32_t magic;             // kInfoReplyMagic
    std::uint32_t status;            // Status: ok, or invalid_argument
    std::uint32_t protocol_version;  // handshake version
    std::uint16_t abi_major;         // ring ABI
    std::uint16_t abi_minor;
    std::uint64_t epoch;
    char version[32];                // daemon release (SIGVERIFY_VERSION_STRING), NUL-terminated
    char backend[32];                // "cpu", "gpu", "host-kernel"
    std::uint32_t confirm_rule;      // kConfirmStrict / kConfirmGroups
    std::uint32_t cpu_workers;       // CPU verifier threads (the fallback's on a GPU daemon)
    std::uint32_t gpu_count;         // GPUs found (devices[] holds min(gpu_count, 8))
    std::uint32_t gpus_enabled;      // of them, verifying now
    std::uint64_t max_arena_size;    // per client
    std::uint64_t max_registered_bytes;
    std::uint32_t max_registered_buffers;
    std::uint32_t max_ring_entries;
    std::uint32_t max_clients;
    std::uint32_t reserved;
    InfoDevice devices[kInfoMaxDevices];
};
static_assert(sizeof(InfoReply) == 136 + kInfoMaxDevices * sizeof(InfoDevice));
static_assert(offsetof(InfoReply, devices) == 136);

}  // namespace sigverify::shm
