package capability

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxURLLen bounds a URL argument. Servers commonly refuse request lines
// past 8 KiB; a longer argument is refused before any parsing.
const maxURLLen = 1 << 16

// urlRecord is a URL as the URL Standard's basic URL parser returns it,
// without a base URL. Its serialisation is built while parsing.
type urlRecord struct {
	scheme             string
	username, password string
	hasHost            bool
	host               urlHost
	rawHost            string // the host as written, after tab and newline removal
	port               int    // -1 when null (absent or the default)
	opaque             bool   // the path is opaque
	driveLetter        bool   // a file: path began with a Windows drive letter, at some point
	// serial is the serialisation without userinfo and fragment; pathAt
	// and queryAt index it (queryAt is -1 when the query is null).
	serial          string
	pathAt, queryAt int
	hasFragment     bool
	fragment        string
}

// url returns the serialisation without userinfo and fragment.
func (u *urlRecord) url() string { return u.serial }

// href returns the full serialisation, as the URL Standard's serializer.
func (u *urlRecord) href() string {
	s := u.serial
	if u.username != "" || u.password != "" {
		at := len(u.scheme) + 3
		cred := u.username
		if u.password != "" {
			cred += ":" + u.password
		}
		s = s[:at] + cred + "@" + s[at:]
	}
	if u.hasFragment {
		s += "#" + u.fragment
	}
	return s
}

func (u *urlRecord) pathname() string {
	if u.queryAt >= 0 {
		return u.serial[u.pathAt:u.queryAt]
	}
	return u.serial[u.pathAt:]
}

func (u *urlRecord) search() string {
	if u.queryAt < 0 || u.queryAt == len(u.serial)-1 {
		return ""
	}
	return u.serial[u.queryAt:]
}

func (u *urlRecord) hash() string {
	if u.fragment == "" {
		return ""
	}
	return "#" + u.fragment
}

// The states of the basic URL parser that a URL without a base can reach.
type urlState uint8

const (
	stSchemeStart urlState = iota
	stScheme
	stSpecialAuthoritySlashes
	stSpecialAuthorityIgnoreSlashes
	stPathOrAuthority
	stAuthority
	stHost
	stPort
	stFile
	stFileSlash
	stFileHost
	stPathStart
	stPath
	stOpaquePath
	stQuery
	stFragment
)

