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
// included, for a window of the other policies than Grow.
func winTableSize(r int) int { return (16 + 16*r + 4 + 63) &^ 63 }

// winGrowTableSize is the bytes of the table of r generations with exts
// extensions in all under Grow: also an extension count per generation,
// and a record of 32 bytes (capacity, bits, hashes, four zero bytes,
// count) per extension.
func winGrowTableSize(r, exts int) int { return (16 + 24*r + 32*exts + 4 + 63) &^ 63 }

// winExt is an extension of a generation in transfer: its level's size,
// its count and its bitmap in Redis's layout.
type winExt struct {
	windowExt
	count  uint64
	bitmap string
}

// appendWindowEncoding appends the encoding of a window with w's
// parameters and the given state (generations oldest first: counts,
// starts in Unix nanoseconds, bitmaps in Redis's layout, "" for an empty
// generation, and under Grow each one's extensions, oldest first).
func (w *WindowFilter) appendWindowEncoding(enc []byte, rotations uint64, counts []uint64, starts []int64, bitmaps []string, exts [][]winExt) []byte {
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
	enc = binary.LittleEndian.AppendUint32(enc, math.Float32bits(float32(p.satLimit)))
	enc = binary.LittleEndian.AppendUint32(enc, crc32.Checksum(enc[start:], castagnoli))
	table := len(enc)
	enc = binary.LittleEndian.AppendUint64(enc, uint64(p.period))
	enc = binary.LittleEndian.AppendUint64(enc, rotations)
	for j := range p.gens {
		enc = binary.LittleEndian.AppendUint64(enc, counts[j])
		enc = binary.LittleEndian.AppendUint64(enc, uint64(starts[j]))
	}
	tableSize := winTableSize(p.gens)
	if p.period > 0 && p.policy == policyGrow {
		n := 0
		for _, x := range exts {
			enc = binary.LittleEndian.AppendUint64(enc, uint64(len(x)))
			n += len(x)
		}
		for _, x := range exts {
			for _, e := range x {
				enc = binary.LittleEndian.AppendUint64(enc, e.cap)
				enc = binary.LittleEndian.AppendUint64(enc, e.m)
				enc = binary.LittleEndian.AppendUint32(enc, uint32(e.k))
				enc = binary.LittleEndian.AppendUint32(enc, 0)
				enc = binary.LittleEndian.AppendUint64(enc, e.count)
			}
		}
		tableSize = winGrowTableSize(p.gens, n)
	}
	enc = binary.LittleEndian.AppendUint32(enc, crc32.Checksum(enc[table:], castagnoli))
	enc = append(enc, make([]byte, table+tableSize-len(enc))...)
	body := len(enc)
	appendBitmap := func(b string, size int) {
		if b == "" {
			enc = append(enc, make([]byte, size)...)
			return
		}
		for i := 0; i < len(b); i++ {
			enc = append(enc, bits.Reverse8(b[i]))
		}
	}
	for _, b := range bitmaps {
		appendBitmap(b, int(p.m/8))
	}
	for _, x := range exts {
		for _, e := range x {
			appendBitmap(e.bitmap, int(e.m/8))
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
// (a time window's starts are the server's times, to the microsecond: a
// start that a held rotation moved up, 1 ns above a time in memory, is the
// next microsecond here; and it is exported as of the server's time: what
// the next add does first, rotations or a hold, is done in the copy). It reads every
// generation in one round trip, consistently, and needs about three times
// the window's size in bytes on the client. It returns the errors Test
// returns, and ErrCorrupt if a live generation's bitmap or extension does
// not match its size. Under Grow the copy holds the live generations'
// extensions.
func (w *WindowFilter) Export(ctx context.Context) (*bloom.WindowFilter, error) {
	st, err := w.state(ctx, windowExportScript, true)
	if err != nil {
		return nil, err
	}
	r := w.p.gens
	// The slots the time's rotations emptied: the adv newest.
	emptied := func(s int) bool { return (st.head-s+r)%r < int(st.adv) }
	bitmaps := make([]string, r)
	for s := range r {
		if emptied(s) {
			continue
		}
		b, ok := st.bitmaps[s].(string)
		if !ok && st.counts[s] == 0 {
			continue // an empty generation's bitmap may be gone (windowCheckLua)
		}
		if !ok || uint64(len(b)) != w.p.m/8 {
			return nil, fmt.Errorf("%w: %q: bitmap of the generation in slot %d does not match its size", ErrCorrupt, w.h.name, s)
		}
		bitmaps[s] = b
	}
	exts, err := w.parseExts(st, emptied)
	if err != nil {
		return nil, err
	}
	head, rotations := st.head, st.rotations+st.adv
	counts, starts := st.counts, st.starts
	oc, os, ob, ox := make([]uint64, r), make([]int64, r), make([]string, r), make([][]winExt, r)
	for j := range r {
		s := (head + 1 + j) % r
		oc[j], os[j], ob[j], ox[j] = counts[s], starts[s]*1000, bitmaps[s], exts[s]
	}
	enc := w.appendWindowEncoding(nil, rotations, oc, os, ob, ox)
	g := new(bloom.WindowFilter)
	if err := g.UnmarshalBinary(enc); err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrCorrupt, w.h.name, err)
	}
	return g, nil
}

// parseExts returns the extensions of each slot from the export script's
// reply under Grow (nil for the other policies): an error wrapping
// ErrCorrupt if one of a slot not emptied is missing or not of its level's
// size.
func (w *WindowFilter) parseExts(st *windowState, emptied func(s int) bool) ([][]winExt, error) {
	r := w.p.gens
	exts := make([][]winExt, r)
	if w.xs == nil {
		return exts, nil
	}
	bad := func(s int) error {
		return fmt.Errorf("%w: %q: extensions of the generation in slot %d do not match their sizes", ErrCorrupt, w.h.name, s)
	}
	rest := st.exts
	for s := range r {
		if len(rest) == 0 {
			return nil, bad(s)
		}
		n, ok := rest[0].(int64)
		if !ok || n < 0 || int(n) > len(w.xs) || len(rest) < 1+2*int(n) {
			return nil, bad(s)
		}
		isLive := !emptied(s)
		for j := range int(n) {
			c, err := parseUint(w.h.name, "extension count", rest[1+2*j])
			b, ok := rest[2+2*j].(string)
			x := w.xs[j]
			if isLive && (err != nil || !ok || uint64(len(b)) != x.m/8 || c > x.cap) {
				return nil, bad(s)
			}
			if isLive {
				exts[s] = append(exts[s], winExt{windowExt: x, count: c, bitmap: b})
			}
		}
		rest = rest[1+2*int(n):]
	}
	if len(rest) != 0 {
		return nil, bad(r)
	}
	return exts, nil
}

// Import replaces the window's generations, counts, starts and rotations
// with those of src, in one round trip, atomically: Export afterwards
// returns a window Equal to src (a time window's starts rounded up to the
// microsecond; and if src's generations are no longer live at the server's
// time, Export drops them as the next add does). src must have the
// window's parameters (window, error rate, generations, period, overflow
// policy, seed), or Import returns an error wrapping bloom.ErrIncompatible,
// as it does for a window under bloom.Grow with an extension larger than
// one Redis string (see WindowFilter). Under Grow the extensions of every
// generation are imported with it.
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
	enc, err := src.MarshalBinary()
	if err != nil {
		return err
	}
	r := w.p.gens
	want := w.appendWindowEncoding(nil, 0, make([]uint64, r), make([]int64, r), make([]string, r), make([][]winExt, r))
	incompatible := fmt.Errorf("%w: window filter %q has other parameters than the imported one", bloom.ErrIncompatible, w.h.name)
	if len(enc) < len(want) || string(enc[:winHeader-4]) != string(want[:winHeader-4]) ||
		binary.LittleEndian.Uint64(enc[winHeader:]) != uint64(w.p.period) {
		return incompatible
	}
	// Under Grow, each generation's extensions (oldest generation first),
	// whose words follow the r bases.
	size := int(w.p.m / 8)
	tableSize := winTableSize(r)
	var extArgs [][]any
	if w.xs != nil {
		extArgs = make([][]any, r)
		total, nExt := 0, 0
		for j := range r {
			n := binary.LittleEndian.Uint64(enc[winHeader+16+16*r+8*j:])
			if n > uint64(len(w.xs)) {
				return fmt.Errorf("%w: generation %d of the imported window has %d extensions; on Redis a generation has at most %d",
					bloom.ErrIncompatible, j, n, len(w.xs))
			}
			nExt += int(n)
		}
		tableSize = winGrowTableSize(r, nExt)
		rec := winHeader + 16 + 24*r
		off := winHeader + tableSize + r*size
		for j := range r {
			n := int(binary.LittleEndian.Uint64(enc[winHeader+16+16*r+8*j:]))
			extArgs[j] = append(extArgs[j], strconv.Itoa(n))
			for i := range n {
				x := w.xs[i]
				if binary.LittleEndian.Uint64(enc[rec:]) != x.cap || binary.LittleEndian.Uint64(enc[rec+8:]) != x.m ||
					binary.LittleEndian.Uint32(enc[rec+16:]) != uint32(x.k) || off+int(x.m/8) > len(enc) {
					return incompatible
				}
				bitmap := enc[off : off+int(x.m/8)]
				for i, b := range bitmap {
					bitmap[i] = bits.Reverse8(b)
				}
				extArgs[j] = append(extArgs[j], strconv.FormatUint(binary.LittleEndian.Uint64(enc[rec+24:]), 10), bitmap)
				rec += 32
				off += int(x.m / 8)
				total += int(x.m / 8)
			}
		}
		if winHeader+tableSize+r*size+total > len(enc) {
			return incompatible
		}
	} else if len(enc) != len(want) {
		return incompatible
	}
	rotations := binary.LittleEndian.Uint64(enc[winHeader+8:])
	head := int(rotations % uint64(r))
	counts, starts, bitmaps := make([]any, r), make([]any, r), make([]any, r)
	body := winHeader + tableSize
	for j := range r {
		s := (head + 1 + j) % r
		c := binary.LittleEndian.Uint64(enc[winHeader+16+16*j:])
		t := int64(binary.LittleEndian.Uint64(enc[winHeader+24+16*j:]))
		if t < 0 || (w.p.period > 0 && t/1000 > 1<<52) {
			return fmt.Errorf("%w: generation %d of the imported window starts at %d, which Redis cannot keep", bloom.ErrIncompatible, j, t)
		}
		counts[s] = strconv.FormatUint(c, 10)
		// Rounded up to the server's microsecond: a start moved up by a
		// held rotation (to 1 ns above a time) stays above it, so the
		// generation's keys stay younger than its start plus a period.
		starts[s] = strconv.FormatInt((t+999)/1000, 10)
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
		args := w.baseArgs(v, 0, 2+3*r)
		args = append(args, strconv.Itoa(head), strconv.FormatUint(rotations, 10))
		args = append(args, counts...)
		args = append(args, starts...)
		args = append(args, bitmaps...)
		if extArgs != nil {
			for s := range r {
				// Slot s holds the generation j after the oldest.
				args = append(args, extArgs[(s-head-1+2*r)%r]...)
			}
		}
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
