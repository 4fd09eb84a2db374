package binding

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// This file derives what free text links to (DESIGN.md R35): a message
// body bound as text (kind net.link) derives a net.link for every URL
// written in it and an id of kind email for every e-mail address, so that
// a policy can say "a link to an unknown host in a message asks".

// IDKindEmail is the id kind of an e-mail address found in text.
const IDKindEmail = "email"

// maxTextLinks bounds what one text derives: a text with more links than
// this is refused rather than decided on a part of them.
const maxTextLinks = 256

var (
	// textURL finds a URL as a reader's client would link it: a scheme
	// and "://", up to white space or a character that closes it in
	// prose. Angle brackets and quotes end it. No word boundary is asked
	// before the scheme: markdown links _https://x_ (emphasis), and a
	// scheme glued to a word is read as one aegis cannot judge (refused).
	textURL = regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]{0,31}://[^\s<>"'` + "`" + `]+`)
	// textWWW finds a bare www. host, which clients link too, also
	// after an underscore (markdown's emphasis: _www.x.com_).
	textWWW = regexp.MustCompile(`(?i)(^|[^a-z0-9.@/-])(www\.[a-z0-9-]+(\.[a-z0-9-]+)+[^\s<>"'` + "`" + `]*)`)
	// textTarget finds the target of a markdown link, [x](TARGET), and of
	// an HTML attribute, href=TARGET or src=TARGET: a reader's client
	// follows it whatever it looks like in the prose.
	textTarget = regexp.MustCompile(`(?i)(?:\]\(\s*<?|\b(?:href|src)\s*=\s*["']?)([^)\s>"']+)`)
	// textScheme is a URL's scheme.
	textScheme = regexp.MustCompile(`^(?i)[a-z][a-z0-9+.-]*:`)
	// textEmail finds an e-mail address, in any script, its local part
	// quoted or not.
	textEmail = regexp.MustCompile(`(?:"[^"\r\n]{1,64}"|[\p{L}\p{N}._%+-]+)@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+`)
	// idnaDots are the characters a URL's host reads as a dot (UTS 46):
	// the ideographic, fullwidth and halfwidth full stops.
	idnaDots = strings.NewReplacer("\u3002", ".", "\uff0e", ".", "\uff61", ".")
)

// deriveText appends the links and addresses of the text v.
func (a *Arg) deriveText(dst []capability.Capability, v args.Value, o *Options) ([]capability.Capability, error) {
	s, err := stringValue(v)
	if err != nil {
		return dst, err
	}
	// A host spelled with another full stop is the same host.
	s = idnaDots.Replace(s)
	n := 0
	add := func(c capability.Capability) error {
		if n++; n > maxTextLinks {
			return fmt.Errorf("the text holds more than %d links and addresses", maxTextLinks)
		}
		dst = append(dst, c)
		return nil
	}
	var urls []string
	spans := textURL.FindAllStringIndex(s, -1)
	for _, sp := range spans {
		urls = append(urls, trimProse(s[sp[0]:sp[1]]))
	}
	for _, m := range textWWW.FindAllStringSubmatch(s, -1) {
		urls = append(urls, "http://"+trimProse(m[2]))
	}
	for _, m := range textTarget.FindAllStringSubmatch(s, -1) {
		t := m[1]
		switch {
		case strings.HasPrefix(t, "//") || strings.HasPrefix(t, `\\`) || strings.HasPrefix(t, `/\`) || strings.HasPrefix(t, `\/`):
			// Protocol-relative: the reader's page is https.
			urls = append(urls, "https:"+t)
		case !textScheme.MatchString(t):
			// A relative link: to wherever the text is read, not a host
			// the text names.
		default:
			switch scheme := strings.ToLower(t[:strings.IndexByte(t, ':')]); scheme {
			case "mailto", "tel", "sms":
				// Not a host: an address is found as an address.
			default:
				urls = append(urls, t)
			}
		}
	}
	for _, u := range urls {
		var c capability.Capability
		if err := capability.FromURLTo(&c, u); err != nil {
			if errors.Is(err, capability.ErrDataURL) {
				continue
			}
			// A link aegis cannot read one way is a link a reader's
			// client may read another: refused, not skipped.
			return dst, fmt.Errorf("a link in the text: %w", err)
		}
		if c.Kind != capability.NetConnect {
			// file: in prose links to a file of the reader's machine.
			return dst, fmt.Errorf("a link in the text is a file: URL, which no rule about hosts can judge")
		}
		c.Kind = capability.NetLink
		if err := add(c); err != nil {
			return dst, err
		}
	}
	for _, sp := range textEmail.FindAllStringIndex(s, -1) {
		if inside(sp, spans) {
			continue // a URL's userinfo, not an address
		}
		local, domain, _ := strings.Cut(s[sp[0]:sp[1]], "@")
		// The domain's case is no one's; the local part's is the
		// server's to read.
		if err := add(capability.Capability{Kind: capability.ID, IDKind: IDKindEmail, ID: local + "@" + strings.ToLower(domain)}); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// trimProse drops what prose puts after a link: a closing bracket that
// did not open in the link, and trailing punctuation.
func trimProse(u string) string {
	for {
		t := strings.TrimRight(u, ".,;:!?")
		if strings.HasSuffix(t, ")") && strings.Count(t, "(") < strings.Count(t, ")") {
			t = t[:len(t)-1]
		}
		if strings.HasSuffix(t, "]") && strings.Count(t, "[") < strings.Count(t, "]") {
			t = t[:len(t)-1]
		}
		if t == u {
			return u
		}
		u = t
	}
}

// inside reports whether the span sp lies within one of spans.
func inside(sp []int, spans [][]int) bool {
	for _, u := range spans {
		if sp[0] >= u[0] && sp[1] <= u[1] {
			return true
		}
	}
	return false
}
