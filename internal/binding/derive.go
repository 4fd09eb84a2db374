package binding

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// Options says how to canonicalise the resources of one server's arguments.
// The zero value canonicalises lexically, with no home directory.
type Options struct {
	// Path is how path arguments are made canonical: the server user's
	// home for "~", and symbolic-link resolution for a local server.
	Path capability.PathOptions
	// RequireNFC refuses a path argument that is not in Unicode NFC, for
	// servers that match path components NFC-equivalently
	// ([Semantics].NFCEquivalent): aegis cannot tell which spelling exists.
	RequireNFC bool
}

// ArgError says which argument could not be turned into a capability. The
// gateway turns it into a denial: an argument aegis cannot read with
// certainty is never forwarded.
type ArgError struct {
	Pointer string // the concrete JSON Pointer of the value
	Kind    capability.Kind
	Err     error
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("argument %s (%s): %v", displayPointer(e.Pointer), e.Kind, e.Err)
}

func (e *ArgError) Unwrap() error { return e.Err }

func displayPointer(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// Derive appends to dst the capabilities the call's arguments give under b,
// in binding order, and returns the extended slice. An argument that a
// pointer selects but that cannot be canonicalised (wrong JSON type, a
// relative path, an ambiguous URL, a blank id) is an *ArgError: the whole
// call fails closed. A pointer that selects nothing derives nothing.
func (b *Binding) Derive(dst []capability.Capability, root args.Value, o *Options) ([]capability.Capability, error) {
	if o == nil {
		o = &Options{}
	}
	var err error
	for i := range b.Args {
		a := &b.Args[i]
		ao := o
		if a.RelativeTo != nil {
			if ao, err = relativeOptions(a, root, o); err != nil {
				return dst, err
			}
		}
		key, found := a.Pointer.SelectExact(root, func(v args.Value, at args.Loc) {
			if err != nil {
				return
			}
			if a.form() == FormText {
				var e error
				if dst, e = a.deriveText(dst, v, ao); e != nil {
					err = &ArgError{Pointer: at.String(), Kind: a.Kind, Err: e}
				}
				return
			}
			dst = append(dst, capability.Capability{})
			if e := a.deriveTo(&dst[len(dst)-1], v, ao); e != nil {
				dst = dst[:len(dst)-1]
				if e != errNoCapability {
					err = &ArgError{Pointer: at.String(), Kind: a.Kind, Err: e}
				}
			}
		})
		if found {
			// A server that matches keys case-insensitively would read
			// this member as the bound argument; aegis would not see it.
			return dst, &ArgError{Pointer: a.Pointer.String(), Kind: a.Kind,
				Err: fmt.Errorf("a member %q differs from the bound key only in case", key)}
		}
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// errNoCapability is deriveTo's word for an argument that derives
// nothing (a data: URL): not an error.
var errNoCapability = errors.New("no capability")

// schemeRE matches a URL with a scheme (a URL or-path argument's URL
// case): scheme "://", or file:, data:.
var schemeRE = regexp.MustCompile(`^(?i)([a-z][a-z0-9+.-]*://|file:|data:)`)

// relativeOptions returns o with the base a's relative paths resolve
// against: the canonical path of the argument a.RelativeTo points at. With
// none there, a relative path of a has no base and is refused.
func relativeOptions(a *Arg, root args.Value, o *Options) (*Options, error) {
	var base string
	var err error
	a.RelativeTo.SelectExact(root, func(v args.Value, at args.Loc) {
		if err != nil || base != "" {
			return
		}
		var s string
		if s, err = stringValue(v); err == nil {
			base, err = capability.CanonPath(s, &o.Path)
		}
		if err != nil {
			err = &ArgError{Pointer: at.String(), Kind: a.Kind, Err: fmt.Errorf("the directory %s resolves against: %w", a.Pointer, err)}
		}
	})
	if err != nil {
		return nil, err
	}
	ro := *o
	ro.Path.Bases = nil
	if base != "" {
		ro.Path.Bases = []string{base}
	}
	return &ro, nil
}

// deriveTo is derive writing the capability to *c, a zero Capability: a
// URL's and a path's are derived in place, not copied on their way. On
// error *c holds nothing of use.
func (a *Arg) deriveTo(c *capability.Capability, v args.Value, o *Options) error {
	switch a.form() {
	case FormURL:
		return a.deriveURL(c, v, o)
	case FormURLOrPath:
		s, err := stringValue(v)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(s, "-"):
			// git reads it as an option (--upload-pack=, -u runs a
			// program), not as a remote.
			return fmt.Errorf("%q begins with -, which git reads as an option", s)
		case strings.ContainsRune(s, '\\'):
			return fmt.Errorf("%q holds a backslash (a Windows or UNC path aegis cannot judge)", s)
		case len(s) >= 5 && strings.EqualFold(s[:5], "data:"):
			// A remote is fetched from, never carried: git would look
			// for a remote helper of the scheme.
			return fmt.Errorf("%q: a data: URL is not a remote", s)
		case schemeRE.MatchString(s):
			return a.deriveURL(c, v, o)
		case strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "."):
		case strings.Contains(s, ":"):
			return fmt.Errorf("%q is neither a URL with a scheme nor a path (host:path, the scp-like form, is ambiguous)", s)
		}
		rd := *a
		rd.Kind = capability.FSRead
		return rd.derivePath(c, v, o)
	case FormPath:
		return a.derivePath(c, v, o)
	}
	var err error
	*c, err = a.derive(v, o)
	return err
}

// derivePath is derive for an argument of FormPath, writing to *c, a zero
// Capability.
func (a *Arg) derivePath(c *capability.Capability, v args.Value, o *Options) error {
	s, err := stringValue(v)
	if err != nil {
		return err
	}
	// ASCII text is in NFC (no ASCII character decomposes or combines),
	// so the normaliser, which allocates, need not look.
	if o.RequireNFC && !capability.IsASCII(s) && !norm.NFC.IsNormalString(s) {
		return errNotNFC
	}
	p, err := capability.CanonPath(s, &o.Path)
	if err != nil {
		return err
	}
	c.Kind, c.Path, c.Subtree = a.Kind, p, a.Subtree
	return nil
}

// deriveURL is derive for an argument of FormURL.
func (a *Arg) deriveURL(c *capability.Capability, v args.Value, o *Options) error {
	s, err := stringValue(v)
	if err != nil {
		return err
	}
	if err = capability.FromURLTo(c, s); err != nil {
		if errors.Is(err, capability.ErrDataURL) {
			return errNoCapability // its content is in the argument: no connection
		}
		return err
	}
	if c.Kind == capability.FSRead {
		// A file: URL given to a fetching tool reads a local file:
		// the path is canonicalised like any other path argument.
		p, err := capability.CanonPath(c.Path, &o.Path)
		if err != nil {
			return fmt.Errorf("file URL: %w", err)
		}
		c.Path = p
	}
	return nil
}

func (a *Arg) derive(v args.Value, o *Options) (capability.Capability, error) {
	switch a.form() {
	case FormPath:
		var c capability.Capability
		err := a.derivePath(&c, v, o)
		return c, err
	case FormHost:
		s, err := stringValue(v)
		if err != nil {
			return capability.Capability{}, err
		}
		return capability.FromHost(s)
	case FormCommand:
		switch v.Kind() {
		case args.String:
			return capability.ParseCommand(v.Str())
		case args.Array:
			argv := make([]string, v.Len())
			for i := range argv {
				e := v.Index(i)
				if e.Kind() != args.String {
					return capability.Capability{}, fmt.Errorf("argv[%d]: want a string, got %s", i, e.Kind())
				}
				argv[i] = e.Str()
			}
			return capability.FromArgv(argv)
		}
		return capability.Capability{}, fmt.Errorf("want a command line or an argv array, got %s", v.Kind())
	case FormPlain:
		s, err := stringValue(v)
		if err != nil {
			return capability.Capability{}, err
		}
		id := strings.TrimSpace(s)
		if id == "" {
			return capability.Capability{}, fmt.Errorf("blank id")
		}
		return capability.Capability{Kind: capability.ID, IDKind: a.IDKind, ID: id}, nil
	}
	return capability.Capability{}, fmt.Errorf("binding has no form for %s", a.Kind)
}

var errNotNFC = errors.New("path is not in Unicode NFC: the server would match it to an equivalent spelling aegis cannot see")

func stringValue(v args.Value) (string, error) {
	if v.Kind() != args.String {
		return "", fmt.Errorf("want a string, got %s", v.Kind())
	}
	return v.Str(), nil
}
