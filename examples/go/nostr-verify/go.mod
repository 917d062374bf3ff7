// SPDX-License-Identifier: MIT
// examples/go/nostr-verify: NIP-01 events verified in bulk through sigverifyd
// with the repository's Go client (docs/go.md); standard library only.
module a-seed-da0336f9.example/sigverify/examples/go/nostr-verify

go 1.19

require a-seed-da0336f9.example/sigverify/go v0.0.0

replace a-seed-da0336f9.example/sigverify/go => ../../../go
