package format

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// ScalableSink receives what a decoder of a ScalableBloomFilter's encoding
// finds, in order: the header, then each sub-filter, oldest first. It is how
// the root package, which knows what sizes a filter's parameters give its
// sub-filters, checks them as they come, so that a decoder stops at the first
// thing that is wrong. An error a method returns stops the decoder, which
// returns it.
type ScalableSink interface {
	// Params is called with the header before anything after it is read,
	// walked or allocated, so that hostile parameters cost nothing more.
	Params(h ScalableHeader) error

	// Sub is called with sub-filter i's header and words, which it then
	// owns. The encoding of the sub-filter, its checksum included, has been
	// verified.
	Sub(i int, h Header, words []uint64) error
}

// DecodeScalable decodes data, exactly one encoding of a ScalableBloomFilter
// of any version, into sink. A truncated input is io.ErrUnexpectedEOF,
// anything else that is not exactly an encoding an error wrapping
// ErrCorrupt; it never panics, and allocates only what data holds.
func DecodeScalable(data []byte, sink ScalableSink) error {
	if len(data) >= 6 && IsV3(data) {
		if len(data) < V3HeaderSize {
			return io.ErrUnexpectedEOF
		}
		h, err := ParseV3ScalableHeader(data)
		if err != nil {
			return err
		}
		if err := sink.Params(h.ScalableHeader); err != nil {
			return err
		}
		_, subs, err := WalkV3Scalable(data)
		if err != nil {
			return err
		}
		for i, sub := range subs {
			sh, words, err := DecodeV3(data[sub.Off : sub.Off+sub.H.Size()])
			if err != nil {
				return fmt.Errorf("sub-filter %d: %w", i, err)
			}
			if err := sink.Sub(i, sh.Header, words); err != nil {
				return err
			}
		}
		return nil
	}
	if len(data) < ScalableHeaderSize+CRCSize {
		return io.ErrUnexpectedEOF
	}
	h, err := ParseScalableHeader(data)
	if err != nil {
		return err
	}
	if err := sink.Params(h); err != nil {
		return err
	}
	// The sub-filter headers first, to check the length before anything
	// else, so that a truncated input is io.ErrUnexpectedEOF and nothing is
	// allocated for sizes the input does not hold.
	sizes, err := SubFilterSizes(data, h.N)
	if err != nil {
		return err
	}
	rest := data[ScalableHeaderSize:]
	for i, size := range sizes {
		sh, words, err := Decode(rest[:size])
		if err != nil {
			return err
		}
		if err := sink.Sub(i, sh, words); err != nil {
			return err
		}
		rest = rest[size:]
	}
	return nil
}

// ReadScalable reads one encoding of a ScalableBloomFilter of any version
// into sink, from prefix (what the caller has already read of it) then r,
// and returns the number of bytes it took, prefix included. It reads no byte
// past the encoding. A stream that ends before its first byte, with no
// prefix, is io.EOF; one that ends later io.ErrUnexpectedEOF. src is the
// reader underneath r, which Holds reports on (see Read): it allocates what
// the input has supplied or shown it holds.
func ReadScalable(r, src io.Reader, prefix []byte, sink ScalableSink) (int64, error) {
	cr := &CRCReader{R: io.MultiReader(bytes.NewReader(prefix), r)}
	var hb [V3HeaderSize]byte
	if _, err := io.ReadFull(cr, hb[:ScalableHeaderSize]); err != nil {
		if cr.N == 0 && err == io.EOF {
			return 0, io.EOF
		}
		return cr.N, NoEOF(err)
	}
	if IsV3(hb[:]) {
		cr.NoCRC = true
		return readScalableV3(cr, src, &hb, sink)
	}
	h, err := ParseScalableHeader(hb[:ScalableHeaderSize])
	if err != nil {
		return cr.N, err
	}
	if err := sink.Params(h); err != nil {
		return cr.N, err
	}
	for i := range h.N {
		sh, words, _, err := ReadVersions(cr, src, V1or2)
		if err != nil {
			return cr.N, err
		}
		if err := sink.Sub(i, sh, words); err != nil {
			return cr.N, err
		}
	}
	want := cr.CRC
	var cb [CRCSize]byte
	if _, err := io.ReadFull(cr, cb[:]); err != nil {
		return cr.N, NoEOF(err)
	}
	if binary.LittleEndian.Uint32(cb[:]) != want {
		return cr.N, Corrupt("checksum mismatch")
	}
	return cr.N, nil
}

// readScalableV3 is ReadScalable for a version-3 encoding, whose first
// ScalableHeaderSize bytes are in hb, from cr.
func readScalableV3(cr *CRCReader, src io.Reader, hb *[V3HeaderSize]byte, sink ScalableSink) (int64, error) {
	if _, err := io.ReadFull(cr, hb[ScalableHeaderSize:]); err != nil {
		return cr.N, NoEOF(err)
	}
	h, err := ParseV3ScalableHeader(hb[:])
	if err != nil {
		return cr.N, err
	}
	if err := sink.Params(h.ScalableHeader); err != nil {
		return cr.N, err
	}
	offsets, _, err := ReadV3Table(cr, h)
	if err != nil {
		return cr.N, err
	}
	for i, off := range offsets {
		// Each sub-filter starts on the next cache line: offsets[i] must
		// be where the previous one ends, rounded up.
		if want := AlignV3(uint64(cr.N)); off != want {
			return cr.N, Corrupt("sub-filter %d at offset %d, want %d", i, off, want)
		}
		if _, err := ReadV3Padding(cr, off-uint64(cr.N)); err != nil {
			return cr.N, err
		}
		sh, words, _, err := ReadVersions(cr, src, V3)
		if err != nil {
			return cr.N, err
		}
		if err := sink.Sub(i, sh, words); err != nil {
			return cr.N, err
		}
	}
	return cr.N, nil
}
