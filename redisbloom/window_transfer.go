package redisbloom

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"strconv"

	"github.com/bloomfilters/bloom"
)

// The parts of bloom.WindowFilter's binary encoding (documented on the type)
// that Export writes and Import reads: a 64-byte header, a table of the
// generations (period, rotations, then each generation's count and start,
// oldest first) with its CRC-32C padded to 64 bytes, the generations'
// words oldest first, and a CRC-32C per section of the words.
const (
	winMagic   = "BLMW"
	winVersion = 3
	winHeader  = 64
	winSection = 1 << 20
)

// winTableSize is the bytes of the table of r generations, padding
// included.
func winTableSize(r int) int { return (16 + 16*r + 4 + 63) &^ 63 }

// appendWindowEncoding appends the encoding of a window with w's
// parameters and the given state (generations oldest first: counts,
// starts in Unix nanoseconds, bitmaps in Redis's layout, "" for an empty
// generation).
func (w *WindowFilter) appendWindowEncoding(enc []byte, rotations uint64, counts []uint64, starts []int64, bitmaps []string) []byte {
	p := &w.p
	start := len(enc)
	enc = append(enc, winMagic...)
	enc = binary.LittleEndian.AppendUint16(enc, winVersion)
	enc = append(enc, p.policy, 0)
	enc = binary.LittleEndian.AppendUint32(enc, p.seed)
	enc = binary.LittleEndian.AppendUint32(enc, uint32(p.k))
	enc = binary.LittleEndian.AppendUint64(enc, p.m)
	enc = binary.LittleEndian.AppendUint64(enc, p.window)
	enc = binary.LittleEndian.AppendUint64(enc, math.Float64bits(p.errorRate))
	enc = binary.LittleEndian.AppendUint64(enc, p.genCap)
	enc = binary.LittleEndian.AppendUint16(enc, uint16(p.gens))
	enc = append(enc, 0, 0)
	enc = binary.LittleEndian.AppendUint32(enc, winSection)
	enc = append(enc, 0, 0, 0, 0)
	enc = binary.LittleEndian.AppendUint32(enc, crc32.Checksum(enc[start:], castagnoli))
	table := len(enc)
	enc = binary.LittleEndian.AppendUint64(enc, uint64(p.period))
	enc = binary.LittleEndian.AppendUint64(enc, rotations)
	for j := range p.gens {
		enc = binary.LittleEndian.AppendUint64(enc, counts[j])
		enc = binary.LittleEndian.AppendUint64(enc, uint64(starts[j]))
	}
	enc = binary.LittleEndian.AppendUint32(enc, crc32.Checksum(enc[table:], castagnoli))
	enc = append(enc, make([]byte, table+winTableSize(p.gens)-len(enc))...)
	body := len(enc)
	size := int(p.m / 8)
	for _, b := range bitmaps {
		if b == "" {
			enc = append(enc, make([]byte, size)...)
			continue
		}
		for i := 0; i < len(b); i++ {
			enc = append(enc, bits.Reverse8(b[i]))
		}
	}
	data := enc[body:]
	for off := 0; off < len(data); off += winSection {
		enc = binary.LittleEndian.AppendUint32(enc, crc32.Checksum(data[off:min(off+winSection, len(data))], castagnoli))
	}
	return enc
}

// Export returns an in-memory copy of the window: a bloom.WindowFilter with
// the same parameters, generations, counts, rotations and bits, Equal to
// the one bloom.NewWindow builds from the same keys added in the same order
// (a time window's starts are the server's times, to the microsecond, and
// it is exported as of the server's time: the rotations that time calls for
// are made in the copy, as the next add would make them). It reads every
// generation in one round trip, consistently, and needs about three times
// the window's size in bytes on the client. It returns the errors Test
// returns, and ErrCorrupt if a live generation's bitmap does not match its
// size.
func (w *WindowFilter) Export(ctx context.Context) (*bloom.WindowFilter, error) {
	st, err := w.state(ctx, windowExportScript, true)
	if err != nil {
		return nil, err
	}
	r := w.p.gens
	live := st.live(r)
	bitmaps := make([]string, r)
	for j := range r {
		s := (st.head - j + r) % r
		b, ok := st.bitmaps[s].(string)
		if j < live && (!ok || uint64(len(b)) != w.p.m/8) {
			return nil, fmt.Errorf("%w: %q: bitmap of the generation in slot %d does not match its size", ErrCorrupt, w.h.name, s)
		}
		if j < live {
			bitmaps[s] = b
		}
	}
	head, rotations := st.head, st.rotations
	counts, starts := st.counts, st.starts
	if e := st.elapsed; e > 0 {
		// As bloom.WindowFilter's Advance, on the server's clock.
		period := w.p.periodMicros()
		start := starts[head]
		for i := range int64(min(e, uint64(r))) {
			head = (head + 1) % r
			bitmaps[head], counts[head], starts[head] = "", 0, start+(i+1)*period
			rotations++
		}
		starts[head] = start + int64(e)*period
	}
	oc, os, ob := make([]uint64, r), make([]int64, r), make([]string, r)
	for j := range r {
		s := (head + 1 + j) % r
		oc[j], os[j], ob[j] = counts[s], starts[s]*1000, bitmaps[s]
	}
	enc := w.appendWindowEncoding(nil, rotations, oc, os, ob)
	g := new(bloom.WindowFilter)
	if err := g.UnmarshalBinary(enc); err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrCorrupt, w.h.name, err)
	}
	return g, nil
}

