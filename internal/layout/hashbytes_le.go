//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package layout

import "unsafe"

// HashBytes returns the 8 bytes of *h, in place, as the hashed calls hash
// them: little-endian, which *h already is on this machine. It is small
// enough that AddHash, TestHash and TestAndAddHash inline into their callers,
// as Add and Test do (with KeyBytes' conversion they cost 99-100, over the
// compiler's budget of 80, and a call more per key).
func HashBytes(h *uint64) []byte { return (*[8]byte)(unsafe.Pointer(h))[:] }
