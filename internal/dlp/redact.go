package dlp

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Redact returns s with the span of each finding replaced by "[REDACTED:<kind>]".
// Overlapping spans are merged into one marker that names the kind of the finding that
// starts first (the longest, if several start together). Spans are clipped to s and
// widened to whole runes, so the result of redacting valid UTF-8 is valid UTF-8. fs may
// be in any order and is not modified.
func Redact(s string, fs []Finding) string {
	if len(fs) == 0 {
		return s
	}
	if !tidySpans(s, fs) {
		fs = slices.Clone(fs)
		for k := range fs {
			fs[k].Start, fs[k].End = align(s, fs[k].Start, fs[k].End)
		}
		slices.SortFunc(fs, compareFindings)
	}
	var b strings.Builder
	b.Grow(len(s) + 16*len(fs))
	pos := 0 // s[:pos] is written
	for k := 0; k < len(fs); {
		start, end, kind := fs[k].Start, fs[k].End, fs[k].Kind
		for k++; k < len(fs) && fs[k].Start < end; k++ {
			end = max(end, fs[k].End)
		}
		if start == end {
			continue
		}
		b.WriteString(s[pos:start])
		b.WriteString("[REDACTED:")
		b.WriteString(string(kind))
		b.WriteByte(']')
		pos = end
	}
	b.WriteString(s[pos:])
	return b.String()
}

// tidySpans reports whether fs is sorted and every span already lies within s on rune
// boundaries, as Scan's do.
func tidySpans(s string, fs []Finding) bool {
	for k, f := range fs {
		if a, e := align(s, f.Start, f.End); a != f.Start || e != f.End {
			return false
		}
		if k > 0 && compareFindings(fs[k-1], f) > 0 {
			return false
		}
	}
	return true
}

// align clips [start, end) to s and widens it to rune boundaries as Go decodes s: a
// span whose edge falls inside a multi-byte character covers the whole character. A
// byte that is not part of valid UTF-8 is a character of its own.
func align(s string, start, end int) (int, int) {
	start = min(max(start, 0), len(s))
	end = min(max(end, start), len(s))
	if start == end {
		return start, end
	}
	if q, _ := runeAround(s, start); q < start {
		start = q
	}
	if q, size := runeAround(s, end); q < end {
		end = q + size
	}
	return start, end
}

// runeAround returns the start and size of the valid multi-byte character that holds
// byte p, or (p, 0) when p starts a character.
func runeAround(s string, p int) (int, int) {
	for q := p - 1; q >= 0 && q >= p-3; q-- {
		if utf8.RuneStart(s[q]) {
			if r, size := utf8.DecodeRuneInString(s[q:]); (r != utf8.RuneError || size > 1) && q+size > p {
				return q, size
			}
			break
		}
	}
	return p, 0
}
