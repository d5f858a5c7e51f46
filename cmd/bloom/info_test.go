package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestInfoScalableFillRatio checks that info finds the library's
// ScalableBloomFilter.FillRatio and EstimatedCount, which it looks up by
// method name: fill_ratio was null for scalable filters without them.
func TestInfoScalableFillRatio(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "seen.bf")
	runBloom(t, "a\nb\nc\nd\n", "dedup", "-q", "-state", state).want(t, 0, nil)
	r := runBloom(t, "", "info", "-json", state)
	r.want(t, 0, nil)
	var got struct {
		FillRatio      *float64 `json:"fill_ratio"`
		EstimatedCount *uint64  `json:"estimated_count"`
		Bits           uint64   `json:"bits"`
		Hashes         *uint    `json:"hashes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.FillRatio == nil || *got.FillRatio <= 0 || *got.FillRatio > 4*64/float64(got.Bits) {
		t.Errorf("fill_ratio = %v for 4 keys in %d bits", got.FillRatio, got.Bits)
	}
	if got.EstimatedCount == nil || *got.EstimatedCount != 4 {
		t.Errorf("estimated_count = %v, want 4", got.EstimatedCount)
	}
}
