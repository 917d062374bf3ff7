// SPDX-License-Identifier: MIT

package sigverify_test

// A real sigverifyd for the tests: the binary CMake names in $SIGVERIFYD
// (tests/go/test_go.sh), else the build tree's; rows signed by
// `sigverify gen` ($SIGVERIFY_CLI). Without them the tests that need a
// daemon skip.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sigverify "a-seed-da0336f9.example/sigverify/go"
	"a-seed-da0336f9.example/sigverify/go/internal/libsecp256k1"
)

func tool(t testing.TB, env, rel string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	p, _ := filepath.Abs(filepath.Join("..", "build", rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no %s (set $%s)", rel, env)
	}
	return p
}

func needLibsecp(t testing.TB) {
	if !libsecp256k1.Available {
		t.Skip("built without cgo: no libsecp256k1 to compare with")
	}
}

type daemon struct {
	t    testing.TB
	dir  string
	cmd  *exec.Cmd
	args []string
}

// startDaemon runs sigverifyd on a fresh runtime directory (or dir).
func startDaemon(t testing.TB, dir string, args ...string) *daemon {
	bin := tool(t, "SIGVERIFYD", "daemon/sigverifyd")
	if dir == "" {
		dir = shortTempDir(t)
	}
	d := &daemon{t: t, dir: dir}
	d.start(bin, args...)
	t.Cleanup(d.stop)
	return d
}

// shortTempDir is a directory with a path short enough for a socket.
func shortTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "svgo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (d *daemon) start(bin string, args ...string) {
	sock := filepath.Join(d.dir, "sigverifyd.sock")
	_ = os.Remove(sock)
	all := []string{"--foreground", "--runtime-dir", d.dir, "--log-file", filepath.Join(d.dir, "daemon.log")}
	threads := true
	for _, a := range args {
		threads = threads && a != "--cpu-threads"
	}
	if threads {
		all = append(all, "--cpu-threads", "2")
	}
	all = append(all, args...)
	d.args = args
	d.cmd = exec.Command(bin, all...)
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		if _, err := os.Stat(sock); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.t.Fatalf("sigverifyd did not come up in %s", d.dir)
}

// restart starts the daemon again with the arguments of its last start.
func (d *daemon) restart() { d.start(tool(d.t, "SIGVERIFYD", "daemon/sigverifyd"), d.args...) }

// kill ends the daemon with sig and waits for it.
func (d *daemon) kill(sig syscall.Signal) {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(sig)
	_, _ = d.cmd.Process.Wait()
	d.cmd = nil
}

func (d *daemon) stop() { d.kill(syscall.SIGTERM) }

// table is a set of rows split into columns, with libsecp256k1's verdicts.
type table struct {
	n                int
	msgs, keys, sigs []byte
	want             []byte
}

// gen signs rows with `sigverify gen` and splits them into columns.
func gen(t testing.TB, kind, sigFormat string, count int, invalid float64, seed int) *table {
	cli := tool(t, "SIGVERIFY_CLI", "client/cli/sigverify")
	out := filepath.Join(t.TempDir(), kind+".rows")
	args := []string{"gen", "--table", kind, "--count", strconv.Itoa(count), "--key-size", "0",
		"--invalid-rate", strconv.FormatFloat(invalid, 'f', -1, 64), "--seed", strconv.Itoa(seed), "--out", out}
	if kind == "ecdsa" {
		args = append(args, "--sig-format", sigFormat, "--high-s-rate", "0.2")
	}
	if b, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("sigverify gen: %v\n%s", err, b)
	}
	rows, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	kw, stride := 32, 128
	if kind == "ecdsa" {
		kw, stride = 33, 129
	}
	if len(rows) != count*stride {
		t.Fatalf("gen wrote %d bytes, want %d", len(rows), count*stride)
	}
	tb := &table{n: count}
	for i := 0; i < count; i++ {
		r := rows[i*stride:]
		tb.msgs = append(tb.msgs, r[:32]...)
		tb.keys = append(tb.keys, r[32:32+kw]...)
		tb.sigs = append(tb.sigs, r[32+kw:stride]...)
	}
	tb.judge(kind == "ecdsa", sigFormat == "compact")
	return tb
}

// judge fills want with libsecp256k1's verdicts, row by row.
func (tb *table) judge(ecdsa, compact bool) {
	tb.want = make([]byte, tb.n)
	if !libsecp256k1.Available {
		return
	}
	kw := 32
	if ecdsa {
		kw = 33
	}
	for i := 0; i < tb.n; i++ {
		m, k, s := tb.msgs[i*32:(i+1)*32], tb.keys[i*kw:(i+1)*kw], tb.sigs[i*64:(i+1)*64]
		ok := false
		if ecdsa {
			ok = libsecp256k1.VerifyECDSA(m, k, s, compact)
		} else {
			ok = libsecp256k1.VerifySchnorr(m, k, s)
		}
		if ok {
			tb.want[i] = 1
		}
	}
}

func (tb *table) allValid() bool {
	for _, v := range tb.want {
		if v != 1 {
			return false
		}
	}
	return true
}

// sameVerdicts fails the test on the first row whose verdict differs.
func sameVerdicts(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d verdicts, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d: verdict %d, libsecp256k1 says %d", what, i, got[i], want[i])
		}
	}
}

// libsecpFallback is a Fallback through libsecp256k1 that counts its rows.
func libsecpFallback(counter *int64) sigverify.Fallback {
	return func(k sigverify.Kind, enc sigverify.SigEncoding, msg, key, sig []byte) bool {
		atomic.AddInt64(counter, 1)
		if k == sigverify.Schnorr {
			return libsecp256k1.VerifySchnorr(msg, key, sig)
		}
		return libsecp256k1.VerifyECDSA(msg, key, sig, enc == sigverify.Compact)
	}
}
