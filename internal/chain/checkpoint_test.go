package chain

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/jcsref"
)

func TestCheckpointLine(t *testing.T) {
	pub, priv := testKey(t, 1)
	ck := signCheckpoint(priv, 42, digestOf("x"))
	line := appendCheckpoint(nil, &ck)
	if _, err := jcsref.Canonical(line); err != nil {
		t.Fatal(err)
	}
	got, err := decodeCheckpoint(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got != ck || !got.verify(pub, keyID(pub)) {
		t.Errorf("checkpoint did not round-trip or verify: %+v", got)
	}
	ref, _ := jcsref.Canonical(bytes.TrimSuffix(line, []byte("\n")))
	if !bytes.Equal(append(ref, '\n'), line) {
		t.Errorf("checkpoint line is not JCS: %s", line)
	}
	for _, bad := range []string{
		strings.Replace(string(line), `"checkpoint":42`, `"checkpoint":042`, 1),
		strings.Replace(string(line), `"checkpoint":42`, `"checkpoint":0`, 1),
		strings.Replace(string(line), `"key":"`, `"key":"A`, 1),
		strings.Replace(string(line), `"}`, `","x":""}`, 1),
		string(line[:len(line)-5]),
	} {
		if _, err := decodeCheckpoint([]byte(strings.TrimSuffix(bad, "\n"))); err == nil {
			t.Errorf("decodeCheckpoint accepted %s", bad)
		}
	}
}
