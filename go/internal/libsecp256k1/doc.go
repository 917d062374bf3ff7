// SPDX-License-Identifier: MIT

// Package libsecp256k1 calls libsecp256k1 through cgo: the consensus
// reference the tests compare sigverifyd's verdicts with, the per-signature
// baseline of the benchmarks, and a fallback for the tests. Only tests and
// benchmarks import it; without cgo it has no functions (Available is
// false), so CGO_ENABLED=0 builds of the module do not need a C compiler.
package libsecp256k1
