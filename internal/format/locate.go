package format

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// Located is one filter of an encoding as Locate finds it: its header, and
// the offset in the encoding of its first word (8*h.Words() bytes,
// little-endian).
type Located struct {
	Header
	Words uint64
}

// Encoding is what Locate finds in the encoding of a BloomFilter or a
// ScalableBloomFilter, of any version.
type Encoding struct {
	Version  int
	Scalable bool
	Params   ScalableHeader // the header of a ScalableBloomFilter
	Filters  []Located      // the filter, or the sub-filters oldest first
}

// Locate validates data as exactly one encoding of either type, in any
// version, without decoding it: the headers and their checksums, the
// length (io.ErrUnexpectedEOF if short), the bits at m and above (zero),
// and if verify, the checksums of the bits: of every section of version 3
// (on several cores for large filters, see VerifyV3), or of the whole
// encoding of versions 1 and 2. It does not check that a count is at most
// the bits set, which would read every word. The caller checks what depends
// on the root package (a ScalableBloomFilter's growth, its sub-filters'
// sizes). It allocates one Located per filter.
func Locate(data []byte, verify bool) (Encoding, error) {
	var e Encoding
	if len(data) < 6 {
		return e, io.ErrUnexpectedEOF
	}
	e.Version = int(binary.LittleEndian.Uint16(data[4:]))
	e.Scalable = string(data[:4]) == ScalableMagic
	switch {
	case !e.Scalable && e.Version == V3Version:
		h, err := CheckV3(data, verify)
		if err != nil {
			return e, err
		}
		e.Filters = []Located{{h.Header, V3HeaderSize}}
	case e.Scalable && e.Version == V3Version:
		h, subs, err := WalkV3Scalable(data)
		if err != nil {
			return e, err
		}
		e.Params = h.ScalableHeader
		e.Filters = make([]Located, len(subs))
		for i, sub := range subs {
			if _, err := CheckV3(data[sub.Off:sub.Off+sub.H.Size()], verify); err != nil {
				return e, fmt.Errorf("sub-filter %d: %w", i, err)
			}
			e.Filters[i] = Located{sub.H.Header, sub.Off + V3HeaderSize}
		}
	case !e.Scalable:
		if len(data) < HeaderSize {
			return e, io.ErrUnexpectedEOF
		}
		h, err := ParseHeader(data)
		if err != nil {
			return e, err
		}
		if err := checkLength(data, h.Size()); err != nil {
			return e, err
		}
		if verify && crc32.Checksum(data[:len(data)-CRCSize], Castagnoli) != binary.LittleEndian.Uint32(data[len(data)-CRCSize:]) {
			return e, Corrupt("checksum mismatch")
		}
		e.Filters = []Located{{h, HeaderSize}}
	default:
		if len(data) < ScalableHeaderSize+CRCSize {
			return e, io.ErrUnexpectedEOF
		}
		h, err := ParseScalableHeader(data)
		if err != nil {
			return e, err
		}
		sizes, err := subFilterSizes(data, h.N, verify)
		if err != nil {
			return e, err
		}
		e.Params = h
		e.Filters = make([]Located, len(sizes))
		off := uint64(ScalableHeaderSize)
		for i, size := range sizes {
			sh, _ := ParseHeader(data[off:]) // subFilterSizes parsed it
			e.Filters[i] = Located{sh, off + HeaderSize}
			off += size
		}
	}
	for i, f := range e.Filters {
		last := binary.LittleEndian.Uint64(data[f.Words+8*(f.Header.Words()-1):])
		if Padding(f.M, []uint64{last}) {
			return e, Corrupt("filter %d: bits set beyond the filter size", i)
		}
	}
	return e, nil
}

// checkLength returns io.ErrUnexpectedEOF if data is shorter than size and
// an error wrapping ErrCorrupt if it is longer.
func checkLength(data []byte, size uint64) error {
	switch {
	case uint64(len(data)) < size:
		return io.ErrUnexpectedEOF
	case uint64(len(data)) > size:
		return Corrupt("%d trailing bytes", uint64(len(data))-size)
	}
	return nil
}
