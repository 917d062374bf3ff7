// SPDX-License-Identifier: MIT

package sigverify

// The Go constants against the C++ header they restate: every number this
// package uses is read out of segment_layout.hpp's constants and
// static_asserts, so a change of the ring ABI there fails here.

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

func layoutHeader(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("..", "shm_protocol", "include", "sigverify", "shm_protocol", "segment_layout.hpp"))
	if err != nil {
		t.Skipf("no C++ header beside the module: %v", err)
	}
	return string(b)
}

func TestABIConstantsMatchTheHeader(t *testing.T) {
	h := layoutHeader(t)
	consts := map[string]uint64{
		"kSegmentMagic": segmentMagic, "kAbiMajor": abiMajor, "kProtocolVersion": protocolVersion,
		"kPageSize": pageSize, "kArenaAlign": arenaAlign, "kMinRingEntries": minRingEntries,
		"kMaxRingEntries": maxRingEntries, "kStatusCount": statusCount, "kAbiMinorColumns": abiMinorColumns,
		"kTableUnspecified": tableUnspecified, "kAbiMinorCancel": abiMinorCancel, "kHelloMagic": helloMagic,
		"kReplyMagic": replyMagic, "kAckMagic": ackMagic, "kClientNameSize": clientNameLen,
		"kErrorTextSize": errorTextLen,
	}
	for name, want := range consts {
		m := regexp.MustCompile(`constexpr [\w:]+ ` + name + ` = (0x[0-9A-Fa-f]+|\d+)`).FindStringSubmatch(h)
		if m == nil {
			t.Errorf("%s not in the header", name)
			continue
		}
		if got, _ := strconv.ParseUint(m[1], 0, 64); got != want {
			t.Errorf("%s: header %d, Go %d", name, got, want)
		}
	}
	if !regexp.MustCompile(`kMinArenaSize = 64 \* 1024;`).MatchString(h) || minArenaSize != 64*1024 {
		t.Error("kMinArenaSize")
	}
	if !regexp.MustCompile(`kMaxArenaSize = std::uint64_t\(16\) << 30;`).MatchString(h) || maxArenaSize != 16<<30 {
		t.Error("kMaxArenaSize")
	}
	enums := map[string]uint64{
		"verify_columns = ": opVerifyColumns, "cancel = ": opCancel, "ready = ": stateReady, "closed = ": stateClosed,
	}
	for name, want := range enums {
		m := regexp.MustCompile(`\b` + name + `(\d+)`).FindStringSubmatch(h)
		if m == nil {
			t.Errorf("%s not in the header", name)
		} else if got, _ := strconv.ParseUint(m[1], 10, 64); got != want {
			t.Errorf("%s: header %d, Go %d", name, got, want)
		}
	}
}

func TestABIOffsetsMatchTheHeader(t *testing.T) {
	h := layoutHeader(t)
	want := map[string]uint64{
		"SegmentHeader,magic": hMagic, "SegmentHeader,abi_major": hAbiMajor, "SegmentHeader,abi_minor": hAbiMinor,
		"SegmentHeader,header_size": hHeaderSize, "SegmentHeader,segment_size": hSegmentSize,
		"SegmentHeader,epoch": hEpoch, "SegmentHeader,sq_entries": hSqEntries, "SegmentHeader,cq_entries": hCqEntries,
		"SegmentHeader,sqe_size": hSqeSize, "SegmentHeader,cqe_size": hCqeSize,
		"SegmentHeader,sq_entries_offset": hSqEntriesOffset, "SegmentHeader,cq_entries_offset": hCqEntriesOffset,
		"SegmentHeader,arena_offset": hArenaOffset, "SegmentHeader,arena_size": hArenaSize,
		"SegmentHeader,sq_mask": hSqMask, "SegmentHeader,cq_mask": hCqMask, "SegmentHeader,state": hState,
		"SegmentHeader,sq_head": hSqHead, "SegmentHeader,sq_tail": hSqTail, "SegmentHeader,cq_head": hCqHead,
		"SegmentHeader,cq_tail": hCqTail, "SegmentHeader,daemon_bell": hDaemonBell, "SegmentHeader,client_bell": hClientBell,
		// The entries as submission.put and getCompletion write and read them.
		"SubmissionEntry,user_tag": 0, "SubmissionEntry,rows_offset": 8, "SubmissionEntry,results_offset": 16,
		"SubmissionEntry,row_count": 24, "SubmissionEntry,opcode": 32, "SubmissionEntry,record_kind": 33,
		"SubmissionEntry,key_size": 34, "SubmissionEntry,encoding": 35, "SubmissionEntry,mode": 36,
		"SubmissionEntry,table": 37, "SubmissionEntry,flags": 38, "SubmissionEntry,columns": 40,
		"CompletionEntry,user_tag": 0, "CompletionEntry,valid": 8, "CompletionEntry,invalid": 16,
		"CompletionEntry,epoch": 24, "CompletionEntry,status": 32, "CompletionEntry,detail": 36,
		"HelloRequest,client_name": 24, "HelloReply,error": 40,
	}
	found := map[string]bool{}
	for _, m := range regexp.MustCompile(`static_assert\(offsetof\((\w+), (\w+)\) == (\d+)\);`).FindAllStringSubmatch(h, -1) {
		key := m[1] + "," + m[2]
		w, ok := want[key]
		if !ok {
			continue
		}
		found[key] = true
		if got, _ := strconv.ParseUint(m[3], 10, 64); got != w {
			t.Errorf("%s: header %d, Go %d", key, got, w)
		}
	}
	for key := range want {
		if !found[key] {
			t.Errorf("%s: no static_assert in the header", key)
		}
	}
	for name, size := range map[string]uint64{"HelloRequest": helloSize, "HelloReply": replySize, "MappedAck": ackSize,
		"SubmissionEntry": sqeSize, "CompletionEntry": cqeSize} {
		if !regexp.MustCompile(`static_assert\(sizeof\(` + name + `\) == ` + strconv.FormatUint(size, 10) + `\);`).MatchString(h) {
			t.Errorf("sizeof(%s) is not %d in the header", name, size)
		}
	}
}

// The layout both sides compute, against the numbers of docs/protocol.md's
// default session (64 entries, 64 MiB).
func TestComputeLayout(t *testing.T) {
	l, ok := computeLayout(64, 64, 64<<20)
	if !ok || l.sqOffset != 4096 || l.cqOffset != 4096+64*64 || l.arenaOffset != 12288 || l.segmentSize != 12288+64<<20 {
		t.Fatalf("layout %+v", l)
	}
	for _, bad := range [][3]uint64{{3, 4, 1 << 20}, {8, 4, 1 << 20}, {1, 1, 1 << 20}, {8192, 8192, 1 << 20}, {8, 8, 4096}, {8, 8, 17 << 30}} {
		if _, ok := computeLayout(uint32(bad[0]), uint32(bad[1]), bad[2]); ok {
			t.Errorf("layout of %v accepted", bad)
		}
	}
	if !ringCountOK(0xFFFFFFFE, 2, 4) || ringCountOK(0, 5, 4) || ringCountOK(5, 4, 4) {
		t.Error("ringCountOK")
	}
	if got := readText([]byte("ab\x01c\x00zz")); got != "ab?c" {
		t.Errorf("readText %q", got)
	}
}
