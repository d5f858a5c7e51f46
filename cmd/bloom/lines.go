package main

import (
	"bufio"
	"bytes"
	"io"
	"slices"
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

// batchBytes is the most a batchReader reads at a time: big enough that a
// 40-byte line costs a small fraction of a system call and of a batch call,
// small enough that the batches in flight (batchesInFlight of them, with
// their keys) take well under 1 MiB. Reads of 256 KiB measured no faster.
const batchBytes = ioBufferSize

// batchesInFlight is the number of batches a batchReader keeps: one being
// filled, one in each later stage of the caller's pipeline, and some
// waiting between the stages.
const batchesInFlight = 6

// lineBatch is a batch of whole lines, read at once by a batchReader. Its
// slices stay valid until it goes back to the reader (batchReader.recycle).
type lineBatch struct {
	buf []byte
	// keys are the keys of the lines (see key); the capacity of each
	// extends to the end of its line: keys[i][:cap(keys[i])] is line i,
	// with its ending.
	keys [][]byte
	// present has room for an answer per key, for the caller to fill.
	present []bool
	// err is set on the last batch: io.EOF at the end of the input, or the
	// error that stopped reading (after the lines before it).
	err error
}

// batchReader reads lines from r in a goroutine of its own and hands them
// out in batches, so that reading and splitting lines overlaps the work done
// on the previous batch. A batch holds the lines of one Read of r (with the
// start of a line that an earlier Read left incomplete): it never waits for
// more input to fill up, so that lines from a slow pipe pass on as they come.
// A line longer than batchBytes grows the batch's buffer as needed.
type batchReader struct {
	r       io.Reader
	batches chan *lineBatch // read, in order; the last has err set
	free    chan *lineBatch // for the goroutine to reuse
	quit    chan struct{}   // closed by close
	made    int             // batches allocated, up to batchesInFlight
}

// readBatches starts reading r in batches.
func readBatches(r io.Reader) *batchReader {
	b := &batchReader{
		r:       r,
		batches: make(chan *lineBatch, batchesInFlight),
		free:    make(chan *lineBatch, batchesInFlight),
		quit:    make(chan struct{}),
	}
	go b.run()
	return b
}

// next returns the next batch, waiting for it to be read. The last batch
// has err set; there is none after it.
func (b *batchReader) next() *lineBatch {
	return <-b.batches
}

// ready reports whether the next batch is already read, so that next would
// not wait.
func (b *batchReader) ready() bool { return len(b.batches) > 0 }

// recycle gives a batch that the caller no longer uses back to the reader.
func (b *batchReader) recycle(lb *lineBatch) {
	select {
	case b.free <- lb:
	default:
	}
}

// close stops the reading goroutine once its Read in progress, if any,
// returns. Batches not yet taken are dropped.
func (b *batchReader) close() { close(b.quit) }

// get returns an empty batch to read into, or nil after close.
func (b *batchReader) get() *lineBatch {
	var lb *lineBatch
	select {
	case lb = <-b.free:
	default:
		if b.made < batchesInFlight {
			b.made++
			// Room for the keys of lines of 16 bytes on average: most
			// batches then never allocate.
			lb = &lineBatch{buf: make([]byte, 0, batchBytes), keys: make([][]byte, 0, batchBytes/16)}
		} else {
			select {
			case lb = <-b.free:
			case <-b.quit:
				return nil
			}
		}
	}
	lb.buf, lb.keys, lb.err = lb.buf[:0], lb.keys[:0], nil
	return lb
}

// send hands lb to the caller, reporting false after close.
func (b *batchReader) send(lb *lineBatch) bool {
	select {
	case b.batches <- lb:
		return true
	case <-b.quit:
		return false
	}
}

func (b *batchReader) run() {
	lb := b.get()
	if lb == nil {
		return
	}
	scanned := 0 // lb.buf[:scanned] holds no newline
	for {
		if cap(lb.buf)-len(lb.buf) < batchBytes/2 {
			// A long line: room for more of it.
			lb.buf = slices.Grow(lb.buf, batchBytes)
		}
		n, err := b.r.Read(lb.buf[len(lb.buf):cap(lb.buf)])
		lb.buf = lb.buf[:len(lb.buf)+n]
		if err != nil {
			// At the end, the lines read, the last one without a newline
			// too; after an error (or an interrupt: errStopped), the whole
			// lines before it, and not the start of a line that the error
			// cut short.
			end := len(lb.buf)
			if err != io.EOF {
				end = bytes.LastIndexByte(lb.buf, '\n') + 1
			}
			lb.split(end)
			lb.err = err
			b.send(lb)
			return
		}
		nl := bytes.LastIndexByte(lb.buf[scanned:], '\n')
		if nl < 0 {
			scanned = len(lb.buf)
			continue
		}
		end := scanned + nl + 1
		next := b.get()
		if next == nil {
			return
		}
		next.buf = append(next.buf, lb.buf[end:]...) // the start of the next line
		lb.split(end)
		if !b.send(lb) {
			return
		}
		lb, scanned = next, len(next.buf)
	}
}

// split sets the keys of lb to those of the lines of lb.buf[:end]: lines
// ended by "\n", and the last line whether or not it has one.
func (lb *lineBatch) split(end int) {
	data := lb.buf[:end]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n') + 1
		if i == 0 {
			i = len(data)
		}
		lb.keys = append(lb.keys, key(data[:i:i]))
		data = data[i:]
	}
	if cap(lb.present) < len(lb.keys) {
		lb.present = make([]bool, cap(lb.keys))
	}
	lb.present = lb.present[:len(lb.keys)]
}

// eachBatch calls fn with the keys of the lines of r, a batch at a time
// (batchReader), valid until fn returns.
func eachBatch(r io.Reader, fn func(keys [][]byte) error) error {
	br := readBatches(r)
	defer br.close()
	for {
		lb := br.next()
		if len(lb.keys) > 0 {
			if err := fn(lb.keys); err != nil {
				return err
			}
		}
		if lb.err == io.EOF {
			return nil
		}
		if lb.err != nil {
			return lb.err
		}
		br.recycle(lb)
	}
}

// lineOf returns the line of a key of a lineBatch, with its ending.
func lineOf(key []byte) []byte { return key[:cap(key)] }

// writeLine writes line to w with a newline if it has none.
func writeLine(w *bufio.Writer, line []byte) error {
	_, err := w.Write(line)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		err = w.WriteByte('\n')
	}
	return err
}
