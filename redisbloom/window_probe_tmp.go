package redisbloom

import "github.com/bloomfilters/bloom"

// TEMPORARY until bloom.NewWindow is merged.
func windowProbe(window uint64, errorRate float64, opts []bloom.Option) (windowParams, error) {
	return windowParamsFor(window, errorRate, 0, 0, 0, bloom.DefaultSeed)
}

func windowValid(p windowParams) error { return nil }
