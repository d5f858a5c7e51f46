package bloom

import "io"

// Filter is what BloomFilter, ScalableBloomFilter and WindowFilter have in
// common, for code that handles any kind, such as the result of ReadAny.
// Only *BloomFilter, *ScalableBloomFilter and *WindowFilter implement it, so
// that methods can be added to it as all gain them; use a type switch for
// the rest.
type Filter interface {
	Add(key []byte)
	AddString(key string)
	Test(key []byte) bool
	TestString(key string) bool
	TestAndAdd(key []byte) bool
	TestAndAddString(key string) bool
	AddMany(keys [][]byte)
	AddManyStrings(keys []string)
	TestMany(keys [][]byte, results []bool) []bool
	TestManyStrings(keys []string, results []bool) []bool
	TestAndAddMany(keys [][]byte, results []bool) []bool
	TestAndAddManyStrings(keys []string, results []bool) []bool

	Count() uint64
	Capacity() uint64
	ErrorRate() float64
	Seed() uint32
	Bits() uint64
	Layout() Layout
	FillRatio() float64
	EstimatedCount() uint64
	EstimatedErrorRate() float64
	Clear()

	EncodedSize() int
	AppendBinary(b []byte) ([]byte, error)
	MarshalBinary() ([]byte, error)
	AppendText(b []byte) ([]byte, error)
	MarshalText() ([]byte, error)
	WriteTo(w io.Writer) (int64, error)

	isFilter()
}

func (*BloomFilter) isFilter() {}

func (*ScalableBloomFilter) isFilter() {}
