package format

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"strings"

	"github.com/bloomfilters/bloom/internal/hugepage"
)

// Write writes the encoding of a BloomFilter with header h and the bits
// words to w, loading the words atomically if conc, and returns the number
// of bytes written.
func Write(w io.Writer, h Header, words []uint64, conc bool) (int64, error) {
	const chunk = 1 << 13 // words per write
	buf := make([]byte, 0, 8*min(chunk, len(words))+HeaderSize+CRCSize)
	buf = AppendHeader(buf, h)
	crc := uint32(0)
	var total int64
	flush := func() error {
		crc = crc32.Update(crc, Castagnoli, buf)
		n, err := w.Write(buf)
		total += int64(n)
		buf = buf[:0]
		return err
	}
	for i := range words {
		buf = binary.LittleEndian.AppendUint64(buf, load(words, i, conc))
		if (i+1)%chunk == 0 {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	if err := flush(); err != nil {
		return total, err
	}
	n, err := w.Write(binary.LittleEndian.AppendUint32(buf, crc))
	return total + int64(n), err
}

// Read reads the encoding of one BloomFilter from r, and no byte past it,
// and returns its header, its words (cache-line aligned for the blocked
// layout) and the number of bytes read. src is the reader underneath r (r
// itself, or one that r only passes through), which Holds reports on. It
// never allocates much more than the bytes it has actually read, or that src
// has shown it holds, whatever the header claims (see readWords).
func Read(r, src io.Reader) (Header, []uint64, int64, error) {
	var hb [HeaderSize]byte
	n, err := io.ReadFull(r, hb[:])
	read := int64(n)
	if err != nil {
		return Header{}, nil, read, NoEOF(err)
	}
	h, err := ParseHeader(hb[:])
	if err != nil {
		return h, nil, read, err
	}
	crc := crc32.Checksum(hb[:], Castagnoli)
	words, n64, err := readWords(r, h.Words(), &crc, Holds(src, 8*h.Words()+CRCSize), h.Blocked)
	read += n64
	if err != nil {
		return h, nil, read, err
	}
	var cb [CRCSize]byte
	n, err = io.ReadFull(r, cb[:])
	read += int64(n)
	if err != nil {
		return h, nil, read, NoEOF(err)
	}
	if binary.LittleEndian.Uint32(cb[:]) != crc {
		return h, nil, read, Corrupt("checksum mismatch")
	}
	if err := checkWords(&h, words); err != nil {
		return h, nil, read, err
	}
	return h, words, read, nil
}

// readChunk is the number of 64-bit words readWords reads at a time (64 KiB).
const readChunk = 1 << 13

// readWords reads total little-endian words from r, updating crc with their
// bytes, and returns them with the number of bytes read, cache-line aligned
// if blocked (as the blocked layout's words are made).
//
// If known, the input has shown that it holds them (see Holds): they are
// read into one slice of that size, through a buffer of one chunk.
//
// Otherwise, a header can claim up to MaxBits bits that the input does not
// hold, so the words are kept in chunks of readChunk words, each allocated
// when its bytes are about to be read: until the input has supplied every
// word, what is allocated is what has arrived plus one chunk. Only then are
// the chunks copied into one slice of the declared size, so a valid input
// costs twice its size, once for the chunks and once for the result, and a
// truncated or hostile one about its size. Growing one slice by append
// instead cost about 5x what was read (Go grows large slices by 1.25x; the
// copies add up), and allocating the declared size up front lets a 48-byte
// header ask for 128 GiB.
func readWords(r io.Reader, total uint64, crc *uint32, known, blocked bool) ([]uint64, int64, error) {
	if total <= readChunk {
		words := make([]uint64, total)
		n, err := readInto(r, words, make([]byte, 8*total), crc)
		return words, n, err
	}
	var read int64
	buf := make([]byte, 8*readChunk)
	if known {
		var words []uint64
		if blocked {
			words = hugepage.AlignedWords(total)
		} else {
			words = hugepage.Words(total)
		}
		for got := uint64(0); got < total; {
			c := words[got : got+min(total-got, readChunk)]
			n, err := readInto(r, c, buf, crc)
			read += n
			if err != nil {
				return nil, read, err
			}
			got += uint64(len(c))
		}
		return words, read, nil
	}
	var chunks [][]uint64
	for got := uint64(0); got < total; {
		c := make([]uint64, min(total-got, readChunk))
		n, err := readInto(r, c, buf, crc)
		read += n
		if err != nil {
			return nil, read, err
		}
		chunks = append(chunks, c)
		got += uint64(len(c))
	}
	words := hugepage.Words(total)[:0]
	for i, c := range chunks {
		words = append(words, c...)
		chunks[i] = nil // the collector may take it now
	}
	return words, read, nil
}

// Holds reports whether src, at its current position, has shown that it
// holds at least need more bytes, so that a decoder may allocate them before
// it reads them. In-memory readers tell by their Len, a regular file by its
// size and offset. Any other reader must have a Size, which alone can
// exceed what it holds (io.NewSectionReader(r, 0, math.MaxInt64) is an
// idiom for "all of r"), and then read the last byte needed at its offset.
// Every other reader, and any error, gives false: the caller then allocates
// only as bytes arrive.
func Holds(src io.Reader, need uint64) bool {
	switch v := src.(type) {
	case *bytes.Reader:
		return uint64(v.Len()) >= need
	case *bytes.Buffer:
		return uint64(v.Len()) >= need
	case *strings.Reader:
		return uint64(v.Len()) >= need
	case *os.File:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		return err == nil && pos >= 0 && pos <= fi.Size() && uint64(fi.Size()-pos) >= need
	}
	v, ok := src.(interface {
		Size() int64
		io.ReaderAt
		io.Seeker
	})
	if !ok || need == 0 {
		return false
	}
	pos, err := v.Seek(0, io.SeekCurrent)
	size := v.Size()
	if err != nil || pos < 0 || pos > size || uint64(size-pos) < need {
		return false
	}
	var b [1]byte
	n, _ := v.ReadAt(b[:], pos+int64(need)-1) // no overflow: size-pos >= need
	return n == 1
}

// readInto fills words from r through buf, which holds at least
// 8*len(words) bytes, updates crc, and returns the number of bytes read.
func readInto(r io.Reader, words []uint64, buf []byte, crc *uint32) (int64, error) {
	part := buf[:8*len(words)]
	n, err := io.ReadFull(r, part)
	if err != nil {
		return int64(n), NoEOF(err)
	}
	*crc = crc32.Update(*crc, Castagnoli, part)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(part[8*i:])
	}
	return int64(n), nil
}

// NoEOF turns an end of input inside an encoding into io.ErrUnexpectedEOF.
func NoEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ReadHeader reads the fixed-size header of an encoding into hb, after the
// prefix already read: io.EOF if r ends before its first byte and there is
// no prefix.
func ReadHeader(r io.Reader, prefix, hb []byte) error {
	n := copy(hb, prefix)
	got, err := io.ReadFull(r, hb[n:])
	if err != nil {
		if n+got == 0 && err == io.EOF {
			return io.EOF
		}
		return NoEOF(err)
	}
	return nil
}

// CRCWriter counts and checksums what passes through it.
type CRCWriter struct {
	W   io.Writer
	N   int64
	CRC uint32
}

func (c *CRCWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	c.CRC = crc32.Update(c.CRC, Castagnoli, p[:n])
	return n, err
}

// CRCReader counts and checksums what passes through it.
//
// With NoCRC it only counts: version 3 has no checksum of the whole
// encoding, its parts carry their own.
type CRCReader struct {
	R     io.Reader
	N     int64
	CRC   uint32
	NoCRC bool
}

func (c *CRCReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	if !c.NoCRC {
		c.CRC = crc32.Update(c.CRC, Castagnoli, p[:n])
	}
	return n, err
}
