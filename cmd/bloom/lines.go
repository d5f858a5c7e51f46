package main

import (
	"bufio"
	"io"
)

// ioBufferSize is the size of the buffered readers and writers: big enough
// that a 60-byte line costs a small fraction of a system call.
const ioBufferSize = 64 << 10

// lineReader reads lines of any length from a buffered reader. A line that
// fits the buffer is returned without copying; a longer one is gathered in a
// slice that grows as needed.
type lineReader struct {
	r    *bufio.Reader
	long []byte // a line longer than r's buffer
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, ioBufferSize)}
}

// next returns the next line including its "\n", if it has one: the last line
// of the input may lack it. The slice is valid until the next call. After the
// last line next returns io.EOF.
func (l *lineReader) next() ([]byte, error) {
	line, err := l.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = l.r.ReadSlice('\n')
			l.long = append(l.long, line...)
		}
		line = l.long
	}
	if err == io.EOF && len(line) > 0 {
		err = nil // a last line without a newline
	}
	if err != nil {
		return nil, err
	}
	return line, nil
}

// key returns line without its "\n" or "\r\n" ending. The end of the input
// ends its last line as "\n" would, so a last line without "\n" loses a final
// "\r" too: the same bytes give the same keys whether they arrive on stdin or
// in a FILE argument, whose last line inputFiles ends with "\n".
func key(line []byte) []byte {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n]
}

// eachLine calls fn with the key of each line of r.
func eachLine(r io.Reader, fn func(key []byte) error) error {
	lr := newLineReader(r)
	for {
		line, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(key(line)); err != nil {
			return err
		}
	}
}

// blockLines is the number of lines dedup and build read before they pass
// them to the filter in one batch call.
const blockLines = 1024

// lineBlock is a block of lines copied out of a lineReader, whose lines are
// only valid until its next read.
type lineBlock struct {
	buf  []byte
	ends []int // line i is buf[ends[i-1]:ends[i]]
	line [][]byte
	keys [][]byte
}

func (b *lineBlock) reset() { b.buf, b.ends = b.buf[:0], b.ends[:0] }

// add appends a copy of line.
func (b *lineBlock) add(line []byte) {
	b.buf = append(b.buf, line...)
	b.ends = append(b.ends, len(b.buf))
}

// lines returns the lines of the block and their keys (see key), valid until
// the next reset.
func (b *lineBlock) lines() (lines, keys [][]byte) {
	b.line, b.keys = b.line[:0], b.keys[:0]
	start := 0
	for _, end := range b.ends {
		l := b.buf[start:end:end]
		b.line = append(b.line, l)
		b.keys = append(b.keys, key(l))
		start = end
	}
	return b.line, b.keys
}

// eachBlock calls fn with the keys of up to blockLines lines of r at a time,
// valid until fn returns.
func eachBlock(r io.Reader, fn func(keys [][]byte) error) error {
	lr := newLineReader(r)
	var block lineBlock
	for {
		block.reset()
		var end error
		for len(block.ends) < blockLines {
			line, err := lr.next()
			if err != nil {
				end = err
				break
			}
			block.add(line)
		}
		if len(block.ends) > 0 {
			_, keys := block.lines()
			if err := fn(keys); err != nil {
				return err
			}
		}
		if end == io.EOF {
			return nil
		}
		if end != nil {
			return end
		}
	}
}

// writeLine writes line to w with a newline if it has none.
func writeLine(w *bufio.Writer, line []byte) error {
	_, err := w.Write(line)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		err = w.WriteByte('\n')
	}
	return err
}
