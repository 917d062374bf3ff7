// SPDX-License-Identifier: MIT

// nostr-verify checks NIP-01 events in bulk through sigverifyd: it reads
// JSON lines (a relay export or an import file), recomputes each event's id,
// verifies every signature in batches through the Go client, and prints one
// verdict per event and, last, a summary:
//
//	events=N valid=V invalid=I malformed=M seconds=S events/s=R
//
// The daemon is found through SIGVERIFY_RUNTIME_DIR (or -runtime-dir).
// Usage: go run . [-quiet] [-rows FILE] [FILE]   (no FILE: standard input)
// Exit status: 0 done, 2 usage, 3 input error, 4 sigverifyd unavailable.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	sigverify "a-seed-da0336f9.example/sigverify/go"
)

const maxLine = 16 << 20 // bytes: a longer line is malformed

var chunkEvents = 16384 // events per batch (a variable: the tests cut smaller chunks)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// item is one line's outcome, printed once its chunk is verified.
type item struct {
	line   int
	id     string
	reason string // malformed: why
	row    int    // its row in the chunk's batch, -1 when malformed
	idOK   bool
}

type verifier struct {
	c                      *sigverify.Client
	out                    *bufio.Writer
	rows                   io.Writer
	quiet                  bool
	items                  []item
	msgs, keys, sigs, res  []byte
	events, valid, invalid int
	malformed              int
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("nostr-verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print the summary line only")
	rowsPath := fs.String("rows", "", "also write each well-formed event's (id, pubkey, sig) as a 128-byte BIP-340 row "+
		"(sigverify verify --local --table schnorr --key-size 0 reads them)")
	dir := fs.String("runtime-dir", "", "sigverifyd's runtime directory (default $SIGVERIFY_RUNTIME_DIR)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 1 {
		fmt.Fprintln(stderr, "usage: nostr-verify [-quiet] [-rows FILE] [-runtime-dir DIR] [FILE]")
		return 2
	}
	in := stdin
	if fs.NArg() == 1 && fs.Arg(0) != "-" {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(stderr, "nostr-verify: %v\n", err)
			return 3
		}
		defer f.Close()
		in = f
	}
	v := &verifier{out: bufio.NewWriter(stdout), quiet: *quiet}
	if *rowsPath != "" {
		f, err := os.Create(*rowsPath)
		if err != nil {
			fmt.Fprintf(stderr, "nostr-verify: %v\n", err)
			return 3
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer w.Flush()
		v.rows = w
	}
	c, err := sigverify.Dial(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "nostr-verify: %v\n", err)
		return 4
	}
	defer c.Close()
	v.c = c
	start := time.Now()
	code := v.readAll(in, stderr)
	secs := time.Since(start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(v.events) / secs
	}
	fmt.Fprintf(v.out, "events=%d valid=%d invalid=%d malformed=%d seconds=%.3f events/s=%.0f\n",
		v.events, v.valid, v.invalid, v.malformed, secs, rate)
	v.out.Flush()
	return code
}

// readAll verifies every line, a chunk at a time.
func (v *verifier) readAll(in io.Reader, stderr io.Writer) int {
	r := bufio.NewReaderSize(in, 1<<20)
	for n := 1; ; n++ {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) != 0 || errors.Is(err, errLong) {
			v.add(n, line, err)
		}
		if len(v.items) == chunkEvents || (err != nil && !errors.Is(err, errLong)) {
			if ferr := v.flush(); ferr != nil {
				fmt.Fprintf(stderr, "nostr-verify: %v\n", ferr)
				return 4
			}
		}
		if err == io.EOF {
			return 0
		}
		if err != nil && !errors.Is(err, errLong) {
			fmt.Fprintf(stderr, "nostr-verify: %v\n", err)
			return 3
		}
	}
}

var errLong = errors.New("line longer than 16 MiB")

// readLine is the next line without its newline; a line over maxLine is
// skipped to its end and reported as errLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) > maxLine {
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, errLong
		}
		line = append(line, part...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// add parses a line into the chunk: a row of the batch, or a malformed item.
func (v *verifier) add(n int, line []byte, readErr error) {
	it := item{line: n, id: "-", row: -1}
	var ev *event
	var err error = readErr
	if err == nil || err == io.EOF {
		ev, err = parseEvent(line)
	}
	if err != nil {
		it.reason = err.Error()
		v.items = append(v.items, it)
		return
	}
	id := computeID(ev)
	it.id, it.idOK, it.row = ev.idHex, bytes.Equal(id[:], ev.id), len(v.msgs)/32
	v.msgs, v.keys, v.sigs = append(v.msgs, ev.id...), append(v.keys, ev.pubkey...), append(v.sigs, ev.sig...)
	v.items = append(v.items, it)
}

// flush verifies the chunk's signatures in one batch and prints its verdicts.
func (v *verifier) flush() error {
	n := len(v.msgs) / 32
	if cap(v.res) < n {
		v.res = make([]byte, n)
	}
	res := v.res[:n]
	if _, err := v.c.VerifySchnorrBatch(context.Background(), v.msgs, v.keys, v.sigs, res); err != nil {
		return err
	}
	if v.rows != nil {
		for i := 0; i < n; i++ {
			v.rows.Write(v.msgs[i*32 : (i+1)*32])
			v.rows.Write(v.keys[i*32 : (i+1)*32])
			v.rows.Write(v.sigs[i*64 : (i+1)*64])
		}
	}
	for _, it := range v.items {
		v.events++
		verdict := "valid"
		switch {
		case it.row < 0:
			v.malformed++
			verdict = "malformed: " + it.reason
		case !it.idOK:
			v.invalid++
			verdict = "invalid: id is not the hash of the event"
		case res[it.row] != 1:
			v.invalid++
			verdict = "invalid: bad signature"
		default:
			v.valid++
		}
		if !v.quiet {
			fmt.Fprintf(v.out, "%d\t%s\t%s\n", it.line, it.id, verdict)
		}
	}
	v.items, v.msgs, v.keys, v.sigs = v.items[:0], v.msgs[:0], v.keys[:0], v.sigs[:0]
	return nil
}
