package bloom

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
)

// The text encoding of both filter types is the standard base64 (RFC 4648,
// with padding, no line breaks) of their binary encoding. Implementing
// encoding.TextMarshaler rather than json.Marshaler makes encoding/json
// write a filter as a JSON string, and serves encoding/xml, flag.TextVar and
// most other encoders as well, with one format. MarshalText and AppendText
// have value receivers so that a filter held by value in a struct is encoded
// too, not skipped as a struct without exported fields.

// AppendText appends the text encoding of the filter to b: the standard
// base64 encoding, with padding, of its binary encoding
// (encoding.TextAppender). It returns an error only for a zero BloomFilter.
func (f BloomFilter) AppendText(b []byte) ([]byte, error) {
	data, err := f.MarshalBinary()
	if err != nil {
		return b, err
	}
	return base64.StdEncoding.AppendEncode(b, data), nil
}

// MarshalText returns the text encoding of the filter, the standard base64
// encoding of MarshalBinary's (encoding.TextMarshaler): encoding/json writes
// a filter, held by pointer or by value, as a JSON string. It returns an
// error only for a zero BloomFilter.
func (f BloomFilter) MarshalText() ([]byte, error) {
	return f.AppendText(make([]byte, 0, base64.StdEncoding.EncodedLen(f.EncodedSize())))
}

// UnmarshalText decodes a filter encoded by MarshalText into f
// (encoding.TextUnmarshaler), with the guarantees of UnmarshalBinary: it
// keeps the mode of f, checks the header and the length before it allocates
// (then about 1.5 times the length of text), never panics, and leaves f
// unchanged on error. Errors wrap ErrCorrupt (also for text that is not
// base64, or has line breaks), or are io.ErrUnexpectedEOF for a truncated
// text. It must not run concurrently with any other call.
func (f *BloomFilter) UnmarshalText(text []byte) error {
	data, err := decodeText(text, headerSize, func(hdr []byte) (uint64, error) {
		h, err := parseHeader(hdr)
		return headerSize + 8*h.words() + crcSize, err
	})
	if err != nil {
		return err
	}
	return f.UnmarshalBinary(data)
}

// AppendText appends the text encoding of the filter to b: the standard
// base64 encoding, with padding, of its binary encoding
// (encoding.TextAppender). It returns an error only for a zero
// ScalableBloomFilter.
func (s ScalableBloomFilter) AppendText(b []byte) ([]byte, error) {
	data, err := s.MarshalBinary()
	if err != nil {
		return b, err
	}
	return base64.StdEncoding.AppendEncode(b, data), nil
}

// MarshalText returns the text encoding of the filter, the standard base64
// encoding of MarshalBinary's (encoding.TextMarshaler), as for BloomFilter.
func (s ScalableBloomFilter) MarshalText() ([]byte, error) {
	return s.AppendText(make([]byte, 0, base64.StdEncoding.EncodedLen(s.EncodedSize())))
}

// UnmarshalText decodes a filter encoded by MarshalText into s
// (encoding.TextUnmarshaler), with the guarantees of
// BloomFilter.UnmarshalText.
func (s *ScalableBloomFilter) UnmarshalText(text []byte) error {
	data, err := decodeText(text, scalableHeaderSize, func(hdr []byte) (uint64, error) {
		_, n, err := parseScalableHeader(hdr)
		// At least the header, n sub-filter headers and two checksums
		// each: an exact length needs the sub-filter headers.
		return scalableHeaderSize + uint64(n)*(headerSize+8+crcSize) + crcSize, err
	})
	if err != nil {
		return err
	}
	return s.UnmarshalBinary(data)
}

// decodeText decodes text, the base64 of a binary encoding whose first
// headerLen bytes parse reads, returning the least length that header
// implies. It decodes and parses the header first, on the stack, and
// allocates the decoded bytes only once the text is long enough for them.
func decodeText(text []byte, headerLen int, parse func(hdr []byte) (uint64, error)) ([]byte, error) {
	if bytes.ContainsAny(text, "\r\n") {
		return nil, corrupt("line break in base64 text")
	}
	enc := base64.StdEncoding.Strict()
	var hb [scalableHeaderSize + 3]byte
	if n := (headerLen + 2) / 3 * 4; len(text) >= n {
		if _, err := enc.Decode(hb[:], text[:n]); err != nil {
			return nil, textError(err)
		}
		least, err := parse(hb[:headerLen])
		if err != nil {
			return nil, err
		}
		if uint64(enc.DecodedLen(len(text))) < least {
			return nil, io.ErrUnexpectedEOF
		}
	}
	// A text cut short mid-quartet is truncated, not corrupt, if what
	// comes before is valid.
	whole := len(text) - len(text)%4
	data := make([]byte, enc.DecodedLen(whole))
	n, err := enc.Decode(data, text[:whole])
	switch {
	case err != nil:
		return nil, textError(err)
	case whole < len(text):
		return nil, io.ErrUnexpectedEOF
	}
	return data[:n], nil
}

func textError(err error) error {
	var ce base64.CorruptInputError
	if errors.As(err, &ce) {
		return corrupt("invalid base64 at byte %d", int64(ce))
	}
	return corrupt("invalid base64: %v", err)
}
