// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"encoding/csv"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var sample = flag.String("sample", "", "TestWriteSample: write the sample events (tests/go/test_go.sh) here")

// The canonical serialization of one event, written out by hand: NIP-01's
// seven escapes, everything else verbatim (no \u escapes, no HTML escapes).
func TestCanonicalKnownAnswer(t *testing.T) {
	ev := &event{pubkey: bytes.Repeat([]byte{0xab}, 32), createdAt: 1700000000, kind: 1,
		tags:    [][]string{{"e", "x\"y"}, {"p"}, {}},
		content: "a\nb\"c\\d\re\tf\bg\fh\x01i<>&é😀/"}
	want := `[0,"` + strings.Repeat("ab", 32) + `",1700000000,1,[["e","x\"y"],["p"],[]],` +
		`"a\nb\"c\\d\re\tf\bg\fh` + "\x01" + `i<>&é😀/"]`
	if got := string(canonical(ev)); got != want {
		t.Fatalf("canonical:\n got %q\nwant %q", got, want)
	}
	// What the JSON decoder makes of a line's escapes is what is hashed.
	line := `{"id":"` + strings.Repeat("0", 64) + `","pubkey":"` + strings.Repeat("ab", 32) + `","created_at":1700000000,` +
		`"kind":1,"tags":[["e","x\"y"],["p"],[]],"content":"a\nb\"c\\d\re\tf\bg\fh\u0001i\u003c>&\u00e9\ud83d\ude00\/",` +
		`"sig":"` + strings.Repeat("0", 128) + `"}`
	parsed, err := parseEvent([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(canonical(parsed)); got != want {
		t.Fatalf("canonical of the parsed line:\n got %q\nwant %q", got, want)
	}
}

// The test signer signs the official vectors' messages as BIP-340 does.
func TestSignerMatchesBIP340(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "tests", "vectors", "bip340", "test-vectors.csv"))
	recs, cerr := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	signed := 0
	for _, r := range recs[1:] {
		if r[1] == "" || len(r[4]) != 64 {
			continue
		}
		sk, _ := hex.DecodeString(r[1])
		aux, _ := hex.DecodeString(r[3])
		msg, _ := hex.DecodeString(r[4])
		k := newKey(sk)
		if got := strings.ToUpper(hex.EncodeToString(k.px)); got != r[2] {
			t.Fatalf("vector %s: public key %s, want %s", r[0], got, r[2])
		}
		if got := strings.ToUpper(hex.EncodeToString(k.sign(msg, aux))); got != r[5] {
			t.Fatalf("vector %s: signature %s, want %s", r[0], got, r[5])
		}
		signed++
	}
	if signed < 4 {
		t.Fatalf("only %d vectors signed", signed)
	}
}

// fields of an event as the test writes it.
type fields struct {
	id, pubkey, sig string
	createdAt       string
	kind            string
	tags            string // JSON
	content         string // JSON string, escapes as written
}

func (f fields) line() string {
	return fmt.Sprintf(`{"id":"%s","pubkey":"%s","created_at":%s,"kind":%s,"tags":%s,"content":%s,"sig":"%s"}`,
		f.id, f.pubkey, f.createdAt, f.kind, f.tags, f.content, f.sig)
}

// signedEvent signs an event: the id over the canonical form of what the
// line decodes to.
func signedEvent(t testing.TB, k schnorrKey, createdAt, kind int, tags, content string) fields {
	f := fields{pubkey: hex.EncodeToString(k.px), createdAt: strconv.Itoa(createdAt), kind: strconv.Itoa(kind),
		tags: tags, content: content, id: strings.Repeat("0", 64), sig: strings.Repeat("0", 128)}
	ev, err := parseEvent([]byte(f.line()))
	if err != nil {
		t.Fatalf("test event: %v", err)
	}
	id := computeID(ev)
	f.id = hex.EncodeToString(id[:])
	f.sig = hex.EncodeToString(k.sign(id[:], bytes.Repeat([]byte{7}, 32)))
	return f
}

// expected is a line of the test file and the verdict it must get.
type expected struct {
	line    string
	verdict string // "valid", "invalid", "malformed"
	why     string // in the verdict text
}

