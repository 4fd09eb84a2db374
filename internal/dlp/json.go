package dlp

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aegis-mcp/aegis/internal/args"
)

// Located is a finding in a JSON document: its kind and where it is, never its text or
// its offsets, so it may enter the audit chain as it is.
type Located struct {
	Kind Kind
	// Pointer is the RFC 6901 JSON Pointer of the string or number that holds the
	// finding, or of the member whose name holds it.
	Pointer string
	// InKey is true when the finding is in a member's name rather than its value.
	InKey bool
	// InBase64 is true when the finding is in base64 that the string holds (decoded
	// once or more), and not in its text as it is.
	InBase64 bool
}

// ScanValue appends to dst the findings in every string, number and member name under
// v, in document order, and returns the extended slice. Numbers are scanned as their
// source text, so a card number written as a JSON number is found. It allocates
// nothing when it finds nothing.
func ScanValue(v args.Value, dst []Located) []Located {
	w := walker{dst: dst}
	w.value(v)
	return w.dst
}

// walker carries a scan through a document. The path to the current value lives in a
// fixed array while the document is at most len(path) deep, and is turned into a JSON
// Pointer only for a finding.
type walker struct {
	dst     []Located
	scratch []Finding
	sc      scanner // reused for every string
	path    [8]step // arguments are shallow: a deeper path costs an allocation
	deeper  []step  // the steps past len(path), in a deeper document
	depth   int
	hits    int // strings in which locate found something
}

// step is one reference token of the path: a member name, or an index when index >= 0.
type step struct {
	key   string
	index int
}

func (w *walker) push(st step) {
	if w.depth < len(w.path) {
		w.path[w.depth] = st
	} else {
		w.deeper = append(w.deeper[:w.depth-len(w.path)], st)
	}
	w.depth++
}

func (w *walker) step(k int) step {
	if k < len(w.path) {
		return w.path[k]
	}
	return w.deeper[k-len(w.path)]
}

// value recurses once per level of nesting, which the decoder capped.
func (w *walker) value(v args.Value) {
	switch v.Kind() {
	case args.String:
		if s := v.Str(); len(s) >= minFinding {
			w.text(s, false, false)
		}
	case args.Number:
		if raw := v.Raw(); numberMayHold(raw) {
			w.locate(raw, false, len(w.dst), 0)
		}
	case args.Array:
		for i := range v.Len() {
			w.push(step{index: i})
			w.value(v.Index(i))
			w.depth--
		}
	case args.Object:
		for key, val := range v.Members() {
			w.push(step{key: key, index: -1})
			if len(key) >= minFinding {
				w.text(key, true, false)
			}
			// A scalar member, the most common, is scanned here: w.value would
			// read its kind again after a call. Its source text, which is cheaper
			// to read than its kind, says what it is by its first byte, and a
			// string's text is no longer than its source text within the quotes.
			switch raw := val.Raw(); {
			case raw == "": // an invalid value holds nothing
			case raw[0] == '"':
				if len(raw)-2 >= minFinding {
					if s := val.Str(); len(s) >= minFinding {
						w.text(s, false, binaryField(key))
					}
				}
			case raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9':
				if numberMayHold(raw) {
					w.locate(raw, false, len(w.dst), 0)
				}
			default:
				w.value(val) // an object or array; true, false and null hold nothing
			}
			w.depth--
		}
	}
}

// text scans s, a string or member name at the current path, and the base64 it holds:
// all of s when it is the value of a binary field (binary) and decodes as base64, and
// otherwise the runs of base64 in it. Strings shorter than minFinding, which Scan
// passes over, are passed over before the call.
func (w *walker) text(s string, inKey, binary bool) {
	n0 := len(w.dst)
	w.locate(s, inKey, n0, 0)
	whole := false
	if binary {
		// MCP's binary fields (a resource's blob, an image's or audio's
		// data) are base64: what they hold is scanned as well as what they
		// say, decoded as a client decodes them. A client may also show the
		// base64 to the model as text, so it is read as text too.
		if dec, ok := decodeBase64(s); ok {
			whole = true
			if len(dec) >= minFinding {
				w.decoded(dec, inKey, n0, 1)
			}
		}
	}
	w.runs(s, inKey, n0, 0, whole)
}

