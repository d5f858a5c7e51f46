package bfdump

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

// Redis Cluster puts key in hash slot CRC16(tag) mod 16384, where tag is
// the part of key between its first '{' and the first '}' after it when
// that part is not empty, and the whole key otherwise (the cluster
// specification's HASH_SLOT). Restore's temporary key must share the
// target's slot, so that the final RENAME is one command on one node.

// crc16Table is CRC-16/XMODEM (polynomial 0x1021, initial 0), the CRC16 of
// Redis Cluster.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crc16Table[byte(c>>8)^s[i]]
	}
	return c
}

// hashTag returns the part of key Redis Cluster hashes.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// keySlot returns key's Redis Cluster hash slot.
func keySlot(key string) uint16 { return crc16(hashTag(key)) & 16383 }

// tempName returns a new name, random, in key's hash slot, for the key a
// Restore loads before renaming it to key.
func tempName(key string) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	suffix := ":bfdump-restore:" + hex.EncodeToString(r[:])
	if hashTag(key) != key {
		// key has a tag (between its first '{' and the first '}' after
		// it, not empty): appending keeps that first tag.
		return key + suffix, nil
	}
	if key != "" && !strings.Contains(key, "}") {
		// key is hashed whole and has no '}': "{key}" makes it the tag.
		return "{" + key + "}" + suffix, nil
	}
	// key is hashed whole but cannot be a tag: find a tag of its slot. One
	// name in 16384 has a given slot; the loop ends after about that many.
	slot := keySlot(key)
	for i := 0; ; i++ {
		tag := "bfdump-" + strconv.Itoa(i)
		if keySlot(tag) == slot {
			return "{" + tag + "}" + suffix, nil
		}
	}
}
