// SPDX-License-Identifier: MIT

package sigverify

// The ring ABI as this package speaks it: the constants, sizes and offsets of
// shm_protocol/include/sigverify/shm_protocol/segment_layout.hpp and the
// checks of segment_access.hpp (docs/protocol.md). Every offset is pinned by
// abi_test.go against the numbers of the C++ header's static_asserts.

import (
	"encoding/binary"
	"fmt"
)

const (
	protocolVersion = 1
	abiMajor        = 1
	// The ABI minors this client relies on: verify_columns (1.1), cancel (1.3).
	abiMinorColumns = 1
	abiMinorCancel  = 3

	segmentMagic = 0x47535653 // "SVSG"
	helloMagic   = 0x4C485653 // "SVHL"
	replyMagic   = 0x52485653 // "SVHR"
	ackMagic     = 0x4B415653 // "SVAK"

	pageSize       = 4096
	headerSize     = pageSize
	arenaAlign     = 64
	minRingEntries = 2
	maxRingEntries = 4096
	minArenaSize   = 64 << 10
	maxArenaSize   = 16 << 30

	helloSize     = 88
	replySize     = 240
	ackSize       = 8
	clientNameLen = 64
	errorTextLen  = 200
	sqeSize       = 64
	cqeSize       = 64

	stateReady  = 1
	stateClosed = 3

	opVerifyColumns = 3
	opCancel        = 4

	kindECDSA   = 0
	kindSchnorr = 1

	tableECDSA       = 0
	tableSchnorr     = 2
	tableUnspecified = 0xFF

	// cancelTagBit marks the user_tag of a cancel entry (as libsigverify does).
	cancelTagBit = uint64(1) << 31
)

// Offsets of SegmentHeader fields.
const (
	hMagic           = 0
	hAbiMajor        = 4
	hAbiMinor        = 6
	hHeaderSize      = 8
	hSegmentSize     = 16
	hEpoch           = 24
	hSqEntries       = 48
	hCqEntries       = 52
	hSqeSize         = 56
	hCqeSize         = 60
	hSqEntriesOffset = 64
	hCqEntriesOffset = 72
	hArenaOffset     = 80
	hArenaSize       = 88
	hSqMask          = 96
	hCqMask          = 100
	hState           = 128
	hSqHead          = 192
	hSqTail          = 256
	hCqHead          = 320
	hCqTail          = 384
	hDaemonBell      = 448 // seq, then waiters at +4
	hClientBell      = 512
)

// Widths of the column tables (wire_format.hpp).
const (
	messageWidth    = 32
	schnorrKeyWidth = 32
	ecdsaKeyWidth   = 33
	signatureWidth  = 64
)

// layout is what compute_layout gives for a header's ring and arena sizes.
type layout struct {
	sqEntries, cqEntries                      uint32
	sqOffset, cqOffset, arenaOffset, arenaLen uint64
	segmentSize                               uint64
}

func isPow2(v uint64) bool { return v != 0 && v&(v-1) == 0 }

func alignUp(v, a uint64) uint64 { return (v + a - 1) / a * a }

// computeLayout mirrors shm::compute_layout: false on out-of-range sizes.
func computeLayout(sq, cq uint32, arena uint64) (layout, bool) {
	if !isPow2(uint64(sq)) || !isPow2(uint64(cq)) {
		return layout{}, false
	}
	if sq < minRingEntries || sq > maxRingEntries || cq < sq || cq > maxRingEntries {
		return layout{}, false
	}
	if arena < minArenaSize || arena > maxArenaSize {
		return layout{}, false
	}
	l := layout{sqEntries: sq, cqEntries: cq, sqOffset: headerSize}
	l.cqOffset = l.sqOffset + uint64(sq)*sqeSize
	l.arenaOffset = alignUp(l.cqOffset+uint64(cq)*cqeSize, pageSize)
	l.arenaLen = alignUp(arena, pageSize)
	l.segmentSize = l.arenaOffset + l.arenaLen
	return l, true
}

// header is a private copy of the identity and layout lines of a segment.
type header struct {
	magic                 uint32
	abiMajor, abiMinor    uint16
	headerSize            uint32
	segmentSize, epoch    uint64
	sqEntries, cqEntries  uint32
	sqeSize, cqeSize      uint32
	sqOffset, cqOffset    uint64
	arenaOffset, arenaLen uint64
	sqMask, cqMask        uint32
}

