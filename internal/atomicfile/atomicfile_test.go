package atomicfile_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/aegis-mcp/aegis/internal/atomicfile"
)

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name string
		old  []byte // nil: no file before
		data []byte
		perm os.FileMode
	}{
		{"new file", nil, []byte("hello\n"), 0o600},
		{"replace", []byte("old content, longer than the new\n"), []byte("new\n"), 0o644},
		{"empty", []byte("old\n"), nil, 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if tt.old != nil {
				if err := os.WriteFile(p, tt.old, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := atomicfile.WriteFile(p, tt.data, tt.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p)
			if err != nil || string(got) != string(tt.data) {
				t.Fatalf("content = %q, %v; want %q", got, err, tt.data)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if runtime.GOOS != "windows" && fi.Mode().Perm() != tt.perm {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tt.perm)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the file (a temporary was left)", len(entries))
			}
		})
	}
}

// A write that fails leaves the old content and no temporary file.
func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.Mkdir(p, 0o700); err != nil { // a directory cannot be renamed over
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(p, []byte("x"), 0o600); err == nil {
		t.Fatal("WriteFile over a directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || !entries[0].IsDir() {
		t.Fatalf("directory holds %v, want only the old directory", entries)
	}
}

func TestWriteFileRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := atomicfile.WriteFile("f", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile("f"); string(got) != "x" {
		t.Fatalf("content = %q", got)
	}
}

func TestSyncDir(t *testing.T) {
	if err := atomicfile.SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
