// SPDX-License-Identifier: MIT

package sigverify

// Connecting (docs/protocol.md §1): the SOCK_SEQPACKET control socket, the
// HelloRequest, the HelloReply with the segment's descriptor (SCM_RIGHTS),
// the mapping and its header check, the MappedAck. The connect and the
// whole handshake are bounded by the connect timeout (and the caller's
// context); nothing is locked meanwhile. Every byte the daemon sends is
// checked before it is used, and every failure closes what was opened.

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// maxSegmentSize bounds what a reply may announce (as libsigverify: the
// largest arena plus 16 MiB for header and rings).
const maxSegmentSize = maxArenaSize + 1<<24

// dialed is a handshake's outcome: the socket and the checked mapping.
type dialed struct {
	conn           *net.UnixConn
	mem            []byte
	hdr            header
	sqTail, cqHead uint32 // the client's ring indices as the daemon left them
}

func dialError(s Status, format string, args ...interface{}) *Error {
	return newError("dial", s, statusKind(s), format, args...)
}

// connect opens the control socket before the deadline. A full listen
// backlog (EAGAIN on a non-blocking unix connect) is retried until then.
func connect(ctx context.Context, path string, deadline time.Time) (*net.UnixConn, error) {
	for {
		d := net.Dialer{Deadline: deadline}
		c, err := d.DialContext(ctx, "unixpacket", path)
		if err == nil {
			return c.(*net.UnixConn), nil
		}
		switch {
		case errors.Is(err, syscall.EAGAIN) && time.Now().Add(5*time.Millisecond).Before(deadline):
			select {
			case <-time.After(5 * time.Millisecond):
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case errors.Is(err, syscall.EAGAIN):
			return nil, dialError(StatusTimeout, "sigverifyd at %s accepted no connection in time (listen backlog full)", path)
		case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
			return nil, dialError(StatusPermissionDenied, "cannot connect to %s: %v", path, err)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case isTimeout(err):
			return nil, dialError(StatusTimeout, "connecting to %s timed out", path)
		}
		return nil, dialError(StatusUnreachable, "no sigverifyd at %s: %v", path, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// handshake connects to dir's daemon and maps the segment it hands over.
func handshake(ctx context.Context, cfg *config) (*dialed, error) {
	path := filepath.Join(cfg.runtimeDir, "sigverifyd.sock")
	if len(path) >= 108 {
		return nil, dialError(StatusInvalidArgument, "socket path too long: %s", path)
	}
	deadline := time.Now().Add(cfg.connectTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c, err := connect(ctx, path, deadline)
	if err != nil {
		return nil, err
	}
	// The caller's context ends the handshake too: a deadline now.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			_ = c.SetDeadline(time.Unix(1, 0))
		case <-stop:
		}
	}()
	d, err := exchange(c, cfg, path, deadline)
	if err != nil {
		_ = c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return d, nil
}

func helloRequest(cfg *config) []byte {
	p := make([]byte, helloSize)
	le := binary.LittleEndian
	le.PutUint32(p[0:], helloMagic)
	le.PutUint32(p[4:], cfg.protocol)
	le.PutUint64(p[8:], cfg.arenaSize)
	le.PutUint32(p[16:], cfg.ringEntries)
	name := cfg.name
	if name == "" {
		name = "go-pid-" + strconv.Itoa(os.Getpid())
	}
	if len(name) > clientNameLen-1 {
		name = name[:clientNameLen-1]
	}
	copy(p[24:], name)
	return p
}

// receiveReply reads the HelloReply and keeps the first descriptor passed
// with it (-1 when none); any other is closed at once.
func receiveReply(c *net.UnixConn, buf []byte) (n, fd int, err error) {
	oob := make([]byte, syscall.CmsgSpace(8*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	fd = -1
	if oobn > 0 {
		msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
		if perr == nil {
			for i := range msgs {
				fds, _ := syscall.ParseUnixRights(&msgs[i])
				for _, f := range fds {
					if fd < 0 {
						fd = f
						syscall.CloseOnExec(f)
					} else {
						_ = syscall.Close(f)
					}
				}
			}
		}
	}
	return n, fd, err
}

// exchange is the handshake on a connected socket.
func exchange(c *net.UnixConn, cfg *config, path string, deadline time.Time) (*dialed, error) {
	_ = c.SetDeadline(deadline)
	// A refusing daemon may have answered and closed already: a failed send
	// is not the error, the queued reply says what happened.
	_, _ = c.Write(helloRequest(cfg))
	buf := make([]byte, replySize+1)
	n, fd, err := receiveReply(c, buf)
	if fd >= 0 {
		defer syscall.Close(fd)
	}
	if errors.Is(err, io.EOF) {
		n, err = 0, nil
	}
	switch {
	case err != nil && isTimeout(err):
		return nil, dialError(StatusTimeout, "sigverifyd at %s did not answer the handshake in time", path)
	case err != nil && n == 0:
		return nil, dialError(StatusUnreachable, "handshake with sigverifyd at %s failed: %v", path, err)
	case n == 0:
		return nil, dialError(StatusHandshake, "sigverifyd at %s closed the connection during the handshake", path)
	}
	le := binary.LittleEndian
	if n != replySize || le.Uint32(buf[0:]) != replyMagic {
		return nil, dialError(StatusHandshake, "malformed handshake reply from %s (%d bytes)", path, n)
	}
	if st := Status(le.Uint32(buf[8:])); st != StatusOK {
		if st >= statusCount {
			st = StatusHandshake
		}
		return nil, dialError(st, "sigverifyd refused the connection: %s", readText(buf[40:40+errorTextLen]))
	}
	if fd < 0 {
		return nil, dialError(StatusHandshake, "sigverifyd did not pass the shared segment")
	}
	return mapSegment(c, fd, le.Uint64(buf[16:]), le.Uint64(buf[24:]))
}

// mapSegment maps and checks the passed segment, and answers the MappedAck.
func mapSegment(c *net.UnixConn, fd int, size, epoch uint64) (*dialed, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, dialError(StatusSystemError, "fstat of the segment: %v", err)
	}
	if size < headerSize || size > maxSegmentSize || uint64(st.Size) < size {
		return nil, dialError(StatusBadSegment, "shared segment has the wrong size (%d announced, %d bytes)", size, st.Size)
	}
	mem, err := syscall.Mmap(fd, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, dialError(StatusSystemError, "mmap of the segment: %v", err)
	}
	nack := func(format string, args ...interface{}) (*dialed, error) {
		ack := make([]byte, ackSize)
		binary.LittleEndian.PutUint32(ack[0:], ackMagic)
		binary.LittleEndian.PutUint32(ack[4:], uint32(StatusBadSegment))
		_, _ = c.Write(ack)
		_ = syscall.Munmap(mem)
		e := dialError(StatusBadSegment, "invalid shared segment: "+format, args...)
		return nil, e
	}
	h, sqTail, cqHead, ferr := checkMapped(mem, size)
	switch {
	case ferr != "":
		return nack("%s", ferr)
	case h.epoch != epoch:
		return nack("epoch differs from the handshake")
	case h.abiMinor < abiMinorColumns:
		_ = syscall.Munmap(mem)
		return nil, newError("dial", StatusBadEntry, ErrIncompatible,
			"sigverifyd speaks ring ABI %d.%d; this client needs %d.%d", h.abiMajor, h.abiMinor, abiMajor, abiMinorColumns)
	}
	ack := make([]byte, ackSize)
	binary.LittleEndian.PutUint32(ack[0:], ackMagic)
	if k, err := c.Write(ack); err != nil || k != ackSize {
		_ = syscall.Munmap(mem)
		return nil, dialError(StatusDisconnected, "sigverifyd closed the connection after the handshake")
	}
	_ = c.SetDeadline(time.Time{})
	return &dialed{conn: c, mem: mem, hdr: h, sqTail: sqTail, cqHead: cqHead}, nil
}

// checkMapped reads the header of a fresh mapping: the reason it is refused,
// or "". A fault (the file shrank under us) is a refusal too.
func checkMapped(mem []byte, size uint64) (h header, sqTail, cqHead uint32, why string) {
	defer func() {
		if r := recover(); r != nil {
			if !isMemoryFault(r) {
				panic(r)
			}
			why = "the segment shrank while it was read"
		}
	}()
	defer setPanicOnFault()()
	if wordAt(mem, hState).load() != stateReady {
		return h, 0, 0, "not ready"
	}
	h = readHeader(mem)
	if err := h.check(size); err != nil {
		return h, 0, 0, err.Error()
	}
	return h, wordAt(mem, hSqTail).load(), wordAt(mem, hCqHead).load(), ""
}