// readHeader copies the header fields out of the first page of a mapping.
func readHeader(p []byte) header {
	le := binary.LittleEndian
	return header{
		magic:       le.Uint32(p[hMagic:]),
		abiMajor:    le.Uint16(p[hAbiMajor:]),
		abiMinor:    le.Uint16(p[hAbiMinor:]),
		headerSize:  le.Uint32(p[hHeaderSize:]),
		segmentSize: le.Uint64(p[hSegmentSize:]),
		epoch:       le.Uint64(p[hEpoch:]),
		sqEntries:   le.Uint32(p[hSqEntries:]),
		cqEntries:   le.Uint32(p[hCqEntries:]),
		sqeSize:     le.Uint32(p[hSqeSize:]),
		cqeSize:     le.Uint32(p[hCqeSize:]),
		sqOffset:    le.Uint64(p[hSqEntriesOffset:]),
		cqOffset:    le.Uint64(p[hCqEntriesOffset:]),
		arenaOffset: le.Uint64(p[hArenaOffset:]),
		arenaLen:    le.Uint64(p[hArenaSize:]),
		sqMask:      le.Uint32(p[hSqMask:]),
		cqMask:      le.Uint32(p[hCqMask:]),
	}
}

// check mirrors shm::check_header: nil when the header describes a segment
// of at most mapped bytes that this client understands.
func (h *header) check(mapped uint64) error {
	switch {
	case h.magic != segmentMagic:
		return fmt.Errorf("bad magic %#x", h.magic)
	case h.abiMajor != abiMajor:
		return fmt.Errorf("ring ABI major version %d, this client speaks %d", h.abiMajor, abiMajor)
	case h.headerSize != headerSize:
		return fmt.Errorf("bad header size %d", h.headerSize)
	case h.sqeSize != sqeSize || h.cqeSize != cqeSize:
		return fmt.Errorf("bad entry sizes %d/%d", h.sqeSize, h.cqeSize)
	}
	l, ok := computeLayout(h.sqEntries, h.cqEntries, h.arenaLen)
	switch {
	case !ok:
		return fmt.Errorf("bad ring or arena size (%d/%d entries, %d arena bytes)", h.sqEntries, h.cqEntries, h.arenaLen)
	case l.arenaLen != h.arenaLen:
		return fmt.Errorf("arena size not page aligned")
	case h.sqOffset != l.sqOffset || h.cqOffset != l.cqOffset || h.arenaOffset != l.arenaOffset:
		return fmt.Errorf("bad offsets")
	case h.segmentSize != l.segmentSize:
		return fmt.Errorf("bad segment size")
	case mapped < h.segmentSize:
		return fmt.Errorf("segment smaller than its header says")
	case h.sqMask != h.sqEntries-1 || h.cqMask != h.cqEntries-1:
		return fmt.Errorf("bad ring masks")
	}
	return nil
}

// ringCountOK is shm::ring_count_ok: tail-head (mod 2^32) within the ring.
func ringCountOK(head, tail, entries uint32) bool { return tail-head <= entries }

// readText reads a fixed text field that may lack its NUL (hostile peer),
// keeping printable ASCII only.
func readText(b []byte) string {
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	out := make([]byte, n)
	for i := 0; i < n; i++ {
		c := b[i]
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out[i] = c
	}
	return string(out)
}

// submission is a SubmissionEntry for verify_columns or cancel.
type submission struct {
	userTag, rowsOffset, resultsOffset, rowCount uint64
	opcode, recordKind, keySize, encoding, mode  uint8
	table                                        uint8
	flags                                        uint16
	keyOffset, signatureOffset, correlateOffset  uint64
}

func (s *submission) put(p []byte) {
	le := binary.LittleEndian
	_ = p[sqeSize-1]
	le.PutUint64(p[0:], s.userTag)
	le.PutUint64(p[8:], s.rowsOffset)
	le.PutUint64(p[16:], s.resultsOffset)
	le.PutUint64(p[24:], s.rowCount)
	p[32], p[33], p[34], p[35], p[36], p[37] = s.opcode, s.recordKind, s.keySize, s.encoding, s.mode, s.table
	le.PutUint16(p[38:], s.flags)
	le.PutUint64(p[40:], s.keyOffset)
	le.PutUint64(p[48:], s.signatureOffset)
	le.PutUint64(p[56:], s.correlateOffset)
}

// completion is a CompletionEntry copied out of shared memory.
type completion struct {
	userTag, valid, invalid, epoch uint64
	status, detail                 uint32
}

func getCompletion(p []byte) completion {
	le := binary.LittleEndian
	_ = p[cqeSize-1]
	return completion{
		userTag: le.Uint64(p[0:]),
		valid:   le.Uint64(p[8:]),
		invalid: le.Uint64(p[16:]),
		epoch:   le.Uint64(p[24:]),
		status:  le.Uint32(p[32:]),
		detail:  le.Uint32(p[36:]),
	}
}