// runs scans the base64 runs of s, which was decoded depth times, each decoded from
// each alignment that may hold text (see nextRun). When whole, s was decoded as one
// value already, which a run that is all of s decodes to from its start.
func (w *walker) runs(s string, inKey bool, n0, depth int, whole bool) {
	if depth >= maxDecodeDepth || len(s) < minRunUnits {
		return
	}
	for i := 0; ; {
		r, ok := nextRun(s, i)
		if !ok {
			return
		}
		i = r.end
		for a := range 4 {
			if r.aligns&(1<<a) == 0 || a == 0 && whole && r.start == 0 && r.end == len(s) {
				continue
			}
			dec := string(decodeRun(nil, s, r, a))
			if !w.decoded(dec, inKey, n0, depth+1) {
				tails(r, dec, func(t string) { w.decoded(t, inKey, n0, depth+1) })
			}
		}
	}
}

// decoded scans dec, decoded depth times from base64, and its own runs, and reports
// whether it found anything.
func (w *walker) decoded(dec string, inKey bool, n0, depth int) bool {
	hits := w.hits
	if len(dec) >= minFinding {
		w.locate(dec, inKey, n0, depth)
	}
	w.runs(dec, inKey, n0, depth, false)
	return w.hits != hits
}

// locate scans s, decoded depth times from base64, and records its findings at the
// current path, once per kind among those recorded there from w.dst[n0:].
func (w *walker) locate(s string, inKey bool, n0, depth int) {
	first := anchorFrom(s, 0)
	if first == len(s) {
		return // as Scan finds nothing there
	}
	w.scratch = w.sc.scan(s, first, w.scratch[:0])
	if len(w.scratch) == 0 {
		return
	}
	w.hits++
	ptr := ""
next:
	for _, f := range w.scratch {
		for _, l := range w.dst[n0:] {
			if l.Kind == f.Kind {
				continue next // one entry per kind and place
			}
		}
		if ptr == "" {
			ptr = w.pointer()
		}
		w.dst = append(w.dst, Located{Kind: f.Kind, Pointer: ptr, InKey: inKey, InBase64: depth > 0})
	}
}

// pointer returns the JSON Pointer of the current path.
func (w *walker) pointer() string {
	var b []byte
	for k := range w.depth {
		st := w.step(k)
		b = append(b, '/')
		if st.index >= 0 {
			b = strconv.AppendInt(b, int64(st.index), 10)
		} else {
			b = args.AppendToken(b, st.key)
		}
	}
	return string(b)
}

// AppendRedacted appends v to dst as JSON with the findings whose kind satisfies redact
// (every finding, if redact is nil) replaced by "[REDACTED:<kind>]" markers, in strings,
// member names and numbers (a number with a finding becomes a string). Members keep
// their document order; strings are re-escaped minimally. It fails, so that the caller
// denies, when redacting two member names of one object makes them equal, or when v is
// invalid.
func AppendRedacted(dst []byte, v args.Value, redact func(Kind) bool) ([]byte, error) {
	if v.Kind() == args.Invalid {
		return dst, fmt.Errorf("dlp: redacting an invalid JSON value")
	}
	return appendRedacted(dst, v, redact)
}

