package chain

import (
	"path/filepath"
	"testing"
)

func TestParseLaneName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server string
		n      int
		ok     bool
	}{
		{"fs", "fs", 1, true},
		{"fs@2", "fs", 2, true},
		{"my.server-1_x@64", "my.server-1_x", 64, true},
		{"fs@1", "", 0, false},   // lane 1 has one name: fs
		{"fs@02", "", 0, false},  // one lane, one name
		{"fs@65", "", 0, false},  // beyond MaxLanes
		{"fs@", "", 0, false},    // no number
		{"fs@2@3", "", 0, false}, // servers cannot hold '@'
		{"fs@+2", "", 0, false},
		{"fs@-2", "", 0, false},
		{"fs@2x", "", 0, false},
		{"fs@٢", "", 0, false}, // Arabic-Indic two
		{"fs@1000", "", 0, false},
		{"@2", "", 0, false},
		{".fs@2", "", 0, false},
		{".hidden", "", 0, false},
		{"", "", 0, false},
	} {
		s, n, ok := ParseLaneName(tc.name)
		if s != tc.server || n != tc.n || ok != tc.ok {
			t.Errorf("ParseLaneName(%q) = %q, %d, %v; want %q, %d, %v", tc.name, s, n, ok, tc.server, tc.n, tc.ok)
		}
		if ok && filepath.Base(LaneDir("/r", s, n)) != tc.name {
			t.Errorf("LaneDir(%q, %d) = %q, want the name parsed", s, n, LaneDir("/r", s, n))
		}
	}
}

func TestParseEntryName(t *testing.T) {
	for _, tc := range []struct {
		in  string
		seq uint64
		n   int
		ok  bool
	}{
		{"17", 17, 1, true},
		{"17@2", 17, 2, true},
		{"1@64", 1, 64, true},
		{"18446744073709551615", 1<<64 - 1, 1, true},
		{"0", 0, 0, false},
		{"0@2", 0, 0, false},
		{"17@1", 0, 0, false},
		{"17@65", 0, 0, false},
		{"17@", 0, 0, false},
		{"@2", 0, 0, false},
		{"-1", 0, 0, false},
		{"+1", 0, 0, false},
		{"18446744073709551616", 0, 0, false},
		{"1@2@3", 0, 0, false},
		{"", 0, 0, false},
	} {
		seq, n, ok := ParseEntryName(tc.in)
		if ok != tc.ok || ok && (seq != tc.seq || n != tc.n) {
			t.Errorf("ParseEntryName(%q) = %d, %d, %v; want %d, %d, %v", tc.in, seq, n, ok, tc.seq, tc.n, tc.ok)
		}
		if ok && (Lane{N: n}).EntryName(seq) != tc.in {
			t.Errorf("lane %d names entry %d %q, want %q", n, seq, (Lane{N: n}).EntryName(seq), tc.in)
		}
	}
}

// TestEntryNameLaneZero: a chain named by its directory alone (lane 0)
// names its entries as lane 1 does.
func TestEntryNameLaneZero(t *testing.T) {
	if got := (Lane{Dir: "/some/dir"}).EntryName(7); got != "7" {
		t.Errorf("lane 0 names entry 7 %q, want 7", got)
	}
}
