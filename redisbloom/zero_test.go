package redisbloom_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/bloomfilters/bloom"
	"github.com/bloomfilters/bloom/redisbloom"
	"github.com/bloomfilters/bloom/redisbloom/bfdump"
	"github.com/redis/go-redis/v9"
)

// TestZeroValues calls every exported method of the zero value of every
// type of the package, found by reflection so that a method added later is
// called too: none may panic; a method with an error result must return an
// error wrapping ErrZeroValue; a method without one must return the zero
// value of its results (a zero filter has no name, size or keys) unless
// zeroAnswers below says otherwise; a *Pending's Result and a returned
// handle's Add must fail the same way. It needs no server: a zero value
// never talks to one.
func TestZeroValues(t *testing.T) {
	pipe := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}).Pipeline()
	zeros := []any{
		&redisbloom.Filter{},
		&redisbloom.ScalableFilter{},
		&redisbloom.ShardedFilter{},
		&redisbloom.ShardedScalableFilter{},
		&redisbloom.WindowFilter{},
		&redisbloom.NativeFilter{},
		&redisbloom.ShardedNativeFilter{},
		&redisbloom.Pending{},
	}
	// zeroAnswers checks the results of the methods without an error
	// result whose answer is not the zero value of their types.
	zeroAnswers := map[string]func(out []reflect.Value) error{
		"Filter.Coalesced": func(out []reflect.Value) error {
			return zeroErr(out[0].Interface().(*redisbloom.Filter).Add(context.Background(), []byte("k")))
		},
		"WindowFilter.OnEvent": func(out []reflect.Value) error {
			return zeroErr(out[0].Interface().(*redisbloom.WindowFilter).Add(context.Background(), []byte("k")))
		},
		"ShardedFilter.Shard":         wantInt(-1),
		"ShardedScalableFilter.Shard": wantInt(-1),
		"ShardedNativeFilter.Shard":   wantInt(-1),
	}
	for _, m := range []string{"AddPipelined", "TestPipelined", "TestAndAddPipelined"} {
		for _, typ := range []string{"Filter", "ShardedFilter"} {
			zeroAnswers[typ+"."+m] = func(out []reflect.Value) error {
				_, err := out[0].Interface().(*redisbloom.Pending).Result(context.Background())
				return zeroErr(err)
			}
		}
	}
	args := map[reflect.Type]func() reflect.Value{
		reflect.TypeFor[context.Context](): func() reflect.Value { return reflect.ValueOf(context.Background()) },
		reflect.TypeFor[string]():          func() reflect.Value { return reflect.ValueOf("k") },
		reflect.TypeFor[[]string]():        func() reflect.Value { return reflect.ValueOf([]string{"k", "l"}) },
		reflect.TypeFor[*bfdump.Filter](): func() reflect.Value {
			f, err := bfdump.Reserve(100, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			return reflect.ValueOf(f)
		},
		reflect.TypeFor[[]*bfdump.Filter](): func() reflect.Value {
			f, err := bfdump.Reserve(100, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			return reflect.ValueOf([]*bfdump.Filter{f})
		},
		reflect.TypeFor[func(bloom.WindowEvent)](): func() reflect.Value {
			return reflect.ValueOf(func(bloom.WindowEvent) { t.Error("a zero WindowFilter reported an event") })
		},
		reflect.TypeFor[[]byte]():                       func() reflect.Value { return reflect.ValueOf([]byte("k")) },
		reflect.TypeFor[[][]byte]():                     func() reflect.Value { return reflect.ValueOf([][]byte{[]byte("k"), []byte("l")}) },
		reflect.TypeFor[uint64]():                       func() reflect.Value { return reflect.ValueOf(uint64(1)) },
		reflect.TypeFor[[]uint64]():                     func() reflect.Value { return reflect.ValueOf([]uint64{1, 2}) },
		reflect.TypeFor[int]():                          func() reflect.Value { return reflect.ValueOf(1) },
		reflect.TypeFor[int64]():                        func() reflect.Value { return reflect.ValueOf(int64(1 << 20)) },
		reflect.TypeFor[time.Duration]():                func() reflect.Value { return reflect.ValueOf(time.Second) },
		reflect.TypeFor[redis.Pipeliner]():              func() reflect.Value { return reflect.ValueOf(pipe) },
		reflect.TypeFor[*bloom.BloomFilter]():           func() reflect.Value { return reflect.ValueOf(newBloom(t)) },
		reflect.TypeFor[[]*bloom.BloomFilter]():         func() reflect.Value { return reflect.ValueOf([]*bloom.BloomFilter{newBloom(t)}) },
		reflect.TypeFor[*bloom.ScalableBloomFilter]():   func() reflect.Value { return reflect.ValueOf(newScalableBloom(t)) },
		reflect.TypeFor[[]*bloom.ScalableBloomFilter](): func() reflect.Value { return reflect.ValueOf([]*bloom.ScalableBloomFilter{newScalableBloom(t)}) },
		reflect.TypeFor[*bloom.WindowFilter](): func() reflect.Value {
			w, err := bloom.NewWindow(1000, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			return reflect.ValueOf(w)
		},
		reflect.TypeFor[*redisbloom.Filter]():         func() reflect.Value { return reflect.ValueOf(&redisbloom.Filter{}) },
		reflect.TypeFor[*redisbloom.ScalableFilter](): func() reflect.Value { return reflect.ValueOf(&redisbloom.ScalableFilter{}) },
		reflect.TypeFor[*redisbloom.WindowFilter]():   func() reflect.Value { return reflect.ValueOf(&redisbloom.WindowFilter{}) },
		reflect.TypeFor[*redisbloom.ShardedFilter]():  func() reflect.Value { return reflect.ValueOf(&redisbloom.ShardedFilter{}) },
		reflect.TypeFor[*redisbloom.ShardedScalableFilter](): func() reflect.Value {
			return reflect.ValueOf(&redisbloom.ShardedScalableFilter{})
		},
	}
	called := 0
	for _, z := range zeros {
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
				if check, ok := zeroAnswers[name]; ok {
					if err := check(out); err != nil {
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
					if !out[j].IsZero() {
						t.Errorf("zero %s: result %d is %v, want the zero %v", name, j, out[j], out[j].Type())
					}
				}
			})
		}
	}
	if pipe.Len() != 0 {
		t.Errorf("zero values queued %d commands on the pipeline", pipe.Len())
	}
	t.Logf("%d methods of %d types called", called, len(zeros))
	if called < 100 {
		t.Errorf("only %d methods called: is the reflection finding them?", called)
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

func asError(v reflect.Value) error {
	if v.IsNil() {
		return nil
	}
	return v.Interface().(error)
}

// zeroErr reports what is wrong with err as the error of a zero value.
func zeroErr(err error) error {
	switch {
	case err == nil:
		return errors.New("no error")
	case !errors.Is(err, redisbloom.ErrZeroValue):
		return fmt.Errorf("error %q does not wrap ErrZeroValue", err)
	}
	return nil
}

func wantInt(want int) func([]reflect.Value) error {
	return func(out []reflect.Value) error {
		if got := int(out[0].Int()); got != want {
			return fmt.Errorf("%d, want %d", got, want)
		}
		return nil
	}
}

func newBloom(t *testing.T) *bloom.BloomFilter {
	f, err := bloom.New(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func newScalableBloom(t *testing.T) *bloom.ScalableBloomFilter {
	f, err := bloom.NewScalable(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
