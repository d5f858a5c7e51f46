package redisbloom

import "strconv"

// metaFields returns the metadata fields that describe f, as field, value,
// ... for HSET, the format first; metaCheck covers exactly these.
func (f *NativeFilter) metaFields() []any {
	return []any{
		"format", nativeFormat,
		"id", f.id,
		"capacity", strconv.FormatUint(f.capacity, 10),
		"error_rate", strconv.FormatFloat(f.errorRate, 'g', -1, 64),
		"expansion", strconv.FormatUint(uint64(f.expansion), 10),
	}
}
