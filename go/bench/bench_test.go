// SPDX-License-Identifier: MIT

package bench

// One op is one signature in every row, so the figures compare directly:
//   libsecp256k1-cgo        one verify call per signature, one goroutine
//   VerifySchnorr/g=1       a coalesced single call from one goroutine
//   VerifySchnorr/g=64      the same from 64 goroutines at once
//   batch=1000, =65536      VerifySchnorrBatch, amortized per signature
// and the ECDSA twins. The daemon: $SIGVERIFY_RUNTIME_DIR's when one
// answers there (a GPU host's), else a private one ($SIGVERIFYD or the build
// tree's, all cores). After the run the ratios to the cgo row and the goals
// of docs/go.md are printed.

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sigverify "a-seed-da0336f9.example/sigverify/go"
	"a-seed-da0336f9.example/sigverify/go/internal/libsecp256k1"
)

const unique = 4096 // distinct signed rows; larger batches repeat them

type rows struct {
	kind             sigverify.Kind
	msgs, keys, sigs []byte
}

func (r *rows) keyWidth() int {
	if r.kind == sigverify.Schnorr {
		return 32
	}
	return 33
}

// signed makes n rows from `unique` signatures by libsecp256k1.
func signed(kind sigverify.Kind, n int) *rows {
	r := &rows{kind: kind}
	seckey, msg, aux := make([]byte, 32), make([]byte, 32), make([]byte, 32)
	for i := 0; i < unique; i++ {
		binary.BigEndian.PutUint64(seckey[24:], uint64(i+1)*0x9e3779b97f4a7c15|1)
		binary.BigEndian.PutUint64(msg[24:], uint64(i))
		var key, sig []byte
		if kind == sigverify.Schnorr {
			key, sig = libsecp256k1.SignSchnorr(seckey, msg, aux)
		} else {
			key, sig = libsecp256k1.SignECDSA(seckey, msg)
		}
		r.msgs, r.keys, r.sigs = append(r.msgs, msg...), append(r.keys, key...), append(r.sigs, sig...)
	}
	for len(r.msgs) < n*32 {
		r.msgs, r.keys, r.sigs = append(r.msgs, r.msgs...), append(r.keys, r.keys...), append(r.sigs, r.sigs...)
	}
	kw := r.keyWidth()
	r.msgs, r.keys, r.sigs = r.msgs[:n*32], r.keys[:n*kw], r.sigs[:n*64]
	return r
}

func (r *rows) row(i int) (m, k, s []byte) {
	i %= len(r.msgs) / 32
	kw := r.keyWidth()
	return r.msgs[i*32 : (i+1)*32], r.keys[i*kw : (i+1)*kw], r.sigs[i*64 : (i+1)*64]
}

var (
	setup     sync.Once
	client    *sigverify.Client
	setupErr  error
	daemonCmd *exec.Cmd
	daemonDir string
	data      = map[sigverify.Kind]*rows{}
	figures   = map[string]float64{} // ns per signature of each benchmark's last run
	lastN     = map[string]int{}     // the b.N of that run
	figuresMu sync.Mutex
	device    string
)

// connect finds or starts the daemon, once.
func connect(b *testing.B) *sigverify.Client {
	if !libsecp256k1.Available {
		b.Skip("built without cgo")
	}
	setup.Do(func() {
		if dir := os.Getenv("SIGVERIFY_RUNTIME_DIR"); dir != "" {
			if client, setupErr = sigverify.Dial(dir); setupErr == nil {
				device = "the daemon of " + dir
			}
		}
		if client == nil {
			client, setupErr = startPrivate()
		}
		data[sigverify.Schnorr] = signed(sigverify.Schnorr, 65536)
		data[sigverify.ECDSA] = signed(sigverify.ECDSA, 65536)
	})
	if setupErr != nil {
		b.Skip(setupErr)
	}
	return client
}

