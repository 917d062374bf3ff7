// SPDX-License-Identifier: MIT

package sigverify_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sigverify "a-seed-da0336f9.example/sigverify/go"
	"a-seed-da0336f9.example/sigverify/go/internal/libsecp256k1"
)

func dial(t testing.TB, dir string, opts ...sigverify.Option) *sigverify.Client {
	t.Helper()
	c, err := sigverify.Dial(dir, opts...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Generated rows, a third of them invalid, verified through the daemon:
// every verdict is libsecp256k1's, with and without a results slice.
func TestSchnorrBatchMatchesLibsecp256k1(t *testing.T) {
	needLibsecp(t)
	d := startDaemon(t, "")
	tb := gen(t, "schnorr", "", 3000, 0.3, 7)
	c := dial(t, d.dir)
	got := make([]byte, tb.n+5) // longer than the batch: only n bytes are written
	for i := range got {
		got[i] = 9
	}
	all, err := c.VerifySchnorrBatch(context.Background(), tb.msgs, tb.keys, tb.sigs, got)
	if err != nil {
		t.Fatal(err)
	}
	sameVerdicts(t, "schnorr", got[:tb.n], tb.want)
	if !bytes.Equal(got[tb.n:], []byte{9, 9, 9, 9, 9}) {
		t.Fatalf("bytes past the batch written: %v", got[tb.n:])
	}
	if all || tb.allValid() {
		t.Fatalf("allValid %v with invalid rows", all)
	}
	if all, err = c.VerifySchnorrBatch(context.Background(), tb.msgs, tb.keys, tb.sigs, nil); err != nil || all {
		t.Fatalf("counts only: %v %v", all, err)
	}
	// The valid rows alone: allValid.
	var m, k, s []byte
	for i := 0; i < tb.n; i++ {
		if tb.want[i] == 1 {
			m, k, s = append(m, tb.msgs[i*32:(i+1)*32]...), append(k, tb.keys[i*32:(i+1)*32]...), append(s, tb.sigs[i*64:(i+1)*64]...)
		}
	}
	if all, err = c.VerifySchnorrBatch(context.Background(), m, k, s, nil); err != nil || !all {
		t.Fatalf("valid rows only: %v %v", all, err)
	}
}

// Both ECDSA encodings, high-S rows among them (valid by consensus).
func TestECDSABatchEncodings(t *testing.T) {
	needLibsecp(t)
	d := startDaemon(t, "")
	c := dial(t, d.dir)
	for _, f := range []struct {
		name string
		enc  sigverify.SigEncoding
	}{{"compact", sigverify.Compact}, {"opaque", sigverify.Opaque}} {
		tb := gen(t, "ecdsa", f.name, 2000, 0.25, 3)
		got := make([]byte, tb.n)
		if _, err := c.VerifyECDSABatch(context.Background(), tb.msgs, tb.keys, tb.sigs, got, f.enc); err != nil {
			t.Fatal(err)
		}
		sameVerdicts(t, "ecdsa "+f.name, got, tb.want)
		// The same rows one at a time, coalesced.
		for i := 0; i < 200; i++ {
			ok, err := c.VerifyECDSA(context.Background(), tb.msgs[i*32:(i+1)*32], tb.keys[i*33:(i+1)*33], tb.sigs[i*64:(i+1)*64], f.enc)
			if err != nil || ok != (tb.want[i] == 1) {
				t.Fatalf("VerifyECDSA %s row %d: %v %v, want %d", f.name, i, ok, err, tb.want[i])
			}
		}
	}
}

type vector struct {
	key, msg, sig []byte
	want          bool
	index         string
}

// bip340Vectors reads the official vectors (tests/vectors/bip340); the ones
// whose message is not 32 bytes are not rows of the ring ABI.
func bip340Vectors(t *testing.T) []vector {
	f, err := os.Open(filepath.Join("..", "tests", "vectors", "bip340", "test-vectors.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []vector
	for _, r := range recs[1:] {
		key, _ := hex.DecodeString(r[2])
		msg, _ := hex.DecodeString(r[4])
		sig, _ := hex.DecodeString(r[5])
		if len(msg) != 32 || len(key) != 32 || len(sig) != 64 {
			continue
		}
		out = append(out, vector{key: key, msg: msg, sig: sig, want: r[6] == "TRUE", index: r[0]})
	}
	if len(out) < 15 {
		t.Fatalf("only %d usable BIP-340 vectors", len(out))
	}
	return out
}

func TestBIP340Vectors(t *testing.T) {
	d := startDaemon(t, "")
	c := dial(t, d.dir)
	vs := bip340Vectors(t)
	var m, k, s []byte
	for _, v := range vs {
		ok, err := c.VerifySchnorr(context.Background(), v.msg, v.key, v.sig)
		if err != nil || ok != v.want {
			t.Errorf("vector %s: %v %v, want %v", v.index, ok, err, v.want)
		}
		m, k, s = append(m, v.msg...), append(k, v.key...), append(s, v.sig...)
	}
	got := make([]byte, len(vs))
	if _, err := c.VerifySchnorrBatch(context.Background(), m, k, s, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if (got[i] == 1) != v.want {
			t.Errorf("vector %s in a batch: %d, want %v", v.index, got[i], v.want)
		}
	}
}

// Rows no signer made: keys and signatures of garbage, of the field and
// group bounds, zeroes: libsecp256k1's verdicts (all invalid), no error.
func TestHostileRows(t *testing.T) {
	needLibsecp(t)
	d := startDaemon(t, "")
	c := dial(t, d.dir)
	p := "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f"
	n := "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
	ff := strings.Repeat("ff", 32)
	zero := strings.Repeat("00", 32)
	words := []string{p, n, ff, zero, "0000000000000000000000000000000000000000000000000000000000000001"}
	rng := rand.New(rand.NewSource(5))
	var sch, ec table
	add := func(tb *table, kw int, key, r, s string) {
		msg := make([]byte, 32)
		rng.Read(msg)
		kb, _ := hex.DecodeString(key)
		rb, _ := hex.DecodeString(r + s)
		tb.msgs, tb.keys, tb.sigs = append(tb.msgs, msg...), append(tb.keys, kb[:kw]...), append(tb.sigs, rb...)
		tb.n++
	}
	for _, a := range words {
		for _, b := range words {
			for _, key := range words {
				add(&sch, 32, key, a, b)
				for _, prefix := range []string{"02", "03", "04", "00"} {
					add(&ec, 33, prefix+key, a, b)
				}
			}
		}
	}
	for i := 0; i < 200; i++ { // random bytes
		g := make([]byte, 161)
		rng.Read(g)
		x := hex.EncodeToString(g)
		add(&sch, 32, x[:64], x[64:128], x[128:192])
		add(&ec, 33, "02"+x[:64], x[64:128], x[128:192])
	}
	sch.judge(false, false)
	got := make([]byte, sch.n)
	if _, err := c.VerifySchnorrBatch(context.Background(), sch.msgs, sch.keys, sch.sigs, got); err != nil {
		t.Fatal(err)
	}
	sameVerdicts(t, "hostile schnorr", got, sch.want)
	for _, enc := range []sigverify.SigEncoding{sigverify.Compact, sigverify.Opaque} {
		ec.judge(true, enc == sigverify.Compact)
		got = make([]byte, ec.n)
		if _, err := c.VerifyECDSABatch(context.Background(), ec.msgs, ec.keys, ec.sigs, got, enc); err != nil {
			t.Fatal(err)
		}
		sameVerdicts(t, "hostile ecdsa", got, ec.want)
	}
}

// Slices that do not make a batch: errors, never panics, nothing sent.
func TestInputErrors(t *testing.T) {
	c, err := sigverify.Dial(shortTempDir(t), sigverify.WithFallback(func(sigverify.Kind, sigverify.SigEncoding, []byte, []byte, []byte) bool {
		t.Error("fallback called for a bad batch")
		return false
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	b := func(n int) []byte { return make([]byte, n) }
	cases := []struct {
		name                string
		msgs, keys, sigs, r []byte
	}{
		{"message not a multiple of 32", b(33), b(32), b(64), nil},
		{"keys short", b(64), b(32), b(128), nil},
		{"keys long", b(32), b(64), b(64), nil},
		{"signatures short", b(64), b(64), b(127), nil},
		{"results short", b(64), b(64), b(128), b(1)},
		{"nil keys", b(32), nil, b(64), nil},
	}
	for _, tc := range cases {
		if _, err := c.VerifySchnorrBatch(ctx, tc.msgs, tc.keys, tc.sigs, tc.r); !errors.Is(err, sigverify.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", tc.name, err)
		}
	}
	if _, err := c.VerifyECDSABatch(ctx, b(32), b(32), b(64), nil, sigverify.Compact); !errors.Is(err, sigverify.ErrInvalidInput) {
		t.Errorf("ECDSA 32-byte key: %v", err)
	}
	if _, err := c.VerifyECDSABatch(ctx, b(32), b(33), b(64), nil, 7); !errors.Is(err, sigverify.ErrInvalidInput) {
		t.Errorf("unknown encoding: %v", err)
	}
	if _, err := c.VerifySchnorr(ctx, b(31), b(32), b(64)); !errors.Is(err, sigverify.ErrInvalidInput) {
		t.Errorf("single short message: %v", err)
	}
	if _, err := c.VerifyECDSA(ctx, b(32), b(32), b(64), sigverify.Compact); !errors.Is(err, sigverify.ErrInvalidInput) {
		t.Errorf("single ECDSA short key: %v", err)
	}
	if all, err := c.VerifySchnorrBatch(ctx, nil, nil, nil, nil); err != nil || !all {
		t.Errorf("empty batch: %v %v", all, err)
	}
}

// 64 goroutines of single calls, coalesced: each verdict its row's.
func TestCoalescedSingles(t *testing.T) {
	needLibsecp(t)
	d := startDaemon(t, "")
	tb := gen(t, "schnorr", "", 1024, 0.3, 11)
	c := dial(t, d.dir, sigverify.WithCoalescing(300*time.Microsecond, 256))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < tb.n; i += 64 {
				ok, err := c.VerifySchnorr(context.Background(), tb.msgs[i*32:(i+1)*32], tb.keys[i*32:(i+1)*32], tb.sigs[i*64:(i+1)*64])
				if err != nil || ok != (tb.want[i] == 1) {
					errs <- errors.New("row verdict wrong or failed")
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A cancelled context ends a long batch at once; the session goes on.
func TestContextCancel(t *testing.T) {
	needLibsecp(t)
	d := startDaemon(t, "", "--cpu-threads", "1")
	tb := gen(t, "schnorr", "", 500, 0, 13)
	big := 80000 // rows: seconds of verification on one worker
	m, k, s := bytes.Repeat(tb.msgs, big/tb.n), bytes.Repeat(tb.keys, big/tb.n), bytes.Repeat(tb.sigs, big/tb.n)
	c := dial(t, d.dir)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.VerifySchnorrBatch(ctx, m, k, s, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled batch: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("cancel took %v", took)
	}
	got := make([]byte, tb.n)
	if all, err := c.VerifySchnorrBatch(context.Background(), tb.msgs, tb.keys, tb.sigs, got); err != nil || !all {
		t.Fatalf("after the cancel: %v %v", all, err)
	}
	// A single call's context too.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := c.VerifySchnorr(ctx2, tb.msgs[:32], tb.keys[:32], tb.sigs[:64]); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled single call: %v", err)
	}
}

// No daemon: ErrUnavailable; with a fallback, the fallback's verdicts.
func TestNoDaemon(t *testing.T) {
	needLibsecp(t)
	dir := shortTempDir(t)
	if _, err := sigverify.Dial(dir); !errors.Is(err, sigverify.ErrUnavailable) {
		t.Fatalf("Dial without a daemon: %v", err)
	}
	tb := gen(t, "schnorr", "", 300, 0.5, 17)
	var calls int64
	c := dial(t, dir, sigverify.WithFallback(libsecpFallback(&calls)))
	got := make([]byte, tb.n)
	if _, err := c.VerifySchnorrBatch(context.Background(), tb.msgs, tb.keys, tb.sigs, got); err != nil {
		t.Fatal(err)
	}
	sameVerdicts(t, "fallback", got, tb.want)
	if calls != int64(tb.n) {
		t.Fatalf("fallback verified %d rows, want %d", calls, tb.n)
	}
	ok, err := c.VerifySchnorr(context.Background(), tb.msgs[:32], tb.keys[:32], tb.sigs[:64])
	if err != nil || ok != (tb.want[0] == 1) {
		t.Fatalf("single call through the fallback: %v %v", ok, err)
	}
}

// The daemon killed in the middle of batches and started again: no call
// reports a row invalid that is not (ErrUnavailable, or the fallback's
// verdicts); then the client reconnects by itself.
func TestDaemonKilledAndRestarted(t *testing.T) {
	needLibsecp(t)
	d := startDaemon(t, "", "--cpu-threads", "1")
	tb := gen(t, "schnorr", "", 500, 0.2, 19)
	reps := 40 // 20,000 rows: about a second on one worker
	m, k, s := bytes.Repeat(tb.msgs, reps), bytes.Repeat(tb.keys, reps), bytes.Repeat(tb.sigs, reps)
	want := bytes.Repeat(tb.want, reps)
	plain := dial(t, d.dir)
	var calls int64
	withFallback := dial(t, d.dir, sigverify.WithFallback(libsecpFallback(&calls)))
	var wg sync.WaitGroup
	var plainErr error
	var plainAll bool
	got := make([]byte, len(want))
	wg.Add(2)
	go func() {
		defer wg.Done()
		plainAll, plainErr = plain.VerifySchnorrBatch(context.Background(), m, k, s, nil)
	}()
	go func() {
		defer wg.Done()
		if _, err := withFallback.VerifySchnorrBatch(context.Background(), m, k, s, got); err != nil {
			t.Errorf("with a fallback: %v", err)
		}
	}()
	time.Sleep(150 * time.Millisecond)
	d.kill(9)
	wg.Wait()
	if !errors.Is(plainErr, sigverify.ErrUnavailable) || plainAll {
		t.Fatalf("batch under a killed daemon: all=%v err=%v, want ErrUnavailable", plainAll, plainErr)
	}
	sameVerdicts(t, "fallback after the kill", got, want)
	if calls == 0 {
		t.Fatal("the fallback verified nothing: the kill came too late")
	}
	if _, err := plain.VerifySchnorrBatch(context.Background(), tb.msgs, tb.keys, tb.sigs, nil); !errors.Is(err, sigverify.ErrUnavailable) {
		t.Fatalf("no daemon: %v", err)
	}
	d.restart()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := make([]byte, tb.n)
		_, err := plain.VerifySchnorrBatch(context.Background(), tb.msgs, tb.keys, tb.sigs, res)
		if err == nil {
			sameVerdicts(t, "after the restart", res, tb.want)
			break
		}
		if !errors.Is(err, sigverify.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A daemon that stops (SIGTERM) under a batch: verdicts or ErrUnavailable.
func TestDaemonStopsUnderBatch(t *testing.T) {
	needLibsecp(t)
	d := startDaemon(t, "", "--cpu-threads", "1")
	tb := gen(t, "schnorr", "", 500, 0.2, 23)
	reps := 20
	m, k, s := bytes.Repeat(tb.msgs, reps), bytes.Repeat(tb.keys, reps), bytes.Repeat(tb.sigs, reps)
	c := dial(t, d.dir)
	got := make([]byte, len(m)/32)
	done := make(chan error, 1)
	go func() {
		_, err := c.VerifySchnorrBatch(context.Background(), m, k, s, got)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	d.kill(15)
	err := <-done
	if err == nil {
		sameVerdicts(t, "stopped daemon", got, bytes.Repeat(tb.want, reps))
	} else if !errors.Is(err, sigverify.ErrUnavailable) {
		t.Fatalf("stopped daemon: %v", err)
	}
}

// Close with calls in flight: they end with ErrClosed, not a verdict.
func TestCloseUnderCalls(t *testing.T) {
	d := startDaemon(t, "", "--cpu-threads", "1")
	tb := gen(t, "schnorr", "", 500, 0, 29)
	m, k, s := bytes.Repeat(tb.msgs, 160), bytes.Repeat(tb.keys, 160), bytes.Repeat(tb.sigs, 160)
	c, err := sigverify.Dial(d.dir)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 9)
	go func() {
		_, err := c.VerifySchnorrBatch(context.Background(), m, k, s, nil)
		errs <- err
	}()
	for g := 0; g < 8; g++ {
		go func() {
			var err error
			for err == nil {
				_, err = c.VerifySchnorr(context.Background(), tb.msgs[:32], tb.keys[:32], tb.sigs[:64])
			}
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond)
	c.Close()
	for i := 0; i < 9; i++ {
		if err := <-errs; !errors.Is(err, sigverify.ErrClosed) {
			t.Fatalf("call under Close: %v", err)
		}
	}
	if _, err := c.VerifySchnorrBatch(context.Background(), tb.msgs, tb.keys, tb.sigs, nil); !errors.Is(err, sigverify.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// The default client finds the daemon through $SIGVERIFY_RUNTIME_DIR.
func TestDefaultClient(t *testing.T) {
	d := startDaemon(t, "")
	t.Setenv("SIGVERIFY_RUNTIME_DIR", d.dir)
	if got := sigverify.DefaultRuntimeDir(); got != d.dir {
		t.Fatalf("DefaultRuntimeDir %q", got)
	}
	c, err := sigverify.Default()
	if err != nil {
		t.Fatal(err)
	}
	vs := bip340Vectors(t)
	ok, err := c.VerifySchnorr(context.Background(), vs[0].msg, vs[0].key, vs[0].sig)
	if err != nil || !ok {
		t.Fatalf("default client: %v %v", ok, err)
	}
	if again, _ := sigverify.Default(); again != c {
		t.Fatal("Default made a second client")
	}
	c.Close()
	again, err := sigverify.Default()
	if err != nil || again == c {
		t.Fatalf("Default after Close: %v (the same client: %v)", err, again == c)
	}
	again.Close()
}

// A batch call allocates nothing: neither the call nor the session's
// goroutines.
func TestBatchAllocations(t *testing.T) {
	d := startDaemon(t, "")
	tb := gen(t, "schnorr", "", 1000, 0.1, 31)
	c := dial(t, d.dir)
	res := make([]byte, tb.n)
	ctx := context.Background()
	if _, err := c.VerifySchnorrBatch(ctx, tb.msgs, tb.keys, tb.sigs, res); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(20, func() {
		if _, err := c.VerifySchnorrBatch(ctx, tb.msgs, tb.keys, tb.sigs, res); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per batch call, want 0", n)
	}
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	if n = testing.AllocsPerRun(20, func() { _, _ = c.VerifySchnorrBatch(ctx2, tb.msgs, tb.keys, tb.sigs, nil) }); n != 0 {
		t.Fatalf("%v allocations per batch call with a cancellable context, want 0", n)
	}
	_ = libsecp256k1.Available
}
