// SPDX-License-Identifier: MIT

package main

// NIP-01 events: the fields a line must have, and the id, the SHA-256 of the
// canonical serialization [0,pubkey,created_at,kind,tags,content] with no
// whitespace, strings escaped as NIP-01 says: \n \" \\ \r \t \b \f and
// every other character verbatim (UTF-8).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

type event struct {
	id, pubkey, sig []byte // decoded hex: 32, 32, 64 bytes
	idHex           string
	createdAt       uint64
	kind            uint64
	tags            [][]string
	content         string
}

// parseEvent reads one line: a JSON object with the seven fields of NIP-01
// (others are ignored); an error says what is wrong with it.
func parseEvent(line []byte) (*event, error) {
	if !utf8.Valid(line) {
		return nil, errors.New("not UTF-8")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	ev := &event{}
	var err error
	if ev.id, ev.idHex, err = hexField(raw, "id", 32); err != nil {
		return nil, err
	}
	if ev.pubkey, _, err = hexField(raw, "pubkey", 32); err != nil {
		return nil, err
	}
	if ev.sig, _, err = hexField(raw, "sig", 64); err != nil {
		return nil, err
	}
	if ev.createdAt, err = intField(raw, "created_at", 1<<63-1); err != nil {
		return nil, err
	}
	if ev.kind, err = intField(raw, "kind", 65535); err != nil {
		return nil, err
	}
	t, ok := raw["tags"]
	if !ok || bytes.Equal(bytes.TrimSpace(t), []byte("null")) {
		return nil, errors.New("no tags array")
	}
	if err := json.Unmarshal(t, &ev.tags); err != nil {
		return nil, errors.New("tags is not an array of arrays of strings")
	}
	for _, tag := range ev.tags {
		if tag == nil {
			return nil, errors.New("tags is not an array of arrays of strings")
		}
	}
	c, ok := raw["content"]
	if !ok || json.Unmarshal(c, &ev.content) != nil || bytes.Equal(bytes.TrimSpace(c), []byte("null")) {
		return nil, errors.New("content is not a string")
	}
	return ev, nil
}

// hexField is a lowercase hex string of n bytes.
func hexField(raw map[string]json.RawMessage, name string, n int) ([]byte, string, error) {
	var s string
	v, ok := raw[name]
	if !ok {
		return nil, "", fmt.Errorf("no %s", name)
	}
	if json.Unmarshal(v, &s) != nil {
		return nil, "", fmt.Errorf("%s is not a string", name)
	}
	if len(s) != 2*n {
		return nil, "", fmt.Errorf("%s is not %d hex digits", name, 2*n)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return nil, "", fmt.Errorf("%s is not lowercase hex", name)
		}
	}
	b, _ := hex.DecodeString(s)
	return b, s, nil
}

// intField is a JSON integer in [0, max], written as one (no fraction, no
// exponent: the canonical form has the digits the event was signed with).
func intField(raw map[string]json.RawMessage, name string, max uint64) (uint64, error) {
	v, ok := raw[name]
	if !ok {
		return 0, fmt.Errorf("no %s", name)
	}
	s := string(bytes.TrimSpace(v))
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil || u > max || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%s is not an integer in [0, %d]", name, max)
	}
	return u, nil
}

// canonical is the serialization the id is the hash of.
func canonical(ev *event) []byte {
	b := make([]byte, 0, 128+len(ev.content))
	b = append(b, `[0,"`...)
	b = append(b, hex.EncodeToString(ev.pubkey)...)
	b = append(b, `",`...)
	b = strconv.AppendUint(b, ev.createdAt, 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, ev.kind, 10)
	b = append(b, ",["...)
	for i, tag := range ev.tags {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, s := range tag {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		b = append(b, ']')
	}
	b = append(b, "],"...)
	b = appendString(b, ev.content)
	return append(b, ']')
}

// appendString writes s as a JSON string with NIP-01's escapes.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n':
			b = append(b, `\n`...)
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// computeID is the event's id as NIP-01 defines it.
func computeID(ev *event) [32]byte { return sha256.Sum256(canonical(ev)) }
