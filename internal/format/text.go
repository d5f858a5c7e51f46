package format

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
)

// The text encoding of both filter types is the standard base64 (RFC 4648,
// with padding, no line breaks) of their binary encoding.

// DecodeText decodes text, the base64 of a binary encoding whose first
// headerLen bytes (at most ScalableHeaderSize) parse reads, returning the
// least length that header implies. It decodes and parses the header first,
// on the stack, and allocates the decoded bytes only once the text is long
// enough for them.
func DecodeText(text []byte, headerLen int, parse func(hdr []byte) (uint64, error)) ([]byte, error) {
	if bytes.ContainsAny(text, "\r\n") {
		return nil, Corrupt("line break in base64 text")
	}
	enc := base64.StdEncoding.Strict()
	var hb [V3HeaderSize + 3]byte
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
		return Corrupt("invalid base64 at byte %d", int64(ce))
	}
	return Corrupt("invalid base64: %v", err)
}
