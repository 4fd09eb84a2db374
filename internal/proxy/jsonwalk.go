package proxy

// This file walks JSON that validate has already accepted; it assumes it is
// well formed, and does not check it again.

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

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// members appends the members of the validated object starting at d[start]
// to dst and returns the extended slice.
func members(dst []member, d []byte, start int) []member {
	out := dst
	i := skipSpace(d, start+1)
	for i < len(d) && d[i] != '}' {
		kend := skipString(d, i)
		key := unquote(d[i:kend])
		i = skipSpace(d, kend) + 1 // ':'
		i = skipSpace(d, i)
		vend := skipValue(d, i)
		out = append(out, member{key: key, start: i, end: vend})
		i = skipSpace(d, vend)
		if i < len(d) && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	return out
}

// elements returns the spans of the elements of the validated array starting
// at d[start].
func elements(d []byte, start int) [][2]int {
	var out [][2]int
	i := skipSpace(d, start+1)
	for i < len(d) && d[i] != ']' {
		end := skipValue(d, i)
		out = append(out, [2]int{i, end})
		i = skipSpace(d, end)
		if i < len(d) && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	return out
}
