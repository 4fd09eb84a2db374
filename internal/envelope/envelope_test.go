package envelope

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestPutFind(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name string
		args string
		want string // the arguments as kept
	}{
		{"object", `{"to":"bob@example.com","body":"[REDACTED:aws.access_key]"}`, `{"to":"bob@example.com","body":"[REDACTED:aws.access_key]"}`},
		{"whitespace compacted", "{ \"a\" :\n1 }", `{"a":1}`},
		{"not JSON kept as a string", `{"a":`, `"{\"a\":"`},
		{"invalid UTF-8 kept as a valid string", "\xff{", "\"\uFFFD{\""},
		{"nil", ``, `""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Record{Time: t0, Session: "s1", Principal: "alice", Server: "mail", Tool: "send", Forwarded: true,
				Arguments: json.RawMessage(tc.args), Redactions: []Redaction{{Pointer: "/body", Kind: "aws.access_key"}}}
			d, err := s.Put(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Find(dir, d)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Arguments) != tc.want {
				t.Errorf("arguments %s, want %s", got.Arguments, tc.want)
			}
			if diff := cmp.Diff(r.Redactions, got.Redactions); diff != "" {
				t.Errorf("redactions (-want +got):\n%s", diff)
			}
			if got.Nonce == "" || got.V != Version || got.Session != "s1" || !got.Time.Equal(t0) {
				t.Errorf("record %+v", got)
			}
		})
	}
}

// TestNonceHidesContent: the same input twice gives two hashes, so a
// published chain's envelope hashes cannot be matched against guesses.
func TestNonceHidesContent(t *testing.T) {
	s, err := Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, _ := s.Put(&Record{Time: t0, Arguments: json.RawMessage(`{"to":"bob"}`)})
	b, _ := s.Put(&Record{Time: t0, Arguments: json.RawMessage(`{"to":"bob"}`)})
	if a == b {
		t.Error("two records of the same input have the same hash")
	}
}

// TestEditedRecordIsNotFound: an edited line no longer answers for the
// hash in the chain.
func TestEditedRecordIsNotFound(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Put(&Record{Time: t0, Arguments: json.RawMessage(`{"to":"bob"}`)})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, "2026-11-29.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), "bob", "eve", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(dir, d); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find after an edit = %v, want ErrNotFound", err)
	}
}

func TestRetention(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"2026-10-01.jsonl", "2026-10-29.jsonl", "2026-10-30.jsonl", "2026-11-28.jsonl", "notes.txt", "2026-13-01.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// 30 days at noon on 2026-11-29: the cutoff is 2026-10-30T12:00; a
	// day file goes only when its whole day is before the cutoff.
	s, err := Open(dir, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(&Record{Time: t0, Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	want := []string{"2026-10-30.jsonl", "2026-11-28.jsonl", "2026-11-29.jsonl", "2026-13-01.jsonl", "notes.txt"}
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("files left (-want +got):\n%s", diff)
	}
}

func TestConcurrentPutAndDayRoll(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		hashes []Digest
	)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				at := t0.Add(time.Duration(g*50+i) * 10 * time.Minute) // crosses days
				d, err := s.Put(&Record{Time: at, Tool: "t", Arguments: json.RawMessage(`{"i":1}`)})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				hashes = append(hashes, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.Close()
	for _, d := range hashes {
		if _, err := Find(dir, d); err != nil {
			t.Fatalf("record %s: %v", d, err)
		}
	}
}

// TestPrepared: a prepared record is written by Write, once, and found by
// its Digest; a dropped one is never written.
func TestPrepared(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := &Record{Time: time.Now(), Server: "fs", Tool: "read_file", Forwarded: true, Arguments: []byte(`{"path":"/a"}`)}
	dropped, err := s.Prepare(rec)
	if err != nil {
		t.Fatal(err)
	}
	dropped.Drop()
	dropped.Drop() // twice does nothing
	if err := dropped.Write(); err == nil {
		t.Error("a dropped record was written")
	}
	kept, err := s.Prepare(rec)
	if err != nil {
		t.Fatal(err)
	}
	if kept.Digest == dropped.Digest {
		t.Error("two records of the same call share a digest (no fresh nonce)")
	}
	if err := kept.Write(); err != nil {
		t.Fatal(err)
	}
	if err := kept.Write(); err == nil {
		t.Error("a record was written twice")
	}
	if _, err := Find(dir, dropped.Digest); err == nil {
		t.Error("the dropped record is in the store")
	}
	got, err := Find(dir, kept.Digest)
	if err != nil || got.Tool != "read_file" || !got.Forwarded {
		t.Fatalf("Find = %+v, %v", got, err)
	}
}
