package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/config"
)

// Lanes. A chain has one writer, and one `aegis run` writes it; but one
// server is often wrapped by several aegis processes at once: two agent
// sessions, two clients, a client that starts its servers twice. So each
// process records in the first lane of the server's chain that no other
// process holds: chain/SERVER, then chain/SERVER@2, chain/SERVER@3, and so
// on. Each lane is a chain of its own, numbered and linked on its own; all
// of a server's lanes are signed with one key, kept in its first lane (a
// copy of chain.pub sits beside every lane). The commands that read chains
// read every lane of a server, and name an entry of lane 2 and beyond as
// SEQ@LANE. Server names cannot hold '@', so no lane is another server's.

// maxLanes bounds the aegis processes that record one server at once.
const maxLanes = 64

// A lane is one chain of a server's: its number and directory. Lane 0 is
// a chain named by its directory alone (--chain DIR).
type lane struct {
	n   int
	dir string
}

// seq names entry seq of the lane: "17", or "17@2" in lane 2.
func (ln lane) seq(seq uint64) string {
	if ln.n < 2 {
		return strconv.FormatUint(seq, 10)
	}
	return strconv.FormatUint(seq, 10) + "@" + strconv.Itoa(ln.n)
}

// laneDir is the directory of lane n of server's chain under root.
func laneDir(root, server string, n int) string {
	if n < 2 {
		return filepath.Join(root, server)
	}
	return filepath.Join(root, server+"@"+strconv.Itoa(n))
}

// parseLaneName reads a chain directory's name: "fs" is lane 1 of fs,
// "fs@2" lane 2. Anything else is not a lane.
func parseLaneName(name string) (server string, n int, ok bool) {
	server, num, found := strings.Cut(name, "@")
	if config.CheckServerName(server) != nil {
		return "", 0, false
	}
	if !found {
		return server, 1, true
	}
	if n, ok = parseLaneNumber(num); !ok {
		return "", 0, false
	}
	return server, n, true
}

// parseLaneNumber reads a lane number as written after '@': 2 to maxLanes,
// in decimal without a sign or leading zeros, so that one lane has one
// name.
func parseLaneNumber(s string) (int, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, false // empty, signed, or a leading zero
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 2 && n <= maxLanes
}