// Import replaces the window's generations, counts, starts and rotations
// with those of src, in one round trip, atomically: Export afterwards
// returns a window Equal to src (a time window's starts to the
// microsecond; and if src's generations are no longer live at the server's
// time, Export drops them as the next add does). src must have the
// window's parameters (window, error rate, generations, period, overflow
// policy, seed), or Import returns an error wrapping bloom.ErrIncompatible;
// a window under bloom.Grow, which this package does not keep, gives an
// error wrapping bloom.ErrInvalidParameter.
// Other handles notice the Import at their next call (the import epoch).
// Keys added by other clients between Export and Import are lost; Import is
// meant for restoring or seeding a window.
func (w *WindowFilter) Import(ctx context.Context, src *bloom.WindowFilter) error {
	if w.h.rdb == nil {
		return errZeroWindow
	}
	if src == nil {
		return fmt.Errorf("%w: nil WindowFilter", bloom.ErrIncompatible)
	}
	if src.Overflow() == bloom.Grow {
		return errGrow("Import")
	}
	enc, err := src.MarshalBinary()
	if err != nil {
		return err
	}
	r := w.p.gens
	want := w.appendWindowEncoding(nil, 0, make([]uint64, r), make([]int64, r), make([]string, r))
	if len(enc) != len(want) || string(enc[:winHeader-4]) != string(want[:winHeader-4]) ||
		binary.LittleEndian.Uint64(enc[winHeader:]) != uint64(w.p.period) {
		return fmt.Errorf("%w: window filter %q has other parameters than the imported one", bloom.ErrIncompatible, w.h.name)
	}
	rotations := binary.LittleEndian.Uint64(enc[winHeader+8:])
	head := int(rotations % uint64(r))
	counts, starts, bitmaps := make([]any, r), make([]any, r), make([]any, r)
	body := winHeader + winTableSize(r)
	size := int(w.p.m / 8)
	for j := range r {
		s := (head + 1 + j) % r
		c := binary.LittleEndian.Uint64(enc[winHeader+16+16*j:])
		t := int64(binary.LittleEndian.Uint64(enc[winHeader+24+16*j:]))
		if t < 0 || (w.p.period > 0 && t/1000 > 1<<52) {
			return fmt.Errorf("%w: generation %d of the imported window starts at %d, which Redis cannot keep", bloom.ErrIncompatible, j, t)
		}
		counts[s] = strconv.FormatUint(c, 10)
		starts[s] = strconv.FormatInt(t/1000, 10)
		bitmap := enc[body+j*size : body+(j+1)*size]
		for i, b := range bitmap {
			bitmap[i] = bits.Reverse8(b)
		}
		bitmaps[s] = bitmap
	}
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return w.h.wrap(err)
		}
		if try > maxChangedRetries {
			return w.errKeepsChanging()
		}
		v := w.view.load()
		args := w.baseArgs(v, 2+3*r)
		args = append(args, strconv.Itoa(head), strconv.FormatUint(rotations, 10))
		args = append(args, counts...)
		args = append(args, starts...)
		args = append(args, bitmaps...)
		cmd, notReplicated := w.h.waitWrite(ctx, windowImportScript, w.h.keys, args)
		res, err := cmd.Slice()
		if retry, err := w.changed(ctx, err); err != nil {
			return err
		} else if retry {
			continue
		}
		if err != nil {
			return w.h.scriptErr(ctx, err)
		}
		if len(res) != 2 {
			return fmt.Errorf("redisbloom: filter %q: malformed import reply", w.h.name)
		}
		gen, err1 := parseUint(w.h.name, "generation", res[0])
		epoch, err2 := parseUint(w.h.name, "epoch", res[1])
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		w.h.seen.observe(gen)
		w.view.see(epoch, int(min(rotations, math.MaxInt)))
		return notReplicated
	}
}
