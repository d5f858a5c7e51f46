//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package layout

import (
	"encoding/binary"
	"unsafe"
)

// HashBytes returns the 8 bytes of *h, in place, as the hashed calls hash
// them: little-endian, into which it rewrites *h on this big-endian machine
// (see hashbytes_le.go).
func HashBytes(h *uint64) []byte {
	b := (*[8]byte)(unsafe.Pointer(h))
	binary.LittleEndian.PutUint64(b[:], *h)
	return b[:]
}
