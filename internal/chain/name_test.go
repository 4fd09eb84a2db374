package chain

import (
	"strings"
	"testing"
)

func TestCheckServerName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"fs", true},
		{"my.server-1_x", true},
		{"A9", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{".hidden", false},
		{"..", false},
		{"fs@2", false}, // '@' is the lane's
		{"a/b", false},
		{`a\b`, false},
		{"a b", false},
		{"fé", false},
		{"a\x00", false},
	} {
		if err := CheckServerName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckServerName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