func appendRedacted(dst []byte, v args.Value, redact func(Kind) bool) ([]byte, error) {
	var err error
	switch v.Kind() {
	case args.String:
		return appendJSONString(dst, redacted(v.Str(), redact)), nil
	case args.Number:
		raw := v.Raw()
		if r := redacted(raw, redact); r != raw {
			return appendJSONString(dst, r), nil
		}
		return append(dst, raw...), nil
	case args.Array:
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendRedacted(dst, v.Index(i), redact); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case args.Object:
		dst = append(dst, '{')
		for i := range v.Len() {
			key, val := v.Member(i)
			if r := redacted(key, redact); r != key {
				for j := range v.Len() {
					// Equal but for case counts too: a reader that matches
					// names without regard to case would see one member twice.
					if other, _ := v.Member(j); j != i && args.SameKey(redacted(other, redact), r) {
						return dst, fmt.Errorf("dlp: redacting member names would give an object two members named %q", r)
					}
				}
				key = r
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendJSONString(dst, key), ':')
			if binaryField(key) && val.Kind() == args.String {
				if dec, ok := decodeBase64(val.Str()); ok {
					// Redacted inside, and written back as base64: the
					// field stays what the client expects, without the
					// secret.
					s := val.Str()
					if r, _ := redactedAt(dec, redact, 1); r != dec {
						s = base64.StdEncoding.EncodeToString([]byte(r))
					}
					// And as text: what the value says, and its runs
					// at every alignment.
					dst = appendJSONString(dst, redacted(s, redact))
					continue
				}
			}
			if dst, err = appendRedacted(dst, val, redact); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	default:
		return append(dst, v.Raw()...), nil
	}
}

// redacted returns s with the findings whose kind satisfies redact replaced, in its
// text and in the base64 it holds.
func redacted(s string, redact func(Kind) bool) string {
	r, _ := redactedAt(s, redact, 0)
	return r
}

// appendJSONString appends s as a JSON string, escaping only what JSON requires. s is
// valid UTF-8 (the decoder checked, and Redact keeps it so); an invalid byte would be
// written as U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for k := 0; k < len(s); {
		c := s[k]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[k:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, "\ufffd"...)
			} else {
				dst = append(dst, s[k:k+n]...)
			}
			k += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			dst = append(dst, c)
		}
		k++
	}
	return append(dst, '"')
}

// ScanJSON decodes data as arguments (see [args.Doc.Decode]; the top level must be an
// object) under lim, and returns the findings in it.
func ScanJSON(data []byte, lim *args.Limits) ([]Located, error) {
	var d args.Doc
	if err := d.Decode(data, lim); err != nil {
		return nil, fmt.Errorf("dlp: scanning JSON: %w", err)
	}
	return ScanValue(d.Root(), nil), nil
}

// RedactJSON decodes data as [ScanJSON] does and returns it re-encoded by
// [AppendRedacted], with every finding in it, redacted or not.
func RedactJSON(data []byte, lim *args.Limits, redact func(Kind) bool) ([]byte, []Located, error) {
	var d args.Doc
	if err := d.Decode(data, lim); err != nil {
		return nil, nil, fmt.Errorf("dlp: redacting JSON: %w", err)
	}
	found := ScanValue(d.Root(), nil)
	out, err := AppendRedacted(make([]byte, 0, len(data)), d.Root(), redact)
	if err != nil {
		return nil, found, err
	}
	return out, found, nil
}

// binaryField reports whether a member named key holds base64 in the
// protocol: a resource's blob, an image's or audio's data.
func binaryField(key string) bool { return key == "blob" || key == "data" }

// decodeBase64 decodes s as a lenient client would: either alphabet
// (standard or URL-safe), with or without padding, white space anywhere
// (skipped), and chunks each ending in padding joined together (Node's
// Buffer.from decodes them all). ok is false for anything else, which is
// then only text.
func decodeBase64(s string) (string, bool) {
	if len(s) < 4 {
		return "", false
	}
	clean := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '=':
			clean = append(clean, c)
		case c == '+' || c == '-':
			clean = append(clean, '+')
		case c == '/' || c == '_':
			clean = append(clean, '/')
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			return "", false
		}
	}
	var out []byte
	for len(clean) > 0 {
		// A chunk ends after its padding.
		end := len(clean)
		if p := bytes.IndexByte(clean, '='); p >= 0 {
			end = p
			for end < len(clean) && clean[end] == '=' {
				end++
			}
		}
		chunk := bytes.TrimRight(clean[:end], "=")
		b, err := base64.RawStdEncoding.DecodeString(string(chunk))
		if err != nil {
			return "", false
		}
		out = append(out, b...)
		clean = clean[end:]
	}
	return string(out), true
}
