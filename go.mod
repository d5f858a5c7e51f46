module github.com/bloomfilters/bloom

go 1.23

require (
	github.com/bits-and-blooms/bitset v1.29.0
	github.com/spaolacci/murmur3 v1.1.0
)
