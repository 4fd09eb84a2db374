package policy

import "math/bits"

// strTable maps strings to small integers by open addressing. Decide looks
// names up in it (tools, servers, hosts, programs, id kinds, directories)
// by a cheap hash, and compares keys by two words read from them (their
// first and last eight bytes, say), which decide equality outright for a
// key of up to 16 bytes; a third word, bytes 8 to 15, decides it for a key
// of up to 24, and a longer key that matches them is compared in full. A
// hash collision costs a probe, never a wrong answer. Keys come
// from the policy and the table is at most half full, so a caller choosing
// the name looked up cannot make a probe sequence longer than the policy
// made it.
//
// Every key of one table MUST be given with its words and hash computed
// by the same functions: strWords and strHash for names, dirWordsAt and
// dirHash for directories.
type strTable struct {
	mask  uint64
	slots []tableSlot // a power of two in length; nil when empty
	n     int         // keys held
}

type tableSlot struct {
	a, b uint64 // the key's words
	h    uint64 // the key's hash
	key  string
	val  int32 // the value plus one; zero marks an empty slot
}

// put returns the value of a name, adding it with the next value (the
// number of keys before it) if it is new.
func (t *strTable) put(key string) int {
	a, b := strWords(key)
	return t.putWords(key, a, b, strHash(a, b, len(key)))
}

// putWords is put with the key's words and hash.
func (t *strTable) putWords(key string, a, b, h uint64) int {
	if t.slots != nil {
		if v := t.find(key, a, b, h); v >= 0 {
			return v
		}
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.insert(tableSlot{a: a, b: b, h: h, key: key, val: int32(t.n) + 1})
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
	j := s.h & t.mask
	for t.slots[j].val != 0 {
		j = (j + 1) & t.mask
	}
	t.slots[j] = s
}

// get returns the value of a name, or -1. (keyMap.get, which Decide
// calls, is get written out.)
func (t *strTable) get(key string) int {
	if t.slots == nil {
		return -1
	}
	a, b := strWords(key)
	return t.find(key, a, b, strHash(a, b, len(key)))
}

// find returns the value of key, whose words are a and b and hash h, or
// -1. The table MUST NOT be empty.
func (t *strTable) find(key string, a, b, h uint64) int {
	for j := h & t.mask; ; j = (j + 1) & t.mask {
		s := &t.slots[j]
		if s.val == 0 {
			return -1
		}
		if s.a == a && s.b == b && len(s.key) == len(key) &&
			(len(key) <= 16 || len(key) <= 24 && load64(s.key[8:]) == load64(key[8:]) || len(key) > 24 && s.key == key) {
			return int(s.val) - 1
		}
	}
}

// sameLong reports whether two keys of more than 16 bytes, of the same
// length and words, are the same: find's test for them, by a call.
func sameLong(a, b string) bool {
	if len(a) <= 24 {
		return load64(a[8:]) == load64(b[8:])
	}
	return a == b
}

// nameKey is a name of up to 16 bytes as its length and words (strWords),
// which decide its equality.
type nameKey struct {
	a, b uint64
	n    int
}

func keyOf(s string) nameKey {
	a, b := strWords(s)
	return nameKey{a, b, len(s)}
}

// strWords returns the words of a name: its first and last eight bytes,
// overlapping in a key of fewer than 16 (four bytes each below eight, and
// the first, middle and last byte below four). Where a call costs, the
// callers write it out.
func strWords(s string) (a, b uint64) {
	switch n := len(s); {
	case n >= 8:
		return load64(s), load64(s[n-8:])
	case n >= 4:
		return uint64(load32(s)), uint64(load32(s[n-4:]))
	case n > 0:
		return uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1]), 0
	}
	return 0, 0
}

// strHash hashes a name of n bytes from its words, as wyhash does short
// inputs, with the length in the top byte of the second word (whose top
// byte is zero for a name of fewer than eight bytes). Names that differ
// only in the middle of a long name collide, which costs a probe.
func strHash(a, b uint64, n int) uint64 {
	return mix(a^0xa0761d6478bd642f, b^0xe7037ed1a0b428db^uint64(n)<<56)
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
