// SPDX-License-Identifier: MIT

//go:build cgo

package libsecp256k1

/*
#cgo pkg-config: libsecp256k1
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
#include <string.h>

static secp256k1_context* sv_ctx(void) {
	static secp256k1_context* ctx;
	if (!ctx) ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
	return ctx;
}

// As reference::RowVerifier::verify_schnorr.
static int sv_verify_schnorr(const unsigned char* msg, const unsigned char* key, const unsigned char* sig) {
	secp256k1_xonly_pubkey pk;
	if (!secp256k1_xonly_pubkey_parse(sv_ctx(), &pk, key)) return 0;
	return secp256k1_schnorrsig_verify(sv_ctx(), sig, msg, 32, &pk);
}

// As reference::RowVerifier::verify_ecdsa: a compact (or opaque: r LE, s LE)
// signature, high-S accepted.
static int sv_verify_ecdsa(const unsigned char* msg, const unsigned char* key, const unsigned char* sig, int compact) {
	secp256k1_pubkey pk;
	secp256k1_ecdsa_signature s;
	unsigned char c[64];
	int i;
	if (!secp256k1_ec_pubkey_parse(sv_ctx(), &pk, key, 33)) return 0;
	if (compact) {
		memcpy(c, sig, 64);
	} else {
		for (i = 0; i < 32; i++) { c[i] = sig[31 - i]; c[32 + i] = sig[63 - i]; }
	}
	if (!secp256k1_ecdsa_signature_parse_compact(sv_ctx(), &s, c)) return 0;
	secp256k1_ecdsa_signature_normalize(sv_ctx(), &s, &s);
	return secp256k1_ecdsa_verify(sv_ctx(), &s, msg, &pk);
}

static int sv_sign_schnorr(const unsigned char* seckey, const unsigned char* msg, const unsigned char* aux,
                           unsigned char* key, unsigned char* sig) {
	secp256k1_keypair kp;
	secp256k1_xonly_pubkey pk;
	if (!secp256k1_keypair_create(sv_ctx(), &kp, seckey)) return 0;
	if (!secp256k1_keypair_xonly_pub(sv_ctx(), &pk, NULL, &kp)) return 0;
	if (!secp256k1_xonly_pubkey_serialize(sv_ctx(), key, &pk)) return 0;
	return secp256k1_schnorrsig_sign32(sv_ctx(), sig, msg, &kp, aux);
}

static int sv_sign_ecdsa(const unsigned char* seckey, const unsigned char* msg, unsigned char* key, unsigned char* sig) {
	secp256k1_pubkey pk;
	secp256k1_ecdsa_signature s;
	size_t len = 33;
	if (!secp256k1_ec_pubkey_create(sv_ctx(), &pk, seckey)) return 0;
	secp256k1_ec_pubkey_serialize(sv_ctx(), key, &len, &pk, SECP256K1_EC_COMPRESSED);
	if (!secp256k1_ecdsa_sign(sv_ctx(), &s, msg, seckey, NULL, NULL)) return 0;
	return secp256k1_ecdsa_signature_serialize_compact(sv_ctx(), sig, &s);
}
*/
import "C"

import (
	"sync"
	"unsafe"
)

// Available tells whether this build has libsecp256k1 (cgo).
const Available = true

var once sync.Once

func ptr(b []byte) *C.uchar { return (*C.uchar)(unsafe.Pointer(&b[0])) }

func ready() { once.Do(func() { C.sv_ctx() }) }

// VerifySchnorr is libsecp256k1's BIP-340 verdict on one row.
func VerifySchnorr(msg, key, sig []byte) bool {
	ready()
	return C.sv_verify_schnorr(ptr(msg), ptr(key), ptr(sig)) == 1
}

// VerifyECDSA is libsecp256k1's verdict on one ECDSA row (key 33 bytes
// compressed; sig compact, or opaque when compact is false).
func VerifyECDSA(msg, key, sig []byte, compact bool) bool {
	ready()
	c := C.int(0)
	if compact {
		c = 1
	}
	return C.sv_verify_ecdsa(ptr(msg), ptr(key), ptr(sig), c) == 1
}

// SignSchnorr signs msg (32 bytes) with seckey and aux (32 bytes each).
func SignSchnorr(seckey, msg, aux []byte) (key, sig []byte) {
	ready()
	key, sig = make([]byte, 32), make([]byte, 64)
	if C.sv_sign_schnorr(ptr(seckey), ptr(msg), ptr(aux), ptr(key), ptr(sig)) != 1 {
		return nil, nil
	}
	return key, sig
}

// SignECDSA signs the hash msg with seckey: a compressed key and a compact
// signature (low S).
func SignECDSA(seckey, msg []byte) (key, sig []byte) {
	ready()
	key, sig = make([]byte, 33), make([]byte, 64)
	if C.sv_sign_ecdsa(ptr(seckey), ptr(msg), ptr(key), ptr(sig)) != 1 {
		return nil, nil
	}
	return key, sig
}
