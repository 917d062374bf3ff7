// SPDX-License-Identifier: MIT
// The Go client of sigverifyd (docs/go.md): standard library only, no cgo.
module a-seed-da0336f9.example/sigverify/go

go 1.19
