package config

import (
	"path/filepath"
	"testing"
)

// TestDefaultState: AEGIS_HOME wins, then XDG_STATE_HOME, then the home
// directory; the layout under it is the one SPEC.md and the README name.
func TestDefaultState(t *testing.T) {
	for _, tc := range []struct {
		name, aegis, xdg, home, want string
	}{
		{"AEGIS_HOME", "/a", "/x", "/h", "/a"},
		{"XDG_STATE_HOME", "", "/x", "/h", "/x/aegis"},
		{"home", "", "", "/h", "/h/.local/state/aegis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AEGIS_HOME", tc.aegis)
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			s, err := DefaultState()
			if err != nil || string(s) != tc.want {
				t.Fatalf("DefaultState() = %q, %v; want %q", s, err, tc.want)
			}
		})
	}
	s := State("/s")
	for got, want := range map[string]string{
		s.Config():        "/s/aegis.yaml",
		s.Chains():        "/s/chain",
		s.PinFile("fs"):   "/s/pins/fs.json",
		s.Envelopes("fs"): "/s/envelopes/fs",
		s.StderrLog("fs"): "/s/logs/fs.stderr.log",
	} {
		if got != filepath.FromSlash(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
