package main

import (
	"fmt"
	"strconv"

	"github.com/bloomfilters/bloom"
)

// checkMemory returns an error if a filter of bits bits needs more memory than
// this machine has (its physical memory, or a lower limit set on the process
// where the system tells), so that a filter that can never fit fails with
// one line rather than with the runtime's out-of-memory crash. what names the
// filter in the error, such as "-capacity 10 at -error-rate 0.01". A filter
// below the limit may still fail to fit beside everything else running;
// where the system does not tell its memory, nothing is checked.
func checkMemory(what string, bits uint64) error {
	need := (bits + 7) / 8
	have, source, ok := memoryLimit()
	if !ok || need <= have {
		return nil
	}
	return fmt.Errorf("%s needs a filter of %s (%s bits), more than the %s of %s", what, byteSize(need), thousands(bits), source, byteSize(have))
}

// byteSize formats n bytes with a binary unit: "512 bytes", "1.5 MiB".
func byteSize(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " bytes"
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %ciB", v, units[i])
}

// defaultBits returns the size in bits of the filter that bloom.New gives
// for capacity keys at errorRate, in the layout it chooses
// (bloom.DefaultLayout), without allocating it.
func defaultBits(capacity uint64, errorRate float64) (uint64, error) {
	size := bloom.Size
	if bloom.DefaultLayout(capacity, errorRate) == bloom.LayoutBlocked {
		size = bloom.BlockedSize
	}
	bits, _, err := size(capacity, errorRate)
	return bits, err
}
