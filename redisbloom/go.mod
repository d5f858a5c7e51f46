module github.com/bloomfilters/bloom/redisbloom

go 1.26.0

require (
	github.com/bloomfilters/bloom v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/bits-and-blooms/bitset v1.29.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/spaolacci/murmur3 v1.1.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/bloomfilters/bloom => ../
