package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// What differs between two runs of the same session against
// server-everything 2026.8.31, and nothing else, is replaced by normalise
// before transcripts are compared:
//
//   - The dynamic resources say when they were made, as Node's
//     toLocaleTimeString() prints it ("created at 1:10:23 PM"), in text and
//     inside base64 blobs. The time becomes "<time>"; a blob is decoded,
//     normalised and encoded again.
//   - The URL elicitation error path names a prerequisite elicitation with
//     a random UUID (crypto.randomUUID). An elicitationId that is a UUID
//     becomes "<uuid>"; the ids the driver chooses are not UUIDs and stay.
//
// Everything else, request ids included, must be equal: the client and the
// server number their requests from zero in the order they send them, and
// aegis sends no requests of its own.
var (
	localTime = regexp.MustCompile(`created at [0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:[ \x{202f}]?[AP]M)?`)
	uuid      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// normalise decodes raw JSON and applies the replacements above. Numbers
// keep their text, so 1 and 1.0 stay different.
func normalise(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return normaliseValue("", v), nil
}

func normaliseValue(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normaliseValue(k, e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = normaliseValue("", e)
		}
		return v
	case string:
		switch {
		case key == "elicitationId" && uuid.MatchString(v):
			return "<uuid>"
		case key == "blob":
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil || !utf8.Valid(b) || !localTime.Match(b) {
				return v
			}
			return base64.StdEncoding.EncodeToString(localTime.ReplaceAll(b, []byte("created at <time>")))
		}
		return localTime.ReplaceAllString(v, "created at <time>")
	}
	return v
}

func TestNormalise(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "a time in text",
			in:   `{"text":"Resource 5: This is a plaintext resource created at 1:10:23 PM"}`,
			want: `{"text":"Resource 5: This is a plaintext resource created at <time>"}`,
		},
		{
			name: "a 24-hour time and a narrow no-break space",
			in:   `["created at 13:10:23", "created at 1:10:23` + "\u202f" + `AM!"]`,
			want: `["created at <time>", "created at <time>!"]`,
		},
		{
			name: "a time in a blob",
			in:   `{"blob":"` + b64("Resource 6: This is a base64 blob created at 1:10:23 PM") + `"}`,
			want: `{"blob":"` + b64("Resource 6: This is a base64 blob created at <time>") + `"}`,
		},
		{
			name: "a blob without a time is kept",
			in:   `{"blob":"H4sIAAAAAAAAA0vOzy0oSi0uVshN1VFITE3PLOZKHhWijxAAl"}`,
			want: `{"blob":"H4sIAAAAAAAAA0vOzy0oSi0uVshN1VFITE3PLOZKHhWijxAAl"}`,
		},
		{
			name: "a random elicitation id",
			in:   `{"elicitationId":"62510196-79fe-4bf6-aa07-83484b989b76"}`,
			want: `{"elicitationId":"<uuid>"}`,
		},
		{
			name: "a chosen elicitation id is kept",
			in:   `{"elicitationId":"e2e-elicitation-1"}`,
			want: `{"elicitationId":"e2e-elicitation-1"}`,
		},
		{
			name: "a UUID elsewhere is kept",
			in:   `{"id":"62510196-79fe-4bf6-aa07-83484b989b76"}`,
			want: `{"id":"62510196-79fe-4bf6-aa07-83484b989b76"}`,
		},
		{
			name: "numbers keep their spelling",
			in:   `[1, 1.0, 1e0]`,
			want: `[1, 1.0, 1e0]`,
		},
		{
			name: "a time that is not the resource's is kept",
			in:   `{"text":"at 1:10:23 PM"}`,
			want: `{"text":"at 1:10:23 PM"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := normalise([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			// want is decoded as normalise decodes, but not normalised.
			dec := json.NewDecoder(bytes.NewReader([]byte(tt.want)))
			dec.UseNumber()
			var want any
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("normalise(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}