func startPrivate() (*sigverify.Client, error) {
	bin := os.Getenv("SIGVERIFYD")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", "build", "daemon", "sigverifyd"))
	}
	dir, err := os.MkdirTemp("", "svbench")
	if err != nil {
		return nil, err
	}
	daemonDir = dir
	daemonCmd = exec.Command(bin, "--foreground", "--runtime-dir", dir, "--log-file", filepath.Join(dir, "log"))
	if err := daemonCmd.Start(); err != nil {
		return nil, fmt.Errorf("no sigverifyd to benchmark (set $SIGVERIFYD or $SIGVERIFY_RUNTIME_DIR): %v", err)
	}
	for i := 0; i < 400; i++ {
		if _, err := os.Stat(filepath.Join(dir, "sigverifyd.sock")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	device = fmt.Sprintf("a private sigverifyd (CPU backend, %d cores)", runtime.NumCPU())
	return sigverify.Dial(dir)
}

// record keeps the ns per signature of the benchmark's run (the last run,
// with the largest b.N, is the one printed).
func record(b *testing.B, start time.Time) {
	figuresMu.Lock()
	figures[b.Name()] = float64(time.Since(start).Nanoseconds()) / float64(b.N)
	lastN[b.Name()] = b.N
	figuresMu.Unlock()
}

func cgoVerify(r *rows, i int) bool {
	m, k, s := r.row(i)
	if r.kind == sigverify.Schnorr {
		return libsecp256k1.VerifySchnorr(m, k, s)
	}
	return libsecp256k1.VerifyECDSA(m, k, s, true)
}

func single(c *sigverify.Client, r *rows, i int) (bool, error) {
	m, k, s := r.row(i)
	if r.kind == sigverify.Schnorr {
		return c.VerifySchnorr(context.Background(), m, k, s)
	}
	return c.VerifyECDSA(context.Background(), m, k, s, sigverify.Compact)
}

func benchKind(b *testing.B, kind sigverify.Kind) {
	c := connect(b)
	r := data[kind]
	b.Run("libsecp256k1-cgo", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if !cgoVerify(r, i) {
				b.Fatal("invalid")
			}
		}
		record(b, start)
	})
	b.Run(fmt.Sprintf("Verify%s/g=1", kindName(kind)), func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if ok, err := single(c, r, i); err != nil || !ok {
				b.Fatalf("row %d: %v %v", i, ok, err)
			}
		}
		record(b, start)
	})
	b.Run(fmt.Sprintf("Verify%s/g=64", kindName(kind)), func(b *testing.B) {
		b.ReportAllocs()
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((64 + procs - 1) / procs) // 64 goroutines (GOMAXPROCS divides 64)
		var next int64
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			i := int(atomic.AddInt64(&next, 7919))
			for pb.Next() {
				if ok, err := single(c, r, i); err != nil || !ok {
					b.Errorf("row %d: %v %v", i, ok, err)
					return
				}
				i++
			}
		})
		record(b, start)
	})
	for _, n := range []int{1000, 65536} {
		n := n
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			res := make([]byte, n)
			kw := r.keyWidth()
			m, k, s := r.msgs[:n*32], r.keys[:n*kw], r.sigs[:n*64]
			start := time.Now()
			for done := 0; done < b.N; done += n {
				rows := n // b.N signatures in all: the last batch takes the rest
				if b.N-done < rows {
					rows = b.N - done
				}
				var all bool
				var err error
				if kind == sigverify.Schnorr {
					all, err = c.VerifySchnorrBatch(context.Background(), m[:rows*32], k[:rows*kw], s[:rows*64], res[:rows])
				} else {
					all, err = c.VerifyECDSABatch(context.Background(), m[:rows*32], k[:rows*kw], s[:rows*64], res[:rows], sigverify.Compact)
				}
				if err != nil || !all {
					b.Fatalf("batch: %v %v", all, err)
				}
			}
			record(b, start)
		})
	}
}

func kindName(k sigverify.Kind) string {
	if k == sigverify.Schnorr {
		return "Schnorr"
	}
	return "ECDSA"
}

func BenchmarkSchnorr(b *testing.B) { benchKind(b, sigverify.Schnorr) }
func BenchmarkECDSA(b *testing.B)   { benchKind(b, sigverify.ECDSA) }

func TestMain(m *testing.M) {
	code := m.Run()
	summary()
	if client != nil {
		client.Close()
	}
	if daemonCmd != nil {
		_ = daemonCmd.Process.Signal(os.Interrupt)
		_, _ = daemonCmd.Process.Wait()
	}
	if daemonDir != "" {
		os.RemoveAll(daemonDir)
	}
	os.Exit(code)
}

// summary prints each figure's ratio to the cgo row and the goals.
func summary() {
	if len(figures) == 0 {
		return
	}
	for _, n := range lastN {
		if n < 1000 {
			fmt.Println("\n(runs too short for ratios: -benchtime 1x is a smoke run)")
			return
		}
	}
	cores := float64(runtime.NumCPU())
	fmt.Printf("\nsigverify Go client against %s; ratios to libsecp256k1 through cgo, one core:\n", device)
	names := make([]string, 0, len(figures))
	for n := range figures {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		base := figures[strings.SplitN(n, "/", 2)[0]+"/libsecp256k1-cgo"]
		if base == 0 {
			continue
		}
		fmt.Printf("  %-40s %10.0f ns/sig  %6.2fx the cgo call\n", n, figures[n], base/figures[n])
	}
	for _, k := range []string{"BenchmarkSchnorr", "BenchmarkECDSA"} {
		base, big := figures[k+"/libsecp256k1-cgo"], figures[k+"/batch=65536"]
		g64 := figures[k+"/Verify"+k[len("Benchmark"):]+"/g=64"]
		if base == 0 || big == 0 {
			continue
		}
		goal := base / cores * 1.1
		fmt.Printf("  %s goal: batch=65536 <= cgo/%d cores x 1.1 = %.0f ns: %.0f ns (%s); g=64 <= 1.3 x batch = %.0f ns: %.0f ns (%s)\n",
			k, int(cores), goal, big, verdict(big <= goal, big/goal), 1.3*big, g64, verdict(g64 <= 1.3*big, g64/(1.3*big)))
	}
}

func verdict(met bool, ratio float64) string {
	if met {
		return "met"
	}
	return fmt.Sprintf("missed by %.2fx", ratio)
}
