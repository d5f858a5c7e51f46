module github.com/bloomfilters/bloom/bench

go 1.23

replace github.com/bloomfilters/bloom => ../

require (
	github.com/bits-and-blooms/bitset v1.29.0
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/bloomfilters/bloom v0.0.0-00010101000000-000000000000
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/greatroar/blobloom v0.8.1
	github.com/spaolacci/murmur3 v1.1.0
	github.com/tylertreat/BoomFilters v0.0.0-20251001182300-5b3723cc64ae
)

require github.com/d4l3k/messagediff v1.2.1 // indirect