func flip(hexs string, i int) string {
	b := []byte(hexs)
	if b[i] == '0' {
		b[i] = '1'
	} else {
		b[i] = '0'
	}
	return string(b)
}

// testEvents is the test file: signed events with odd escapes, tampered
// ids, contents and signatures, and malformed lines.
func testEvents(t testing.TB) []expected {
	k1 := newKey(bytes.Repeat([]byte{0x11}, 32))
	k2 := newKey(bytes.Repeat([]byte{0x22}, 32))
	ok1 := signedEvent(t, k1, 1700000000, 1, `[]`, `"hello nostr"`)
	ok2 := signedEvent(t, k2, 1700000001, 30023, `[["d","slug"],["t","go"],["e","`+strings.Repeat("ab", 32)+`","wss://x"]]`,
		`"line\nbreak \"quoted\" back\\slash\ttab\r\b\f \u0001 \u00e9 \ud83d\ude00 \/ <b>&amp;</b>"`)
	ok3 := signedEvent(t, k1, 0, 0, `[["x"]]`, `""`)
	badID := ok1
	badID.id = flip(ok1.id, 10)
	badContent := ok2
	badContent.content = `"line\nbreak \"quoted\" back\\slash\ttab\r\b\f \u0001 \u00e9 \ud83d\ude00 \/ <b>&amp;</b>!"`
	badSig := ok3
	badSig.sig = flip(ok3.sig, 100)
	otherKey := ok1 // a correct id, signed by another key
	otherKey.pubkey = hex.EncodeToString(k2.px)
	ev, _ := parseEvent([]byte(otherKey.line()))
	id := computeID(ev)
	otherKey.id = hex.EncodeToString(id[:])
	upper := ok1
	upper.id = strings.ToUpper(ok1.id)
	float := ok1
	float.kind = "1.0"
	return []expected{
		{ok1.line(), "valid", ""},
		{ok2.line(), "valid", ""},
		{ok3.line(), "valid", ""},
		{badID.line(), "invalid", "id"},
		{badContent.line(), "invalid", "id"},
		{badSig.line(), "invalid", "signature"},
		{otherKey.line(), "invalid", "signature"},
		{`not json at all`, "malformed", "JSON"},
		{`["EVENT",{"id":"x"}]`, "malformed", "JSON object"},
		{strings.Replace(ok1.line(), `"sig"`, `"sag"`, 1), "malformed", "no sig"},
		{upper.line(), "malformed", "lowercase"},
		{float.line(), "malformed", "kind"},
		{strings.Replace(ok1.line(), `"tags":[]`, `"tags":[[1]]`, 1), "malformed", "tags"},
		{strings.Replace(ok1.line(), `"hello nostr"`, "\"hello \xff\"", 1), "malformed", "UTF-8"},
		{strings.Replace(ok1.line(), ok1.sig, ok1.sig[:126], 1), "malformed", "sig"},
	}
}

