// SPDX-License-Identifier: MIT
// The lane widths the lanes tests run: scalar always, ifma8 and ifma4 where
// this CPU has them (otherwise said once per call, so the skip shows in the
// log).
#pragma once

#include <catch2/catch.hpp>

#include <vector>

#include "kernels/lanes/lanes.hpp"

namespace sigverify::kernel_test {

inline std::vector<kernels::lanes::Width> lane_widths() {
    std::vector<kernels::lanes::Width> w = {kernels::lanes::Width::scalar};
    if (kernels::lanes::cpu_has_ifma8()) {
        w.push_back(kernels::lanes::Width::ifma8);
    } else {
        WARN("CPU without AVX-512 IFMA: 8-lane cases skipped");
    }
    if (kernels::lanes::cpu_has_ifma4()) {
        w.push_back(kernels::lanes::Width::ifma4);
    } else {
        WARN("CPU without AVX-512 IFMA and VL: 4-lane cases skipped");
    }
    return w;
}

}  // namespace sigverify::kernel_test
