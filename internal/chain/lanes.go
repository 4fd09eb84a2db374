package chain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The lanes of a server's chain: the package doc's "Lanes" section, and
// docs/design/lanes.md for the why.

// Lanes lists the lanes of server's chain under root, in order. A
// directory, or a link to one, whose name [ParseLaneName] reads as a lane
// of server is one; a missing root holds none.
func Lanes(root, server string) ([]Lane, error) {
	ents, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []Lane
	for _, e := range ents {
		if s, n, ok := ParseLaneName(e.Name()); ok && s == server && isDir(root, e) {
			out = append(out, Lane{N: n, Dir: filepath.Join(root, e.Name())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out, nil
}

// Servers lists, sorted, the servers that have a lane under root: the
// chains a reader can name by server. A missing root holds none.
func Servers(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, e := range ents {
		if s, _, ok := ParseLaneName(e.Name()); ok && !seen[s] && isDir(root, e) {
			seen[s] = true
			names = append(names, s)
		}
	}
	sort.Strings(names)
	return names, nil
}

// isDir reports whether e, an entry of root, is a directory or a link to
// one: a writer records in a lane through a link (a chain moved to
// another disk), so its readers read it too.
func isDir(root string, e os.DirEntry) bool {
	if e.Type()&os.ModeSymlink == 0 {
		return e.IsDir()
	}
	fi, err := os.Stat(filepath.Join(root, e.Name()))
	return err == nil && fi.IsDir()
}

// Written reports whether the lane holds a segment file. Its writer's
// Open starts the first one once it has the key, so a lane without one
// was never written: its Open failed before then. A directory whose
// segments cannot be listed counts as written, for its reader to report.
func (ln Lane) Written() bool {
	starts, err := SegmentStarts(ln.Dir)
	return err != nil || len(starts) > 0
}

// checkFirstKey refuses to let lane 1 make a key when it has none while a
// later lane holds a chain: that chain is signed by the key lane 1 lost,
// and a new one would sign lane 1 with a key the later lane's chain.pub
// is not the half of. The lanes are listed before the key is looked for:
// a lane gets its first segment only once the key exists, and a key is
// never removed, so a key missing after a segment was seen was lost.
func checkFirstKey(root, server string) error {
	lanes, err := Lanes(root, server)
	if err != nil {
		return err
	}
	holder := ""
	for _, ln := range lanes {
		if ln.N >= 2 && ln.Written() {
			holder = ln.Dir
			break
		}
	}
	if holder == "" {
		return nil
	}
	key := filepath.Join(LaneDir(root, server, 1), PrivateKeyFile)
	if _, err := os.Stat(key); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("chain: %s is missing but %s holds a chain signed by it: refusing to start a second key (restore it, or remove every lane of server %q's chain)", key, holder, server)
	}
	return nil
}

// laneOptions are opts for lane n of server's chain under root: a lane
// after the first shares the first's key.
func laneOptions(root, server string, n int, opts *Options) *Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if n > 1 {
		o.KeyDir = LaneDir(root, server, 1)
	}
	return &o
}

// OpenLane opens the first lane of server's chain under root that no
// other writer holds ([ErrInUse]), trying lane 1, 2, … up to [MaxLanes];
// the lanes after the first share the first's key, whatever opts.KeyDir
// says. It refuses to make a key in lane 1 when lane 1 has lost the key a
// later lane's chain is signed with. opts may be nil, as for [Open].
func OpenLane(root, server string, opts *Options) (*Log, Lane, error) {
	if err := CheckServerName(server); err != nil {
		return nil, Lane{}, err
	}
	for n := 1; n <= MaxLanes; n++ {
		if n == 1 {
			if err := checkFirstKey(root, server); err != nil {
				return nil, Lane{}, err
			}
		}
		ln := Lane{N: n, Dir: LaneDir(root, server, n)}
		l, err := Open(ln.Dir, laneOptions(root, server, n, opts))
		if errors.Is(err, ErrInUse) {
			continue
		}
		return l, ln, err
	}
	return nil, Lane{}, fmt.Errorf("chain: the %d lanes of server %q's chain in %s are all in use: %d aegis processes record that server already", MaxLanes, server, root, MaxLanes)
}

// TidyLanes signs what a crash left unsigned in the lanes of server's
// chain under root other than mine that no writer holds. A writer signs
// its lane's acknowledged tail when it opens the lane again, but a lane
// after the first is opened again only while another writer records the
// server: until then [Verify] would call it cut short. Only a lane whose
// last line is not a checkpoint ([TailSigned]) is opened, which recovers
// and signs it, and closed at once; one another writer holds is left to
// it, and one whose tail cannot be read is left for Verify to report.
//
// It returns what it could not do, one error per lane that ends unsigned
// and could not be opened, joined with [errors.Join]; such a lane is left
// as it is, for Verify to explain.
func TidyLanes(root, server string, mine Lane, opts *Options) error {
	lanes, err := Lanes(root, server)
	if err != nil {
		return fmt.Errorf("listing the lanes of server %q's chain: %w", server, err)
	}
	var errs []error
	for _, ln := range lanes {
		if ln.N == mine.N {
			continue
		}
		if signed, err := TailSigned(ln.Dir); err != nil || signed {
			continue // an unreadable lane is Verify's to report
		}
		l, err := Open(ln.Dir, laneOptions(root, server, ln.N, opts))
		if errors.Is(err, ErrInUse) {
			continue
		}
		if err == nil {
			err = l.Close()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("lane %d of server %q's chain ends unsigned and could not be opened to sign it: %w", ln.N, server, err))
		}
	}
	return errors.Join(errs...)
}

// ServerLanes returns every lane of server's chain under root, or of the
// only server there when server is "", and the server's name. A server
// that has recorded nothing yet has its first lane, empty. With no server,
// or several, it says so.
func ServerLanes(root, server string) (string, []Lane, error) {
	if server == "" {
		names, err := Servers(root)
		if err != nil {
			return "", nil, err
		}
		switch len(names) {
		case 0:
			return "", nil, fmt.Errorf("no chain in %s: nothing has been recorded yet (or pass --chain DIR)", root)
		case 1:
			server = names[0]
		default:
			return "", nil, fmt.Errorf("%s holds the chains of %d servers (%s): say which with --server NAME", root, len(names), strings.Join(names, ", "))
		}
	} else if err := CheckServerName(server); err != nil {
		return "", nil, err
	}
	lanes, err := Lanes(root, server)
	if err != nil {
		return "", nil, err
	}
	if len(lanes) == 0 {
		lanes = []Lane{{N: 1, Dir: LaneDir(root, server, 1)}}
	}
	return server, lanes, nil
}

// AllLanes returns every lane of every server under root, the servers in
// the order of their names; with no server there, it says so.
func AllLanes(root string) ([]Lane, error) {
	names, err := Servers(root)
	if err != nil {
		return nil, err
	}
	if len(names) <= 1 {
		_, lanes, err := ServerLanes(root, "")
		return lanes, err
	}
	var all []Lane
	for _, name := range names {
		lanes, err := Lanes(root, name)
		if err != nil {
			return nil, err
		}
		all = append(all, lanes...)
	}
	return all, nil
}
