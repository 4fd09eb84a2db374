package policy

import "math/bits"

// strTable maps strings to small integers by open addressing. Decide looks
// names up in it (tools, servers, hosts, programs, id kinds, the first
// component of a path below a wide directory) with one cheap hash of the
// name and, on a hash hit, one comparison of the whole key: a hash
// collision costs a probe, never a wrong answer. Keys come from the policy
// and the table is at most half full, so a caller choosing the looked-up
// name cannot make a probe sequence longer than the policy made it.
type strTable struct {
	mask  uint64
	slots []tableSlot // a power of two in length; nil when empty
	n     int         // keys held
}

type tableSlot struct {
	hash uint64
	key  string
	val  int32 // the value plus one; zero marks an empty slot
}

// put returns the value of key, adding it with the next value (the number
// of keys before it) if it is new.
func (t *strTable) put(key string) int { return t.putHashed(key, strHash(key)) }

// putHashed is put with the key's hash h; every key of a table MUST be
// hashed by the same function.
func (t *strTable) putHashed(key string, h uint64) int {
	if t.slots != nil {
		if v := t.getHashed(key, h); v >= 0 {
			return v
		}
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.insert(tableSlot{hash: h, key: key, val: int32(t.n) + 1})
	t.n++
	return t.n - 1
}

func (t *strTable) grow() {
	old := t.slots
	n := max(8, 2*len(old))
	t.slots, t.mask = make([]tableSlot, n), uint64(n-1)
	for _, s := range old {
		if s.val != 0 {
			t.insert(s)
		}
	}
}

func (t *strTable) insert(s tableSlot) {
	j := s.hash & t.mask
	for t.slots[j].val != 0 {
		j = (j + 1) & t.mask
	}
	t.slots[j] = s
}

// get returns the value of key, or -1.
func (t *strTable) get(key string) int {
	if t.slots == nil {
		return -1
	}
	return t.getHashed(key, strHash(key))
}

// getHashed is get for a key whose hash is h (as given to putHashed). The
// table MUST NOT be empty.
func (t *strTable) getHashed(key string, h uint64) int {
	for j := h & t.mask; ; j = (j + 1) & t.mask {
		s := &t.slots[j]
		if s.val == 0 {
			return -1
		}
		if s.hash == h && s.key == key {
			return int(s.val) - 1
		}
	}
}

// strHash hashes s in constant time from its length and at most its first
// and last eight bytes (all of them up to 16 bytes), as wyhash does short
// inputs. Keys that differ only in the middle of a long name collide, which
// costs a probe.
func strHash(s string) uint64 {
	n := len(s)
	var a, b uint64
	switch {
	case n >= 8:
		a, b = load64(s), load64(s[n-8:])
	case n >= 4:
		a, b = uint64(load32(s)), uint64(load32(s[n-4:]))
	case n > 0:
		a = uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1])
	}
	return mix(uint64(n)^0x8ebc6af09c88c6e3, mix(a^0xa0761d6478bd642f, b^0xe7037ed1a0b428db))
}

// mix is wyhash's: the two halves of a 128-bit product, folded.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// load64 reads the first eight bytes of s as a little-endian number; the
// compiler makes it one load.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func load32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
