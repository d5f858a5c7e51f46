package bfdump

import "testing"

// The vectors come from RedisBloom's deps/murmur2/MurmurHash2.c
// (MurmurHash64A_Bloom, commit b28c2945) compiled with gcc on x86-64, fed
// the same bytes and seeds.
var murmurVectors = []struct {
	key  string
	seed uint64
	want uint64
}{
	{"", 0x0, 0x0},
	{"", 0xc6a4a7935bd1e995, 0x1ab11ea5a7b2c56e},
	{"", 0x0000000000000001, 0xc6a4a7935bd064dc},
	{"", 0xffffffffffffffff, 0xb0d9485c2cd761b2},
	{"a", 0x0, 0x071717d2d36b6b11},
	{"a", 0xc6a4a7935bd1e995, 0x4292cee227b9150a},
	{"a", 0x0000000000000001, 0xa52be5b3f6674b2a},
	{"a", 0xffffffffffffffff, 0x3434d0b6f5d67f81},
	{"ab", 0x0, 0x62be85b2fe53d1f8},
	{"ab", 0xc6a4a7935bd1e995, 0x2db1bf3a2e66542c},
	{"ab", 0x0000000000000001, 0x5bad9672b7abf6ed},
	{"ab", 0xffffffffffffffff, 0x59a8009b86b93be4},
	{"abc", 0x0, 0x9cc9c33498a95efb},
	{"abc", 0xc6a4a7935bd1e995, 0xca52f3863690cd7b},
	{"abc", 0x0000000000000001, 0xb4b72636e1480c51},
	{"abc", 0xffffffffffffffff, 0xae447c02eb702722},
	{"abcdefg", 0x0, 0x241aa52b0a62005d},
	{"abcdefg", 0xc6a4a7935bd1e995, 0x9fa0b24601c1e9a9},
	{"abcdefg", 0x0000000000000001, 0xfc9415b9d2ef3b6c},
	{"abcdefg", 0xffffffffffffffff, 0xc2c0598d40332e59},
	{"abcdefgh", 0x0, 0xafdb0257ff41aa98},
	{"abcdefgh", 0xc6a4a7935bd1e995, 0xd435df7a565a8af1},
	{"abcdefgh", 0x0000000000000001, 0xf65afeaec8664640},
	{"abcdefgh", 0xffffffffffffffff, 0x271a7e3cd5778f54},
	{"abcdefghi", 0x0, 0xc9b9d84356146ac2},
	{"abcdefghi", 0xc6a4a7935bd1e995, 0xa2c004e44bd0a465},
	{"abcdefghi", 0x0000000000000001, 0xc0b48f4bba30db08},
	{"abcdefghi", 0xffffffffffffffff, 0x96d516ecfb56dfba},
	{"key-0", 0x0, 0xf1f0584069925b07},
	{"key-0", 0xc6a4a7935bd1e995, 0x815efaa2a76fe5a3},
	{"key-0", 0x0000000000000001, 0x906d5b2cdf9ee8a3},
	{"key-0", 0xffffffffffffffff, 0xb53307bf212ab482},
	{"probe-9999", 0x0, 0xfacfab05e4f4db21},
	{"probe-9999", 0xc6a4a7935bd1e995, 0x5658284afa050a6a},
	{"probe-9999", 0x0000000000000001, 0xd84b6aa68432944b},
	{"probe-9999", 0xffffffffffffffff, 0xbba9278a09c99da3},
	{"The quick brown fox jumps over the lazy dog", 0x0, 0x5589ca33042a861b},
	{"The quick brown fox jumps over the lazy dog", 0xc6a4a7935bd1e995, 0xc7a616a28f4a74d6},
	{"The quick brown fox jumps over the lazy dog", 0x0000000000000001, 0xd8d4e6baf2275040},
	{"The quick brown fox jumps over the lazy dog", 0xffffffffffffffff, 0x5cf91346476cb789},
	{"https://example.com/", 0x0, 0x1b1839dea35564ab},
	{"https://example.com/", 0xc6a4a7935bd1e995, 0x4636b7a31d59a886},
	{"https://example.com/", 0x0000000000000001, 0x6974063d8600976b},
	{"https://example.com/", 0xffffffffffffffff, 0x82e99ab4f7151a93},
}

// murmurLengths are MurmurHash64A with RedisBloom's first seed of the first
// n bytes of byte(i*37 + 200), i = 0, 1, ...: every tail length 0..7 with
// 0 to 4 blocks before it.
var murmurLengths = []uint64{
	0x1ab11ea5a7b2c56e,
	0x0a55a63e8431e49a,
	0xc6795fd2206628ef,
	0xc13cbdad92e8f850,
	0x220875f9ebb4d8c4,
	0x1a93380e48ee15ec,
	0xc85bc314c3a41d41,
	0x5cdc20cd9b401e90,
	0xc6e126a6f7a6c6eb,
	0x3d2e9c3ca0782824,
	0xb68a5471572f4585,
	0xad44ae64370cd85b,
	0xb1f71529eb4288c8,
	0x80016d85556f27c9,
	0x5440de26a3f59429,
	0xcbbc6bdbc60ff066,
	0xacd9c4401e38d05f,
	0x8115bf9f983686e0,
	0xbc7f0d6bad89b45b,
	0xb26fe0b58eb05999,
	0x0f0fbd0e5ac46b11,
	0xd1a6b888f9fe30fc,
	0x901c07b3b949dd65,
	0x170de803986df42b,
	0xf8b83261af2fc1cb,
	0xa67db780084f2812,
	0xc35aa601a82e8881,
	0xc6218d28dff272a2,
	0x65f9c4c0d6eabeed,
	0xc022093150bfde2a,
	0x90633815b5549ce9,
	0x130c4e6e3e843d8d,
	0xe56e8757ffe81a60,
}

func TestMurmurHash64A(t *testing.T) {
	for _, v := range murmurVectors {
		if got := MurmurHash64A([]byte(v.key), v.seed); got != v.want {
			t.Errorf("MurmurHash64A(%q, %#x) = %#x, want %#x", v.key, v.seed, got, v.want)
		}
	}
	buf := make([]byte, len(murmurLengths)-1)
	for i := range buf {
		buf[i] = byte(i*37 + 200)
	}
	for n, want := range murmurLengths {
		if got := MurmurHash64A(buf[:n], murmurM); got != want {
			t.Errorf("MurmurHash64A(%d bytes) = %#x, want %#x", n, got, want)
		}
	}
}

func TestMurmurHash64AAllocs(t *testing.T) {
	key := []byte("https://example.com/some/page")
	if n := testing.AllocsPerRun(100, func() { MurmurHash64A(key, 1) }); n != 0 {
		t.Errorf("MurmurHash64A allocates %v times", n)
	}
}
