package args

// This file walks JSON that Validate has already accepted; it assumes it is
// well formed, and does not check it again. On anything else the walkers'
// results are unspecified.

// SkipSpace returns the offset of the first byte of d at or after i that is not
// JSON whitespace (space, tab, CR, LF), or len(d).
func SkipSpace(d []byte, i int) int { return skipSpace(view(d), i) }

// Members appends the members of the object starting at d[start], which
// [Validate] accepted, to dst and returns the extended slice. Keys are
// unescaped, as [ValidateTop] gives them.
func Members(dst []Member, d []byte, start int) []Member {
	out := dst
	i := SkipSpace(d, start+1)
	for i < len(d) && d[i] != '}' {
		kend := skipString(d, i)
		key := Unquote(d[i:kend])
		i = SkipSpace(d, kend) + 1 // ':'
		i = SkipSpace(d, i)
		vend := skipValue(d, i)
		out = append(out, Member{Key: key, Start: i, End: vend})
		i = SkipSpace(d, vend)
		if i < len(d) && d[i] == ',' {
			i = SkipSpace(d, i+1)
		}
	}
	return out
}

// Elements returns the spans [start, end) of the elements of the array starting
// at d[start], which [Validate] accepted.
func Elements(d []byte, start int) [][2]int {
	var out [][2]int
	i := SkipSpace(d, start+1)
	for i < len(d) && d[i] != ']' {
		end := skipValue(d, i)
		out = append(out, [2]int{i, end})
		i = SkipSpace(d, end)
		if i < len(d) && d[i] == ',' {
			i = SkipSpace(d, i+1)
		}
	}
	return out
}

// skipValue returns the offset just past the value starting at i.
func skipValue(d []byte, i int) int {
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				i = skipString(d, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(d) {
			switch d[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the offset just past the string starting at i.
func skipString(d []byte, i int) int {
	for i++; i < len(d); i++ {
		switch d[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}
