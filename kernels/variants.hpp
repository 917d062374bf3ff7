// SPDX-License-Identifier: MIT
// The GPU kernel's build variants, all in one place: each switch a build may
// set with -D (scripts/gpu-check.sh's variant builds, scripts/kernel-metrics.sh
// DEFS=...), and the value every other build gets. A variant exists only to
// be compared with the default on a device in the same run (gpu-check); the
// one that loses there goes, and BENCHMARKS.md records why.
//
//   SV_G_WINDOW_BITS=w      G windows of w bits (a multiple of 4, 4..16); default 12
//   SV_G_PREFETCH=0         no L1 prefetch of the next G window's entry
//   SV_SM90_P_TABLE_SHARED  sm_90 keeps the P table and the streams in shared memory
//   SV_SCRATCH_ALL_SHARED   every scratch region in shared memory, on every architecture
//   SV_RESIDENT_THREADS=R   the launch bound names R resident threads per SM
//   SV_MAX_REGS=N           a register cap of N instead of the launch bound
//   SV_UNCAPPED_REGS        no register cap: ptxas decides
//
// Not variants: SV_COUNT_FIELD_OPS and SV_HOST_DEVICE_FORM instrument host
// tests, SV_HAVE_INT128 names the platform (kernels/sv_hd.hpp).
#pragma once

namespace sigverify::kernels::variant {

#if defined(SV_G_WINDOW_BITS)
constexpr int kGWindowBits = SV_G_WINDOW_BITS;
#else
constexpr int kGWindowBits = 12;
#endif

#if defined(SV_G_PREFETCH)
constexpr bool kGPrefetch = SV_G_PREFETCH != 0;
#else
constexpr bool kGPrefetch = true;
#endif

// Where the scratch regions live (scratch32.hpp, scratch_placement).
enum class ScratchLayout { standard, sm90_p_table_shared, all_shared };
#if defined(SV_SCRATCH_ALL_SHARED)
constexpr ScratchLayout kScratchLayout = ScratchLayout::all_shared;
#elif defined(SV_SM90_P_TABLE_SHARED)
constexpr ScratchLayout kScratchLayout = ScratchLayout::sm90_p_table_shared;
#else
constexpr ScratchLayout kScratchLayout = ScratchLayout::standard;
#endif

}  // namespace sigverify::kernels::variant

// The kernel's launch bound (gpu_verifier.cu): resident threads per SM, by
// architecture unless SV_RESIDENT_THREADS names them; SV_KERNEL_BOUNDS is the
// attribute the kernel is declared with. Macros: the attribute takes
// constant expressions the device pass sees per architecture.
#if defined(SV_RESIDENT_THREADS)
#define SV_KERNEL_RESIDENT_THREADS SV_RESIDENT_THREADS
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && __CUDA_ARCH__ < 1000
#define SV_KERNEL_RESIDENT_THREADS 512
#else
#define SV_KERNEL_RESIDENT_THREADS 384
#endif
#if defined(SV_MAX_REGS)
#define SV_KERNEL_BOUNDS __maxnreg__(SV_MAX_REGS)
#elif defined(SV_UNCAPPED_REGS)
#define SV_KERNEL_BOUNDS __launch_bounds__(kMaxThreadsPerBlock, 1)
#else
#define SV_KERNEL_BOUNDS __launch_bounds__(SV_KERNEL_RESIDENT_THREADS, 1)
#endif
