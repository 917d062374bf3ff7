// SPDX-License-Identifier: MIT

//go:build !cgo

package libsecp256k1

// Available tells whether this build has libsecp256k1 (cgo).
const Available = false

func VerifySchnorr(msg, key, sig []byte) bool             { panic("libsecp256k1: built without cgo") }
func VerifyECDSA(msg, key, sig []byte, compact bool) bool { panic("libsecp256k1: built without cgo") }
func SignSchnorr(seckey, msg, aux []byte) (key, sig []byte) {
	panic("libsecp256k1: built without cgo")
}
func SignECDSA(seckey, msg []byte) (key, sig []byte) { panic("libsecp256k1: built without cgo") }
