package envelope

import (
	"encoding/json"
	"testing"
	"time"
)

// benchArgs are a typical call's arguments.
var benchArgs = json.RawMessage(`{"path":"/home/u/projects/notes.md"}`)

// benchRecord is the envelope of a typical call: a short arguments object,
// nothing redacted.
func benchRecord(at time.Time) *Record {
	return &Record{
		Time: at, Session: "5f0c2a9e1b7d4c36", Principal: "alice",
		Server: "demo", Tool: "read_file", Forwarded: true,
		Arguments: benchArgs,
	}
}

// BenchmarkPut writes the envelope of a typical call: the record line, its
// hash and one write(2).
func BenchmarkPut(b *testing.B) {
	s, err := Open(b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Put(benchRecord(at)); err != nil {
			b.Fatal(err)
		}
	}
}
