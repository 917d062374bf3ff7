// SPDX-License-Identifier: MIT

// Package bench holds the benchmarks of the Go client in the shape the Go
// secp256k1 libraries publish (ns/op, B/op, allocs/op per signature), side
// by side with libsecp256k1 called once per signature through cgo:
//
//	cd go/bench && go test -bench . -benchmem
//
// It has no code of its own; docs/go.md and BENCHMARKS.md explain the rows.
package bench