// parseURL is the URL Standard's basic URL parser with no base URL and no
// state override, for UTF-8 input. It works on bytes: every delimiter is
// ASCII, and percent-encoding a code point is percent-encoding its UTF-8
// bytes.
func parseURL(raw string) (urlRecord, error) {
	if len(raw) > maxURLLen {
		return urlRecord{}, fmt.Errorf("URL longer than %d bytes", maxURLLen)
	}
	if !utf8.ValidString(raw) {
		return urlRecord{}, errors.New("URL is not UTF-8")
	}
	s := raw
	for len(s) > 0 && s[0] <= ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] <= ' ' {
		s = s[:len(s)-1]
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\t' || c == '\n' || c == '\r' {
			s = strings.Map(func(r rune) rune {
				if r == '\t' || r == '\n' || r == '\r' {
					return -1
				}
				return r
			}, s)
			break
		}
	}

	u := urlRecord{port: -1, queryAt: -1}
	var (
		state      = stSchemeStart
		special    bool
		sp         int  // 1 when special, to index stops
		start      int  // start of the buffer in s, for the states that keep one
		atSeen     bool // authority: an "@" was seen
		passSeen   bool // authority: a ":" was seen in the userinfo
		inBrackets bool
		port       = -1
		portDigits bool
		segAt      = -1 // start of the open path segment in pb, -1 when none
		stack      [256]byte
		pb         = stack[:0] // path, then "?" and query
		fb         []byte      // fragment
		user, pass []byte
	)
	const eof = -1
	for p := 0; ; p++ {
		c := eof
		if p < len(s) {
			c = int(s[p])
		}
		switch state {
		case stSchemeStart:
			if !isAlpha(c) {
				return urlRecord{}, errors.New("URL has no scheme")
			}
			state = stScheme
		case stScheme:
			switch {
			case isAlpha(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			case c == ':':
				u.scheme = lowerASCII(s[:p])
				special = isSpecial(u.scheme)
				if special {
					sp = 1
				}
				switch {
				case u.scheme == "file":
					state = stFile
				case special:
					state = stSpecialAuthoritySlashes
				case p+1 < len(s) && s[p+1] == '/':
					state = stPathOrAuthority
					p++
				default:
					u.opaque = true
					state = stOpaquePath
				}
			default:
				return urlRecord{}, errors.New("URL has no scheme")
			}
		case stSpecialAuthoritySlashes:
			if c == '/' && p+1 < len(s) && s[p+1] == '/' {
				p++
			} else {
				p--
			}
			state = stSpecialAuthorityIgnoreSlashes
		case stSpecialAuthorityIgnoreSlashes:
			if c != '/' && c != '\\' {
				state = stAuthority
				start = p
				p--
			}
		case stPathOrAuthority:
			if c == '/' {
				state = stAuthority
				start = p + 1
			} else {
				state = stPath
				p--
			}
		case stAuthority:
			switch {
			case c == '@':
				target := &user
				if passSeen {
					target = &pass
				}
				if atSeen {
					*target = append(*target, "%40"...)
				}
				atSeen = true
				for _, b := range []byte(s[start:p]) {
					if b == ':' && !passSeen {
						passSeen, target = true, &pass
						continue
					}
					*target = appendEncoded(*target, b, &userinfoSet)
				}
				start = p + 1
			case c == eof || c == '/' || c == '?' || c == '#' || special && c == '\\':
				if atSeen && p == start {
					return urlRecord{}, errors.New("URL has userinfo but no host")
				}
				p = start - 1
				state = stHost
			default:
				p = scan(s, p+1, &stops[sp].authority) - 1
			}
		case stHost:
			switch {
			case c == ':' && !inBrackets:
				if p == start {
					return urlRecord{}, errors.New("URL has a port but no host")
				}
				if err := u.setHost(s[start:p], special); err != nil {
					return urlRecord{}, err
				}
				state, start = stPort, p+1
			case c == eof || c == '/' || c == '?' || c == '#' || special && c == '\\':
				if special && p == start {
					return urlRecord{}, errors.New("URL has an empty host")
				}
				if err := u.setHost(s[start:p], special); err != nil {
					return urlRecord{}, err
				}
				state = stPathStart
				p--
			case c == '[':
				inBrackets = true
			case c == ']':
				inBrackets = false
			default:
				p = scan(s, p+1, &stops[sp].host) - 1
			}
		case stPort:
			switch {
			case '0' <= c && c <= '9':
				if port < 0 {
					port = 0
				}
				if port <= 65535 {
					port = port*10 + c - '0'
				}
				portDigits = true
			case c == eof || c == '/' || c == '?' || c == '#' || special && c == '\\':
				if portDigits {
					if port > 65535 {
						return urlRecord{}, errors.New("URL port out of range")
					}
					if port != int(defaultPort(u.scheme)) || !special {
						u.port = port
					}
				}
				state = stPathStart
				p--
			default:
				return urlRecord{}, errors.New("URL port is not a number")
			}
		case stFile:
			u.hasHost, u.host = true, urlHost{kind: hostEmpty}
			if c == '/' || c == '\\' {
				state = stFileSlash
			} else {
				state = stPath
				p--
			}
		case stFileSlash:
			if c == '/' || c == '\\' {
				state, start = stFileHost, p+1
			} else {
				state = stPath
				p--
			}
		case stFileHost:
			if c == eof || c == '/' || c == '\\' || c == '?' || c == '#' {
				buf := s[start:p]
				p--
				switch {
				case isDriveLetter(buf):
					// The buffer becomes the first path segment.
					segAt = len(pb)
					pb = append(append(pb, '/'), buf...)
					state = stPath
				case buf == "":
					state = stPathStart
				default:
					if err := u.setHost(buf, true); err != nil {
						return urlRecord{}, err
					}
					if u.host.kind == hostDomain && u.host.text == "localhost" {
						u.host = urlHost{kind: hostEmpty}
					}
					state = stPathStart
				}
			}
		case stPathStart:
			switch {
			case special:
				state = stPath
				if c != '/' && c != '\\' {
					p--
				}
			case c == '?':
				u.queryAt = len(pb)
				pb = append(pb, '?')
				state = stQuery
			case c == '#':
				state = stFragment
				u.hasFragment = true
			case c != eof:
				state = stPath
				if c != '/' {
					p--
				}
			}
		case stPath:
			if segAt < 0 {
				segAt = len(pb)
				pb = append(pb, '/')
			}
			slash := c == '/' || special && c == '\\'
			if !(slash || c == eof || c == '?' || c == '#') {
				if q := scan(s, p, &stops[sp].path); q > p {
					pb = append(pb, s[p:q]...)
					p = q - 1
				} else {
					pb = appendEncoded(pb, byte(c), &pathSet)
				}
				break
			}
			seg := pb[segAt+1:]
			if u.scheme == "file" && segAt == 0 && len(seg) >= 2 && isAlpha(int(seg[0])) && (seg[1] == ':' || seg[1] == '|') {
				u.driveLetter = true
			}
			switch dots(seg) {
			case 2:
				pb = shortenPath(pb[:segAt], u.scheme)
				if !slash {
					pb = append(pb, '/')
				}
			case 1:
				pb = pb[:segAt]
				if !slash {
					pb = append(pb, '/')
				}
			default:
				if u.scheme == "file" && segAt == 0 && len(seg) == 2 && isDriveLetter(string(seg)) {
					seg[1] = ':'
				}
			}
			segAt = -1
			switch c {
			case '?':
				u.queryAt = len(pb)
				pb = append(pb, '?')
				state = stQuery
			case '#':
				state = stFragment
				u.hasFragment = true
			}
		case stOpaquePath:
			switch {
			case c == '?':
				u.queryAt = len(pb)
				pb = append(pb, '?')
				state = stQuery
			case c == '#':
				state = stFragment
				u.hasFragment = true
			case c == ' ':
				if p+1 < len(s) && (s[p+1] == '?' || s[p+1] == '#') {
					pb = append(pb, "%20"...)
				} else {
					pb = append(pb, ' ')
				}
			case c != eof:
				pb = appendEncoded(pb, byte(c), &c0ControlSet)
			}
		case stQuery:
			switch {
			case c == '#':
				state = stFragment
				u.hasFragment = true
			case c == eof:
			default:
				set := &querySet
				if special {
					set = &specialQuerySet
				}
				if q := scan(s, p, &stops[sp].query); q > p {
					pb = append(pb, s[p:q]...)
					p = q - 1
				} else {
					pb = appendEncoded(pb, byte(c), set)
				}
			}
		case stFragment:
			if c != eof {
				fb = appendEncoded(fb, byte(c), &fragmentSet)
			}
		}
		if p >= len(s) {
			break
		}
	}

	u.username, u.password = string(user), string(pass)
	u.fragment = string(fb)

	// The serialisation: scheme ":" ["//" host [":" port]] path ["?" query].
	var b strings.Builder
	b.Grow(len(u.scheme) + 3 + len(u.host.text) + 6 + 2 + len(pb))
	b.WriteString(u.scheme)
	b.WriteByte(':')
	if u.hasHost {
		b.WriteString("//")
		b.WriteString(u.host.text)
		if u.port >= 0 {
			b.WriteByte(':')
			writeInt(&b, u.port)
		}
	} else if !u.opaque && len(pb) >= 2 && pb[0] == '/' && pb[1] == '/' {
		// Keep "web+demo:/.//not-a-host/" from reading as a host.
		b.WriteString("/.")
	}
	u.pathAt = b.Len()
	if u.queryAt >= 0 {
		u.queryAt += u.pathAt
	}
	b.Write(pb)
	u.serial = b.String()
	return u, nil
}

