package config

import (
	"os"
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

// TestDefaultConfig: AEGIS_HOME's when it is set; else the user's
// configuration directory's, unless only the state directory holds one.
func TestDefaultConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("AEGIS_HOME", "")
	state, _ := DefaultState()
	want := filepath.Join(home, ".config", "aegis", "aegis.yaml")
	if got := DefaultConfig(state); got != want {
		t.Errorf("fresh: %s, want %s", got, want)
	}
	os.MkdirAll(string(state), 0o700)
	os.WriteFile(state.Config(), []byte("version: 1\n"), 0o600)
	if got := DefaultConfig(state); got != state.Config() {
		t.Errorf("only the state directory's: %s, want %s", got, state.Config())
	}
	os.MkdirAll(filepath.Dir(want), 0o700)
	os.WriteFile(want, []byte("version: 1\n"), 0o600)
	if got := DefaultConfig(state); got != want {
		t.Errorf("both: %s, want %s", got, want)
	}
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	if got := DefaultConfig(state); got != state.Config() {
		t.Errorf("XDG_CONFIG_HOME without one: %s, want the state directory's %s", got, state.Config())
	}
	t.Setenv("AEGIS_HOME", "/a")
	if got := DefaultConfig(State("/a")); got != "/a/aegis.yaml" {
		t.Errorf("AEGIS_HOME: %s", got)
	}
}
