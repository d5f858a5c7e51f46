package bfdump

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"testing"

	"github.com/bloomfilters/bloom"
	"github.com/redis/go-redis/v9"
)

// TestZeroValues calls every exported method of a zero Filter and a zero
// Loader, found by reflection so that a method added later is called too:
// none may panic. On a zero Filter a method with an error result must
// return an error wrapping ErrZeroValue and write nothing; one without must
// answer as a filter with nothing in it and no sub-filter (results of their
// zero value: false, 0, nil or empty) unless answers below says otherwise.
// The decoders (ReadFrom, UnmarshalBinary) fill a zero Filter; the zero
// Loader is ready for a header. Restore of a zero Filter fails the same way
// without sending anything.
func TestZeroValues(t *testing.T) {
	valid, err := Reserve(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	_ = valid.AddString("x")
	saved, _ := valid.MarshalBinary()
	var written bytes.Buffer
	answers := map[string]func(out []reflect.Value) error{
		"Filter.Clone": func(out []reflect.Value) error {
			return zeroErr(out[0].Interface().(*Filter).Add([]byte("k")))
		},
		"Filter.Chunks": func(out []reflect.Value) error {
			for it := range out[0].Interface().(iter.Seq2[int64, []byte]) {
				return fmt.Errorf("the stream has a pair (iterator %d)", it)
			}
			return nil
		},
		"Filter.AppendHeader": func(out []reflect.Value) error {
			if got := string(out[0].Bytes()); got != "k" {
				return fmt.Errorf("%q, want dst (%q) unchanged", got, "k")
			}
			return nil
		},
		"Filter.TestMany":        allFalse,
		"Filter.TestManyStrings": allFalse,
		// The decoders fill a zero Filter: an input that is no saved form
		// is corrupt, a saved form loads (checked below).
		"Filter.ReadFrom":        wantCorrupt,
		"Filter.UnmarshalBinary": wantCorrupt,
		// The zero Loader is ready for the header: what follows is corrupt.
		"Loader.LoadChunk": wantCorrupt,
		"Loader.Filter":    wantCorrupt,
	}
	args := map[reflect.Type]func() reflect.Value{
		reflect.TypeFor[[]byte]():    func() reflect.Value { return reflect.ValueOf([]byte("k")) },
		reflect.TypeFor[string]():    func() reflect.Value { return reflect.ValueOf("k") },
		reflect.TypeFor[[][]byte]():  func() reflect.Value { return reflect.ValueOf([][]byte{[]byte("k"), []byte("l")}) },
		reflect.TypeFor[[]string]():  func() reflect.Value { return reflect.ValueOf([]string{"k", "l"}) },
		reflect.TypeFor[[]bool]():    func() reflect.Value { return reflect.ValueOf([]bool(nil)) },
		reflect.TypeFor[int64]():     func() reflect.Value { return reflect.ValueOf(int64(1)) },
		reflect.TypeFor[io.Writer](): func() reflect.Value { return reflect.ValueOf(&written) },
		reflect.TypeFor[io.Reader](): func() reflect.Value { return reflect.ValueOf(bytes.NewReader([]byte("k"))) },
		reflect.TypeFor[*Filter]():   func() reflect.Value { return reflect.ValueOf(valid) },
	}
	called := 0
	for _, z := range []any{&Filter{}, &Loader{}} {
		v := reflect.ValueOf(z)
		typ := v.Type().Elem().Name()
		for i := range v.NumMethod() {
			m := v.Type().Method(i)
			name := typ + "." + m.Name
			t.Run(name, func(t *testing.T) {
				in := []reflect.Value{}
				for j := range m.Type.NumIn() - 1 { // In(0) is the receiver
					mk, ok := args[m.Type.In(j+1)]
					if !ok {
						t.Fatalf("no argument of type %v for %s: add one to the table", m.Type.In(j+1), name)
					}
					in = append(in, mk())
				}
				called++
				out, err := call(v.Method(i), in)
				if err != nil {
					t.Fatalf("zero %s: %v", name, err)
				}
				if check, ok := answers[name]; ok {
					if err := protect(func() error { return check(out) }); err != nil {
						t.Errorf("zero %s: %v", name, err)
					}
					return
				}
				n := len(out)
				if n > 0 && m.Type.Out(n-1) == reflect.TypeFor[error]() {
					if err := zeroErr(asError(out[n-1])); err != nil {
						t.Errorf("zero %s: %v", name, err)
					}
					n--
				}
				for j := range n {
					if !emptyValue(out[j]) {
						t.Errorf("zero %s: result %d is %v, want the zero %v", name, j, out[j], out[j].Type())
					}
				}
			})
		}
	}
	if written.Len() != 0 {
		t.Errorf("a zero Filter wrote %d bytes", written.Len())
	}
	if called < 25 {
		t.Errorf("only %d methods called: is the reflection finding them?", called)
	}

	// The decoders make a zero Filter usable.
	var f, g Filter
	if _, err := f.ReadFrom(bytes.NewReader(saved)); err != nil || !f.Equal(valid) {
		t.Errorf("ReadFrom into a zero Filter: %v", err)
	}
	if err := g.UnmarshalBinary(saved); err != nil || !g.Equal(valid) {
		t.Errorf("UnmarshalBinary into a zero Filter: %v", err)
	}
	// Restore of a zero Filter sends nothing: the client has no server.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	if err := protect(func() error { return zeroErr(Restore(context.Background(), rdb, "k", &Filter{}, true)) }); err != nil {
		t.Errorf("Restore of a zero Filter: %v", err)
	}
}

// call calls m with in and turns a panic into an error.
func call(m reflect.Value, in []reflect.Value) (out []reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return m.Call(in), nil
}

// protect calls f and turns a panic into an error.
func protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return f()
}

func asError(v reflect.Value) error {
	if v.IsNil() {
		return nil
	}
	return v.Interface().(error)
}

// emptyValue reports whether v is its type's zero value or an empty slice.
func emptyValue(v reflect.Value) bool {
	return v.IsZero() || (v.Kind() == reflect.Slice && v.Len() == 0)
}

// zeroErr reports what is wrong with err as the error of a zero Filter.
func zeroErr(err error) error {
	switch {
	case err == nil:
		return errors.New("no error")
	case !errors.Is(err, ErrZeroValue):
		return fmt.Errorf("error %q does not wrap ErrZeroValue", err)
	}
	return nil
}

func allFalse(out []reflect.Value) error {
	for i, present := range out[0].Interface().([]bool) {
		if present {
			return fmt.Errorf("key %d reported present", i)
		}
	}
	return nil
}

func wantCorrupt(out []reflect.Value) error {
	err := asError(out[len(out)-1])
	if !errors.Is(err, bloom.ErrCorrupt) {
		return fmt.Errorf("error %v, want one wrapping bloom.ErrCorrupt", err)
	}
	return nil
}
