package main

import (
	"encoding"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomfilters/bloom"
)

// TestInfoScalableFillRatio checks that info reports the fill ratio and
// the estimated count of a scalable filter (fill_ratio was null for them
// once).
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

// TestInfoLayout checks that info names the layout of fixed-size and
// scalable filters, classic and blocked, in text and in JSON.
func TestInfoLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name, kind, layout string
		make               func() (encoding.BinaryMarshaler, error)
	}{
		{"fixed-classic", "fixed", "classic", func() (encoding.BinaryMarshaler, error) { return bloom.New(1000, 0.01, bloom.Classic()) }},
		{"fixed-blocked", "fixed", "blocked", func() (encoding.BinaryMarshaler, error) {
			return bloom.New(1000, 0.01, bloom.Blocked())
		}},
		{"scalable-classic", "scalable", "classic", func() (encoding.BinaryMarshaler, error) {
			return bloom.NewScalable(100, 0.01, bloom.Classic())
		}},
		{"scalable-blocked", "scalable", "blocked", func() (encoding.BinaryMarshaler, error) {
			return bloom.NewScalable(100, 0.01, bloom.Blocked())
		}},
	} {
		f, err := c.make()
		if err != nil {
			t.Fatal(err)
		}
		enc, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, c.name+".bf")
		if err := os.WriteFile(path, enc, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runBloom(t, "", "info", "-json", path)
		r.want(t, 0, nil)
		var got struct {
			Kind   string `json:"kind"`
			Layout string `json:"layout"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		if got.Kind != c.kind || got.Layout != c.layout {
			t.Errorf("%s: info -json says kind %q, layout %q", c.name, got.Kind, got.Layout)
		}
		r = runBloom(t, "", "info", path)
		r.want(t, 0, nil)
		if !strings.Contains(r.stdout, "layout:") || !strings.Contains(r.stdout, c.layout+"\n") {
			t.Errorf("%s: info prints no layout %s:\n%s", c.name, c.layout, r.stdout)
		}
	}
}
