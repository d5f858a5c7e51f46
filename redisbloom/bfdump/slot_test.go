package bfdump

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestKeySlot(t *testing.T) {
	// CRC-16/XMODEM's check value, and slots from the Redis Cluster
	// specification and redis-cli (CLUSTER KEYSLOT).
	if got := crc16("123456789"); got != 0x31c3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for key, tag := range map[string]string{
		"{user1000}.following": "user1000",
		"foo{}{bar}":           "foo{}{bar}",
		"foo{{bar}}zap":        "{bar",
		"foo{bar}{zap}":        "bar",
		"{}":                   "{}",
		"":                     "",
		"a{b":                  "a{b",
		"a}b{c}":               "c",
	} {
		if got := hashTag(key); got != tag {
			t.Errorf("hashTag(%q) = %q, want %q", key, got, tag)
		}
	}
	for key, slot := range map[string]uint16{"foo": 12182, "bar": 5061, "somekey": 11058, "hello": 866} {
		if got := keySlot(key); got != slot {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, slot)
		}
	}
}

// slotKeys returns keys with and without hash tags, braces anywhere.
func slotKeys() []string {
	keys := []string{"", "k", "{k}", "{}", "{}k", "k{}", "a{b", "a}b", "}", "{", "}{", "{a}b{c}", "{{a}}", "a{}b{c}", "bf:{crawler}:seen", "x{y}"}
	r := rand.New(rand.NewPCG(9, 10))
	const alphabet = "ab{}:"
	for range 2000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		keys = append(keys, string(b))
	}
	return keys
}

// TestTempNameSlot checks that Restore's temporary key shares the target's
// Redis Cluster slot, whatever braces the target's name has.
func TestTempNameSlot(t *testing.T) {
	for _, key := range slotKeys() {
		tmp, err := tempName(key)
		if err != nil {
			t.Fatal(err)
		}
		if keySlot(tmp) != keySlot(key) {
			t.Errorf("tempName(%q) = %q: slot %d, want %d", key, tmp, keySlot(tmp), keySlot(key))
		}
		if tmp == key || !strings.Contains(tmp, "bfdump-restore:") {
			t.Errorf("tempName(%q) = %q", key, tmp)
		}
	}
}

// TestKeySlotMatchesCluster checks keySlot and tempName against a real
// Redis Cluster's CLUSTER KEYSLOT (BLOOM_REDIS_CLUSTER_ADDRS, which
// .ci/start-redis-cluster.sh sets).
func TestKeySlotMatchesCluster(t *testing.T) {
	addrs := os.Getenv("BLOOM_REDIS_CLUSTER_ADDRS")
	if addrs == "" {
		unavailable(t, "BLOOM_REDIS_CLUSTER_ADDRS is not set: start a cluster with `. .ci/start-redis-cluster.sh` from the repository root")
	}
	rdb := redis.NewClient(&redis.Options{Addr: strings.Split(addrs, ",")[0]})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := slotKeys()[:600]
	pipe := rdb.Pipeline()
	cmds := make([]*redis.IntCmd, 0, 2*len(keys))
	tmps := make([]string, len(keys))
	for i, key := range keys {
		tmps[i], _ = tempName(key)
		cmds = append(cmds, pipe.ClusterKeySlot(ctx, key), pipe.ClusterKeySlot(ctx, tmps[i]))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, key := range keys {
		if got := cmds[2*i].Val(); got != int64(keySlot(key)) {
			t.Errorf("CLUSTER KEYSLOT %q = %d, keySlot %d", key, got, keySlot(key))
		}
		if got := cmds[2*i+1].Val(); got != cmds[2*i].Val() {
			t.Errorf("CLUSTER KEYSLOT of tempName(%q) = %q: %d, the key's %d", key, tmps[i], got, cmds[2*i].Val())
		}
	}
}