// A private sigverifyd ($SIGVERIFYD, set by tests/go/test_go.sh, else the
// build tree's); the tests that need it skip without one.
func startDaemon(t *testing.T) string {
	bin := os.Getenv("SIGVERIFYD")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", "..", "build", "daemon", "sigverifyd"))
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skip("no sigverifyd (set $SIGVERIFYD)")
	}
	dir, err := os.MkdirTemp("", "svnostr")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--foreground", "--runtime-dir", dir, "--cpu-threads", "2", "--log-file", filepath.Join(dir, "log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_, _ = cmd.Process.Wait()
		os.RemoveAll(dir)
	})
	for i := 0; i < 400; i++ {
		if _, err := os.Stat(filepath.Join(dir, "sigverifyd.sock")); err == nil {
			return dir
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("sigverifyd did not come up")
	return ""
}

var summaryLine = regexp.MustCompile(`^events=(\d+) valid=(\d+) invalid=(\d+) malformed=(\d+) seconds=[0-9.]+ events/s=[0-9.]+$`)

// Every line's verdict, the summary, and the signatures' verdicts equal to
// libsecp256k1's in-process check of the same rows (sigverify verify --local).
func TestVerdicts(t *testing.T) {
	dir := startDaemon(t)
	for _, chunk := range []int{16384, 4} {
		t.Run(fmt.Sprintf("chunks of %d", chunk), func(t *testing.T) {
			defer func(c int) { chunkEvents = c }(chunkEvents)
			chunkEvents = chunk
			verdicts(t, dir)
		})
	}
}

func verdicts(t *testing.T, dir string) {
	evs := testEvents(t)
	tmp := t.TempDir()
	in := filepath.Join(tmp, "events.jsonl")
	var file strings.Builder
	for i, e := range evs {
		file.WriteString(e.line + "\n")
		if i == 3 {
			file.WriteString("\n   \n") // blank lines: skipped, not counted
		}
	}
	if err := os.WriteFile(in, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	rows := filepath.Join(tmp, "rows")
	var out, errs bytes.Buffer
	if code := run([]string{"-runtime-dir", dir, "-rows", rows, in}, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(evs)+1 {
		t.Fatalf("%d output lines for %d events:\n%s", len(lines), len(evs), out.String())
	}
	counts := map[string]int{}
	for i, e := range evs {
		parts := strings.SplitN(lines[i], "\t", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], e.verdict) || !strings.Contains(parts[2], e.why) {
			t.Errorf("event %d: %q, want %s (%s)", i, lines[i], e.verdict, e.why)
		}
		counts[e.verdict]++
	}
	m := summaryLine.FindStringSubmatch(lines[len(lines)-1])
	want := []string{strconv.Itoa(len(evs)), strconv.Itoa(counts["valid"]), strconv.Itoa(counts["invalid"]), strconv.Itoa(counts["malformed"])}
	if m == nil || strings.Join(m[1:], " ") != strings.Join(want, " ") {
		t.Fatalf("summary %q, want events valid invalid malformed = %v", lines[len(lines)-1], want)
	}
	sameAsLibsecp256k1(t, evs, lines, rows)
}

// sameAsLibsecp256k1: the rows file holds the well-formed events in order;
// the in-process check must call each valid exactly when the example found
// its signature good.
func sameAsLibsecp256k1(t *testing.T, evs []expected, lines []string, rows string) {
	cli := os.Getenv("SIGVERIFY_CLI")
	if cli == "" {
		cli, _ = filepath.Abs(filepath.Join("..", "..", "..", "build", "client", "cli", "sigverify"))
	}
	if _, err := os.Stat(cli); err != nil {
		t.Skip("no sigverify CLI (set $SIGVERIFY_CLI)")
	}
	res := rows + ".results"
	if b, err := exec.Command(cli, "verify", "--local", "--table", "schnorr", "--key-size", "0", "--in", rows, "--out", res).CombinedOutput(); err != nil {
		t.Fatalf("sigverify verify --local: %v\n%s", err, b)
	}
	judge, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	r := 0
	for i, e := range evs {
		if e.verdict == "malformed" {
			continue
		}
		if r >= len(judge) {
			t.Fatalf("only %d rows for the well-formed events", len(judge))
		}
		sigBad := strings.Contains(lines[i], "bad signature")
		if e.verdict == "valid" && judge[r] != 1 || sigBad && judge[r] != 0 {
			t.Errorf("event %d: %q, libsecp256k1 says %d", i, lines[i], judge[r])
		}
		r++
	}
	if r != len(judge) {
		t.Fatalf("%d rows written, %d well-formed events", len(judge), r)
	}
}

// No daemon: exit status 4 and a reason, no verdict.
func TestNoDaemon(t *testing.T) {
	var out, errs bytes.Buffer
	in := filepath.Join(t.TempDir(), "e.jsonl")
	os.WriteFile(in, []byte("{}\n"), 0o600)
	if code := run([]string{"-runtime-dir", t.TempDir(), in}, nil, &out, &errs); code != 4 || !strings.Contains(errs.String(), "sigverifyd") {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}

// The sample file of tests/go/test_go.sh: 3 valid, 3 invalid, 2 malformed.
func TestWriteSample(t *testing.T) {
	if *sample == "" {
		t.Skip("-sample FILE not given")
	}
	evs := testEvents(t)
	var b strings.Builder
	for _, i := range []int{0, 1, 2, 3, 5, 6, 7, 11} {
		b.WriteString(evs[i].line + "\n")
	}
	if err := os.WriteFile(*sample, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}