// setHost runs the host parser on the host buffer.
func (u *urlRecord) setHost(raw string, special bool) error {
	h, err := parseHost(raw, !special)
	if err != nil {
		return err
	}
	u.hasHost, u.host, u.rawHost = true, h, raw
	return nil
}

// shortenPath removes the last segment of a path, except a file: URL's lone
// normalised drive letter.
func shortenPath(pb []byte, scheme string) []byte {
	if scheme == "file" && len(pb) == 3 && pb[0] == '/' && isAlpha(int(pb[1])) && pb[2] == ':' {
		return pb
	}
	for i := len(pb) - 1; i >= 0; i-- {
		if pb[i] == '/' {
			return pb[:i]
		}
	}
	return pb
}

func isAlpha(c int) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// isDriveLetter reports whether s is a Windows drive letter: a letter and
// ":" or "|".
func isDriveLetter(s string) bool {
	return len(s) == 2 && isAlpha(int(s[0])) && (s[1] == ':' || s[1] == '|')
}

// dots returns 1 for a single-dot path segment ("." or "%2e"), 2 for a
// double-dot one (".." and its encodings), 0 for any other.
func dots(seg []byte) int {
	n := 0
	for i := 0; i < len(seg); n++ {
		switch {
		case seg[i] == '.':
			i++
		case i+2 < len(seg) && seg[i] == '%' && seg[i+1] == '2' && seg[i+2]|0x20 == 'e':
			i += 3
		default:
			return 0
		}
	}
	if n > 2 {
		return 0
	}
	return n
}

