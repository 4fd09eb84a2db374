package dlp

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
)

const testKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"

// TestBinaryFields: a secret in a protocol binary field (blob, data) is
// found in its base64 and redacted inside it, the field staying base64;
// other members are read for runs of base64 (base64_test.go has those), and
// what is not base64 is text.
func TestBinaryFields(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte(testKey))
	raw := base64.RawStdEncoding.EncodeToString([]byte(testKey))
	for _, tc := range []struct {
		name, doc string
		found     bool
	}{
		{"resource blob", `{"contents":[{"uri":"file:///k","blob":"` + b64 + `"}]}`, true},
		{"image data, unpadded", `{"content":[{"type":"image","data":"` + raw + `","mimeType":"image/png"}]}`, true},
		{"URL-safe alphabet", `{"blob":"` + base64.URLEncoding.EncodeToString([]byte(testKey)) + `"}`, true},
		{"spaces inside", `{"blob":"` + b64[:20] + ` ` + b64[20:60] + `\t` + b64[60:] + `"}`, true},
		{"padded chunks joined", `{"blob":"` + base64.StdEncoding.EncodeToString([]byte(testKey[:10])) + base64.StdEncoding.EncodeToString([]byte(testKey[10:])) + `"}`, true},
		{"another member is read for base64 runs too", `{"payload":"` + b64 + `"}`, true},
		{"data that is not base64", `{"data":"plain words, not base64 at all"}`, false},
		{"a blob of nothing secret", `{"blob":"` + base64.StdEncoding.EncodeToString([]byte("just a picture of a cat, honestly")) + `"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d args.Doc
			if err := d.Decode([]byte(tc.doc), nil); err != nil {
				t.Fatal(err)
			}
			found := ScanValue(d.Root(), nil)
			if (len(found) > 0) != tc.found {
				t.Fatalf("findings %v, want found = %v", found, tc.found)
			}
			out, err := AppendRedacted(nil, d.Root(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.found {
				if strings.Contains(string(out), b64[:40]) || strings.Contains(string(out), raw[:40]) {
					t.Fatalf("redacted output still holds the key's base64: %s", out)
				}
				var r args.Doc
				if err := r.Decode(out, nil); err != nil {
					t.Fatalf("redacted output %s: %v", out, err)
				}
				// The field is still base64, of the redacted text.
				var field string
				for _, ptr := range []string{"/contents/0/blob", "/content/0/data", "/blob", "/payload"} {
					p, err := args.ParsePointer(ptr)
					if err != nil {
						t.Fatal(err)
					}
					p.Select(r.Root(), func(v args.Value, _ args.Loc) { field = v.Str() })
				}
				dec, ok := decodeBase64(field)
				if !ok || !strings.Contains(dec, "[REDACTED:") || strings.Contains(dec, "b3BlbnNzaC1rZXkt") {
					t.Fatalf("the redacted field %q decodes to %q", field, dec)
				}
			} else if string(out) != tc.doc {
				t.Fatalf("a document without findings changed: %s", out)
			}
		})
	}
}

// FuzzDecodeBase64 holds decodeBase64 to encoding/base64: what it accepts
// is exactly what one of the standard encodings decodes, to the same bytes.
func FuzzDecodeBase64(f *testing.F) {
	f.Add("aGVsbG8=")
	f.Add("aGVsbG8")
	f.Add("a b")
	f.Add("====")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := decodeBase64(s)
		want, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			want, err = base64.RawStdEncoding.DecodeString(s)
		}
		// What the standard decoder reads, decodeBase64 reads the same;
		// it reads more (another alphabet, spaces, joined chunks).
		if err == nil && len(s) >= 4 && (!ok || got != string(want)) {
			t.Fatalf("decodeBase64(%q) = %q, %v; encoding/base64 says %q", s, got, ok, want)
		}
	})
}
