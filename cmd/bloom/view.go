package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bloomfilters/bloom"
)

// skipCheckDoc is the help of query's and info's -skip-check.
const skipCheckDoc = "check only the headers and the length of FILE, not the checksums of its bits: " +
	"it opens at once, but damage goes unnoticed and can make added keys test absent"

// filterFile is a filter file open as a bloom.View, for query and info: a
// regular file through bloom.Open, which maps it read-only, so that opening
// it reads only the pages that the checks and the answers touch and copies
// nothing into the heap; a file that cannot be mapped, such as a FIFO, is
// read into memory first and viewed there.
type filterFile struct {
	*bloom.View
	size    int64 // the file's length in bytes
	checked bool  // whether the checksums of the bits were checked
}

// openFilter opens the filter file at path, which must hold exactly one
// encoding of either type in any format version, and checks it as
// bloom.Open does: its headers and length, and its bits' checksums unless
// skipCheck. Opening a FIFO waits for a writer, as cat does.
func openFilter(path string, skipCheck bool) (*filterFile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var opts []bloom.ViewOption
	if skipCheck {
		opts = append(opts, bloom.SkipBodyCheck())
	}
	f := &filterFile{checked: !skipCheck, size: fi.Size()}
	var head []byte
	switch {
	case fi.Mode().IsRegular() && fi.Size() == 0:
		return nil, fmt.Errorf("%s: empty file, not a filter", path)
	case fi.Mode().IsRegular():
		if _, err = readHead(path); err == nil {
			f.View, err = bloom.Open(path, opts...)
			// Open's errors start with the file's name: take it out, so
			// that the message below names the file once.
			if msg := err; msg != nil {
				if rest, ok := strings.CutPrefix(msg.Error(), path+": "); ok {
					err = relabeled{rest, msg}
				}
			}
		}
	default:
		// A pipe has no pages to map: read it whole (the View then needs
		// no copy of its own, a large heap block being aligned).
		var data []byte
		if data, err = readAll(path); err == nil {
			f.size, head = int64(len(data)), data[:min(4, len(data))]
			if err = checkMagic(head); err == nil {
				f.View, err = bloom.NewView(data, opts...)
			}
		}
	}
	if err == nil {
		return f, nil
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = errors.New("truncated: the file ends inside the filter")
	case errors.Is(err, bloom.ErrCorrupt) && strings.HasSuffix(err.Error(), " trailing bytes"):
		// The library's message for a valid encoding followed by more.
		err = fmt.Errorf("unexpected data after the filter: %w", err)
	}
	return nil, fmt.Errorf("%s: %w", path, err)
}

// relabeled is err with the message msg, for errors.Is and As still err.
type relabeled struct {
	msg string
	err error
}

func (r relabeled) Error() string { return r.msg }
func (r relabeled) Unwrap() error { return r.err }

// readHead returns the first 4 bytes of the file at path, after checking
// that they are a filter's magic, so that a file of something else gets a
// message that says so.
func readHead(path string) ([]byte, error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	head := make([]byte, 4)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	return head[:n], checkMagic(head[:n])
}

// checkMagic returns an error unless head, the start of a file, is the
// magic of either filter type.
func checkMagic(head []byte) error {
	if len(head) == 0 {
		return errors.New("empty file, not a filter")
	}
	if string(head) != magicPlain && string(head) != magicScalable {
		return fmt.Errorf("not a filter file (it starts with %q, not %q or %q)", head, magicPlain, magicScalable)
	}
	return nil
}

// readAll reads the file at path, such as a FIFO, whole.
func readAll(path string) ([]byte, error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}
