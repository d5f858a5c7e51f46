package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// errStopped is what a stopReader returns once it is stopped.
var errStopped = errors.New("stopped")

// stopReader reads r in a goroutine, so that a Read waiting for input that
// does not come, from an idle pipe or terminal, returns errStopped as soon as
// stop is closed instead of when the next input arrives. A read in progress
// when stop closes is abandoned: whatever it returns later is dropped.
type stopReader struct {
	r    io.Reader
	stop <-chan struct{}
	buf  []byte
	res  chan readResult // one read at a time; buffered so an abandoned read does not block
	busy bool            // a read is in progress
}

type readResult struct {
	n   int
	err error
}

func newStopReader(r io.Reader, stop <-chan struct{}) *stopReader {
	return &stopReader{r: r, stop: stop, res: make(chan readResult, 1)}
}

func (s *stopReader) Read(p []byte) (int, error) {
	select {
	case <-s.stop:
		return 0, errStopped
	default:
	}
	if !s.busy {
		// The goroutine reads into a buffer of our own, never into p,
		// which the caller may reuse after an abandoned read.
		if cap(s.buf) < len(p) {
			s.buf = make([]byte, len(p))
		}
		buf := s.buf[:len(p)]
		s.busy = true
		go func() {
			n, err := s.r.Read(buf)
			s.res <- readResult{n, err}
		}()
	}
	select {
	case res := <-s.res:
		s.busy = false
		return copy(p, s.buf[:res.n]), res.err
	case <-s.stop:
		return 0, errStopped
	}
}

// inputFiles reads the named files one after another, "-" meaning stdin, as
// cat does, except that the last line of a file ends with the file even
// without a final newline (inputFiles supplies one), as with sort and awk:
// lines do not run on from one file into the next. It opens a file when it
// comes to it and closes it at its end.
type inputFiles struct {
	names   []string
	stdin   io.Reader
	cur     io.Reader // nil between files
	closer  io.Closer
	partial bool // the current file's data so far does not end with a newline
	newline bool // a newline is owed after the file just ended
}

// openInputFiles checks that the named files exist and are not directories,
// so that a mistyped name fails before any line is read, and returns their
// reader.
func openInputFiles(names []string, stdin io.Reader) (*inputFiles, error) {
	for _, name := range names {
		if name == "-" {
			continue
		}
		fi, err := os.Stat(name)
		if err != nil {
			return nil, err
		}
		if fi.IsDir() {
			return nil, fmt.Errorf("%s: is a directory", name)
		}
	}
	return &inputFiles{names: names, stdin: stdin}, nil
}

func (in *inputFiles) Read(p []byte) (int, error) {
	for {
		if len(p) == 0 {
			return 0, nil
		}
		if in.newline {
			in.newline = false
			p[0] = '\n'
			return 1, nil
		}
		if in.cur == nil {
			if len(in.names) == 0 {
				return 0, io.EOF
			}
			name := in.names[0]
			in.names = in.names[1:]
			if name == "-" {
				in.cur, in.closer = in.stdin, nil
			} else {
				f, err := os.Open(name)
				if err != nil {
					return 0, err
				}
				in.cur, in.closer = f, f
			}
			in.partial = false
		}
		n, err := in.cur.Read(p)
		if n > 0 {
			in.partial = p[n-1] != '\n'
		}
		if err == io.EOF {
			if in.closer != nil {
				in.closer.Close()
			}
			in.cur, in.closer = nil, nil
			in.newline = in.partial
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// Close closes the file being read, if any.
func (in *inputFiles) Close() error {
	if in.closer == nil {
		return nil
	}
	err := in.closer.Close()
	in.cur, in.closer = nil, nil
	return err
}
