package policy

import (
	"fmt"
	"testing"
)

// TestStrTable checks lookups of present and absent keys, including keys
// that share their first and last eight bytes (and so their hash).
func TestStrTable(t *testing.T) {
	var keys []string
	for i := range 1000 {
		keys = append(keys, fmt.Sprintf("team-%d", i))
	}
	keys = append(keys, "", "a", "ab", "abc", "abcd", "abcdefgh", "abcdefghi",
		"0123456789abcdef-middle-one-0123456789abcdef", "0123456789abcdef-middle-two-0123456789abcdef",
		// Keys of 17 to 24 bytes that differ only between their first
		// and last eight bytes: the middle word tells them apart.
		"ABCDEFGHxijklmnop", "ABCDEFGHyijklmnop", "ABCDEFGH12345678ijklmnop", "ABCDEFGH12345679ijklmnop",
		"ABCDEFGH1234567ijklmnop", "ABCDEFGH1234568ijklmnop")
	var tab strTable
	for i, k := range keys {
		if got := tab.put(k); got != i {
			t.Fatalf("put(%q) = %d, want %d", k, got, i)
		}
	}
	for i, k := range keys {
		if got := tab.put(k); got != i {
			t.Errorf("put(%q) again = %d, want %d", k, got, i)
		}
		if got := tab.get(k); got != i {
			t.Errorf("get(%q) = %d, want %d", k, got, i)
		}
	}
	for _, k := range []string{"team-1000", "team-", "team-01", "abcdefg", "b", "0123456789abcdef-middle-six-0123456789abcdef",
		"ABCDEFGHzijklmnop", "ABCDEFGH12345677ijklmnop", "ABCDEFGH1234569ijklmnop"} {
		if got := tab.get(k); got != -1 {
			t.Errorf("get(%q) = %d, want -1", k, got)
		}
	}
	var empty strTable
	if got := empty.get("x"); got != -1 {
		t.Errorf("empty get = %d", got)
	}
}

// TestStrTableProbes holds the benchmark policy's names and directories to
// short probe sequences: a hash that clusters similar keys would still be
// correct, and slow.
func TestStrTableProbes(t *testing.T) {
	var names, dirs strTable
	var keys []string
	for i := range benchTeams {
		keys = append(keys, fmt.Sprintf("team-%d", i))
		names.put(keys[i])
		d := "/srv/projects/" + keys[i]
		a, b := dirWordsAt(d, len(d))
		dirs.putWords(d, a, b, dirHash(a, len(d)))
	}
	for _, tab := range []struct {
		name   string
		t      *strTable
		prefix string
	}{{"names", &names, ""}, {"dirs", &dirs, "/srv/projects/"}} {
		total, worst := 0, 0
		for _, k := range keys {
			k = tab.prefix + k
			a, b := strWords(k)
			h := strHash(a, b, len(k))
			if tab.prefix != "" {
				a, _ = dirWordsAt(k, len(k))
				h = dirHash(a, len(k))
			}
			n := 1
			for j := h & tab.t.mask; tab.t.slots[j].key != k; j = (j + 1) & tab.t.mask {
				n++
			}
			total += n
			worst = max(worst, n)
		}
		if avg := float64(total) / benchTeams; avg > 2 || worst > 16 {
			t.Errorf("%s: probes per hit: %.2f on average, %d at worst; want at most 2 and 16", tab.name, avg, worst)
		} else {
			t.Logf("%s: probes per hit: %.2f on average, %d at worst", tab.name, avg, worst)
		}
	}
}

// TestKeyMap holds keyMap.get, which writes strTable.get out, to the keys
// it was given: each present key finds its own rule, and absent keys that
// share a length, words or filter bit with a present one find nothing.
func TestKeyMap(t *testing.T) {
	keys := []string{"", "a", "ab", "abc", "abcd", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmnop",
		"ABCDEFGHxijklmnop", "ABCDEFGH12345678ijklmnop", "0123456789abcdef-middle-one-0123456789abcdef", "api.github.com", "git"}
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("tool_%d", i))
	}
	var m keyMap
	rules := make([]rule, len(keys))
	for i, k := range keys {
		rules[i].index = int32(i)
		m.add(k, &rules[i], 0, 0)
	}
	for i, k := range keys {
		got := m.get(k)
		if len(got) != 1 || got[0].r != &rules[i] {
			t.Errorf("get(%q) = %d candidates, want rule %d alone", k, len(got), i)
		}
	}
	for _, k := range []string{"b", "abd", "abcdefgX", "Xbcdefgh", "ABCDEFGHyijklmnop", "ABCDEFGH12345679ijklmnop",
		"0123456789abcdef-middle-two-0123456789abcdef", "tool_300", "tool_", "gjt", "api.github.co"} {
		if got := m.get(k); got != nil {
			t.Errorf("get(%q) = %d candidates, want none", k, len(got))
		}
	}
}
