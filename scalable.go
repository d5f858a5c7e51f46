package bloom

// growth says how a ScalableBloomFilter sizes each new sub-filter.
type growth uint8

const (
	growthNone growth = iota
	growthLinear
	growthExponential
)