// parseEntryName reads an entry's name as the commands print it: SEQ, an
// entry of lane 1, or SEQ@LANE.
func parseEntryName(s string) (seq uint64, n int, ok bool) {
	num, ln, found := strings.Cut(s, "@")
	n = 1
	if found {
		if n, ok = parseLaneNumber(ln); !ok {
			return 0, 0, false
		}
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	return seq, n, err == nil && seq > 0
}

// serverLanes lists the lanes of server's chain under root, in order.
func serverLanes(root, server string) ([]lane, error) {
	ents, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []lane
	for _, e := range ents {
		if s, n, ok := parseLaneName(e.Name()); ok && s == server && isDir(root, e) {
			out = append(out, lane{n: n, dir: filepath.Join(root, e.Name())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	return out, nil
}

// isDir reports whether e, an entry of root, is a directory or a link to
// one: aegis run records in a lane through a link (a chain moved to
// another disk), so the commands that read the lanes read it too.
func isDir(root string, e os.DirEntry) bool {
	if e.Type()&os.ModeSymlink == 0 {
		return e.IsDir()
	}
	fi, err := os.Stat(filepath.Join(root, e.Name()))
	return err == nil && fi.IsDir()
}

// checkFirstKey refuses to let lane 1 make a key when it has none while a
// later lane holds a chain: that chain is signed by the key lane 1 lost,
// and a new one would sign lane 1 with a key the later lane's chain.pub
// is not the half of. The lanes are listed before the key is looked for:
// a lane gets its first segment only once the key exists, and aegis never
// removes a key, so a key missing after a segment was seen was lost.
func checkFirstKey(root, server string) error {
	lanes, err := serverLanes(root, server)
	if err != nil {
		return err
	}
	holder := ""
	for _, ln := range lanes {
		if ln.n < 2 {
			continue
		}
		if hasSegments(ln.dir) {
			holder = ln.dir
			break
		}
	}
	if holder == "" {
		return nil
	}
	key := filepath.Join(laneDir(root, server, 1), chain.PrivateKeyFile)
	if _, err := os.Stat(key); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("chain: %s is missing but %s holds a chain signed by it: refusing to start a second key (restore it, or remove every lane of server %q's chain)", key, holder, server)
	}
	return nil
}

// hasSegments reports whether the lane in dir holds a segment file. Its
// writer's Open starts the first one once it has the key, so a lane
// without one was never opened: its Open failed before then. A directory
// chain cannot list counts as holding one, for its reader to report.
func hasSegments(dir string) bool {
	starts, err := chain.SegmentStarts(dir)
	return err != nil || len(starts) > 0
}

// openLane opens the first lane of server's chain under root that no
// other writer holds; the lanes after the first share its key.
func openLane(root, server string, opts chain.Options) (*chain.Log, lane, error) {
	for n := 1; n <= maxLanes; n++ {
		o := opts
		if n > 1 {
			o.KeyDir = laneDir(root, server, 1)
		} else if err := checkFirstKey(root, server); err != nil {
			return nil, lane{}, err
		}
		ln := lane{n: n, dir: laneDir(root, server, n)}
		l, err := chain.Open(ln.dir, &o)
		if errors.Is(err, chain.ErrInUse) {
			continue
		}
		return l, ln, err
	}
	return nil, lane{}, fmt.Errorf("chain: the %d lanes of server %q's chain in %s are all in use: %d aegis processes record that server already", maxLanes, server, root, maxLanes)
}

// tidyLanes signs what a crash left unsigned in the lanes of server's
// chain other than mine that no writer holds. A writer signs its lane's
// acknowledged tail when it opens the lane again, but a lane after the
// first is opened again only while another aegis records the server: until
// then `aegis verify` would call it cut short. Only a lane whose last line
// is not a checkpoint is opened (and closed at once, signed); one held by
// a writer is left to it. A lane that cannot be opened is reported on
// warn and left as it is: verify will say why.
func tidyLanes(root, server string, mine lane, opts chain.Options, warn io.Writer) {
	lanes, err := serverLanes(root, server)
	if err != nil {
		fmt.Fprintf(warn, "aegis: listing the lanes of server %q's chain: %v\n", server, err)
		return
	}
	for _, ln := range lanes {
		if ln.n == mine.n {
			continue
		}
		if signed, err := chain.TailSigned(ln.dir); err != nil || signed {
			continue // an unreadable lane is verify's to report
		}
		o := opts
		if ln.n > 1 {
			o.KeyDir = laneDir(root, server, 1)
		}
		l, err := chain.Open(ln.dir, &o)
		if errors.Is(err, chain.ErrInUse) {
			continue
		}
		if err == nil {
			err = l.Close()
		}
		if err != nil {
			fmt.Fprintf(warn, "aegis: lane %d of server %q's chain ends unsigned and could not be opened to sign it: %v\n", ln.n, server, err)
		}
	}
}

// chainLanes resolves the chains a command reads: --chain DIR alone, else
// every lane of --server NAME's chain in the state directory, else those
// of the only server there. It returns the server's name ("" for --chain).
// A server that has recorded nothing yet has its first lane, empty.
func chainLanes(dir, server string) (string, []lane, error) {
	if dir != "" {
		return "", []lane{{dir: dir}}, nil
	}
	state, err := stateDir()
	if err != nil {
		return "", nil, err
	}
	root := filepath.Join(state, "chain")
	if server == "" {
		ents, err := os.ReadDir(root)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", nil, err
		}
		seen := map[string]bool{}
		var names []string
		for _, e := range ents {
			if s, _, ok := parseLaneName(e.Name()); ok && !seen[s] && isDir(root, e) {
				seen[s] = true
				names = append(names, s)
			}
		}
		sort.Strings(names)
		switch len(names) {
		case 0:
			return "", nil, fmt.Errorf("no chain in %s: nothing has been recorded yet (or pass --chain DIR)", root)
		case 1:
			server = names[0]
		default:
			return "", nil, fmt.Errorf("%s holds the chains of %d servers (%s): say which with --server NAME", root, len(names), strings.Join(names, ", "))
		}
	} else if err := config.CheckServerName(server); err != nil {
		return "", nil, err
	}
	lanes, err := serverLanes(root, server)
	if err != nil {
		return "", nil, err
	}
	if len(lanes) == 0 {
		lanes = []lane{{n: 1, dir: laneDir(root, server, 1)}}
	}
	return server, lanes, nil
}
