package record

import (
	"bytes"
	"testing"
)

// TestPrevAt checks that Verify's light read finds prev by stepping, not
// by its slower search, on the lines writers make, and that it gives up on
// an origin with an escaped quote.
func TestPrevAt(t *testing.T) {
	quoted := sample()
	quoted.Origin = `a"b`
	for _, tt := range []struct {
		name string
		e    *Entry
		ok   bool
	}{
		{"sample", sample(), true},
		{"minimal", minimal(), true},
		{"bench", func() *Entry { e := benchEntry(3); e.Seq = 9; return e }(), true},
		{"escaped quote in origin", quoted, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line, err := tt.e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			a := bytes.Index(line, decisionAnchor)
			got := prevAt(line, a+len(decisionAnchor))
			want := bytes.Index(line, prevKey) + len(prevKey)
			if tt.ok && got != want || !tt.ok && got != -1 {
				t.Errorf("prevAt = %d, want %d (ok %v)", got, want, tt.ok)
			}
			if f, ok := Skim(line); !ok || string(f.PrevText) != tt.e.Prev.String() {
				t.Errorf("entryFactsOf = %+v, %v", f, ok)
			}
		})
	}
}
