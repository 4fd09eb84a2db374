// Package jcsref is a naive RFC 8785 (JCS) implementation for tests to hold
// the hand-rolled encoders of the chain's lines to (package record's
// entries, package chain's checkpoints and acks). It is written for
// obviousness, not speed, and knows nothing of the formats it checks.
package jcsref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonical returns the RFC 8785 canonical form of the JSON text in: it
// decodes it with encoding/json into any, sorts object keys by UTF-16 code
// units, and writes strings the way ECMAScript's JSON.stringify does.
func Canonical(in []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(in))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data")
	}
	var out bytes.Buffer
	if err := refEmit(&out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func refEmit(out *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		out.WriteString("null")
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case json.Number:
		// JCS writes numbers as ECMAScript does; for the integers of the
		// entry format (below 2^53) that is the plain decimal form.
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return err
		}
		out.WriteString(strconv.FormatFloat(f, 'f', -1, 64))
	case string:
		refString(out, v)
	case []any:
		out.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := refEmit(out, x); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		})
		out.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				out.WriteByte(',')
			}
			refString(out, k)
			out.WriteByte(':')
			if err := refEmit(out, v[k]); err != nil {
				return err
			}
		}
		out.WriteByte('}')
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

// WriteString writes s as a JCS string: it follows ECMA-262
// QuoteJSONString rune by rune.
func WriteString(out *bytes.Buffer, s string) { refString(out, s) }

// refString follows ECMA-262 QuoteJSONString rune by rune.
func refString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			out.WriteString(`\"`)
		case r == '\\':
			out.WriteString(`\\`)
		case r == '\b':
			out.WriteString(`\b`)
		case r == '\f':
			out.WriteString(`\f`)
		case r == '\n':
			out.WriteString(`\n`)
		case r == '\r':
			out.WriteString(`\r`)
		case r == '\t':
			out.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(out, `\u%04x`, r)
		default:
			var buf [utf8.UTFMax]byte
			out.Write(buf[:utf8.EncodeRune(buf[:], r)])
		}
	}
	out.WriteByte('"')
}
