// SPDX-License-Identifier: MIT

package main

// A BIP-340 signer for the tests only (math/big, affine points, slow and not
// constant time: it signs test events, nothing else).

import (
	"crypto/sha256"
	"math/big"
)

var (
	curveP, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f", 16)
	curveN, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	genX, _   = new(big.Int).SetString("79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798", 16)
	genY, _   = new(big.Int).SetString("483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8", 16)
)

type point struct{ x, y *big.Int } // nil x: the point at infinity

func mod(v *big.Int) *big.Int { return v.Mod(v, curveP) }

func add(a, b point) point {
	if a.x == nil {
		return b
	}
	if b.x == nil {
		return a
	}
	var l *big.Int
	if a.x.Cmp(b.x) == 0 {
		if new(big.Int).Add(a.y, b.y).Mod(new(big.Int).Add(a.y, b.y), curveP).Sign() == 0 {
			return point{}
		}
		// 3x^2 / 2y
		num := mod(new(big.Int).Mul(big.NewInt(3), new(big.Int).Mul(a.x, a.x)))
		den := new(big.Int).ModInverse(mod(new(big.Int).Lsh(a.y, 1)), curveP)
		l = mod(num.Mul(num, den))
	} else {
		num := mod(new(big.Int).Sub(b.y, a.y))
		den := new(big.Int).ModInverse(mod(new(big.Int).Sub(b.x, a.x)), curveP)
		l = mod(num.Mul(num, den))
	}
	x := mod(new(big.Int).Sub(new(big.Int).Sub(new(big.Int).Mul(l, l), a.x), b.x))
	y := mod(new(big.Int).Sub(new(big.Int).Mul(l, new(big.Int).Sub(a.x, x)), a.y))
	return point{x, y}
}

func mul(k *big.Int, p point) point {
	r := point{}
	for i := k.BitLen() - 1; i >= 0; i-- {
		r = add(r, r)
		if k.Bit(i) == 1 {
			r = add(r, p)
		}
	}
	return r
}

func bytes32(v *big.Int) []byte {
	b := make([]byte, 32)
	v.FillBytes(b)
	return b
}

func taggedHash(tag string, parts ...[]byte) []byte {
	t := sha256.Sum256([]byte(tag))
	h := sha256.New()
	h.Write(t[:])
	h.Write(t[:])
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// schnorrKey is a secret key with its x-only public key (BIP-340).
type schnorrKey struct {
	d  *big.Int // the secret, negated when its point has odd y
	px []byte
}

func newKey(secret []byte) schnorrKey {
	d := new(big.Int).SetBytes(secret)
	p := mul(d, point{genX, genY})
	if p.y.Bit(0) == 1 {
		d = new(big.Int).Sub(curveN, d)
	}
	return schnorrKey{d: d, px: bytes32(p.x)}
}

// sign is BIP-340's signing algorithm over a 32-byte message.
func (k schnorrKey) sign(msg, aux []byte) []byte {
	t := new(big.Int).Xor(k.d, new(big.Int).SetBytes(taggedHash("BIP0340/aux", aux)))
	rand := taggedHash("BIP0340/nonce", bytes32(t), k.px, msg)
	k0 := new(big.Int).Mod(new(big.Int).SetBytes(rand), curveN)
	r := mul(k0, point{genX, genY})
	if r.y.Bit(0) == 1 {
		k0.Sub(curveN, k0)
	}
	rx := bytes32(r.x)
	e := new(big.Int).Mod(new(big.Int).SetBytes(taggedHash("BIP0340/challenge", rx, k.px, msg)), curveN)
	s := new(big.Int).Mod(new(big.Int).Add(k0, new(big.Int).Mul(e, k.d)), curveN)
	return append(rx, bytes32(s)...)
}