func writeInt(b *strings.Builder, n int) {
	var d [8]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			break
		}
	}
	b.Write(d[i:])
}

// stopSet marks the bytes at which a state of the parser must look at a
// byte on its own: delimiters, and bytes to percent-encode. Runs of other
// bytes are copied at once.
type stopSet [256]bool

// stops holds the stop sets of the states with fast paths, indexed by
// whether the scheme is special (a backslash is then a delimiter).
var stops = func() (t [2]struct{ authority, host, path, query stopSet }) {
	for sp := range 2 {
		st := &t[sp]
		for c := range 256 {
			b := byte(c)
			delim := b == '/' || b == '?' || b == '#' || sp == 1 && b == '\\'
			st.authority[c] = delim || b == '@'
			st.host[c] = delim || b == ':' || b == '[' || b == ']'
			st.path[c] = delim || pathSet.has(b)
			qs := &querySet
			if sp == 1 {
				qs = &specialQuerySet
			}
			st.query[c] = b == '#' || qs.has(b)
		}
	}
	return t
}()

// scan returns the index of the first byte of s from p on that is in set, or
// len(s).
func scan(s string, p int, set *stopSet) int {
	for ; p < len(s); p++ {
		if set[s[p]] {
			return p
		}
	}
	return p
}

// pctSet is a percent-encode set: a bit per ASCII byte. Every set of the URL
// Standard includes all bytes from 0x7F up.
type pctSet [2]uint64

func (s *pctSet) has(c byte) bool {
	return c >= 0x7f || s[c>>6]&(1<<(c&63)) != 0
}

func mkPctSet(base pctSet, extra string) pctSet {
	for i := 0; i < len(extra); i++ {
		c := extra[i]
		base[c>>6] |= 1 << (c & 63)
	}
	return base
}

// The percent-encode sets of the URL Standard.
var (
	c0ControlSet    = pctSet{1<<32 - 1, 0}
	fragmentSet     = mkPctSet(c0ControlSet, " \"<>`")
	querySet        = mkPctSet(c0ControlSet, " \"#<>")
	specialQuerySet = mkPctSet(querySet, "'")
	pathSet         = mkPctSet(querySet, "?^`{}")
	userinfoSet     = mkPctSet(pathSet, "/:;=@[\\]^|")
)

// appendEncoded appends c, percent-encoded if it is in set.
func appendEncoded(b []byte, c byte, set *pctSet) []byte {
	if !set.has(c) {
		return append(b, c)
	}
	const hex = "0123456789ABCDEF"
	return append(b, '%', hex[c>>4], hex[c&15])
}

// percentEncodeString percent-encodes the bytes of s that are in set.
func percentEncodeString(s string, set *pctSet) string {
	for i := 0; i < len(s); i++ {
		if set.has(s[i]) {
			b := make([]byte, 0, len(s)+16)
			b = append(b, s[:i]...)
			for ; i < len(s); i++ {
				b = appendEncoded(b, s[i], set)
			}
			return string(b)
		}
	}
	return s
}
