package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// The bounds of TestSandboxSymlinkSwap: it calls until the swap has landed
// between aegis's check and the server's open swapWant times, and gives up
// after swapMaxCalls calls. Nearly every swap lands (the server takes far
// longer to reach its open than the swapper to wake): the bound leaves
// room for a loaded machine.
const (
	swapWant     = 20
	swapMaxCalls = 400
)

// TestSandboxSymlinkSwap runs the real filesystem server under `sandbox:
// required` (and, as the control, `off`), its allowed directory the whole
// home, with a policy that allows reads under ~ but not ~/.ssh. The client
// reads a symbolic link over and over; the link names an allowed file when
// aegis checks the call, and ~/.ssh/id_rsa (or leads into ~/.ssh) when the
// server opens it. The denied file's marker must never reach the client,
// and the swap must have landed between the check and the open (a call
// aegis allowed on which the server found nothing: the mask) often enough
// to show that the race was run. Without the sandbox the same landings
// return the marker: the control shows that the test can see a leak.
//
// A swapper that flips the link as fast as it can makes the race
// sometimes, at a rate that depends on the scheduler: on a loaded two-core
// machine a file link landed once in two hundred calls. This swapper is
// told when to swap instead: aegis writes a call's envelope once it has
// checked and recorded the call, just before it forwards it (DESIGN.md
// R23), and the swapper, woken by inotify on the envelope directory,
// swaps then, while the server has yet to read the call. Should aegis
// ever write the envelope elsewhere, the landings stop and the test
// fails; it cannot pass by not running the race.
func TestSandboxSymlinkSwap(t *testing.T) {
	needNode(t)
	for _, tc := range []swapCase{
		{
			name:  "a file link",
			files: map[string]string{"ok.txt": swapAllowed, ".ssh/id_rsa": swapMarker},
			link:  "link", read: "link",
			allowed: "ok.txt", denied: ".ssh/id_rsa",
		},
		{
			name:  "a directory link",
			files: map[string]string{"pub/id_rsa": swapAllowed, ".ssh/id_rsa": swapMarker},
			link:  "dir", read: "dir/id_rsa",
			allowed: "pub", denied: ".ssh",
		},
	} {
		for _, mode := range []string{"off", "required"} {
			t.Run(mode+"/"+tc.name, func(t *testing.T) { swapRun(t, mode, tc) })
		}
	}
}

// The files of TestSandboxSymlinkSwap. The denied file's is not a key:
// DLP would hide a key by itself, and the test measures the sandbox.
const (
	swapMarker  = "e2e swap: the denied file was read"
	swapAllowed = "e2e swap: the allowed file"
)

// A swapCase is a home and a link in it, swapped from the allowed target
// to the denied one (paths relative to the home).
type swapCase struct {
	name            string
	files           map[string]string // the home's files
	link            string            // the link
	read            string            // what the client reads
	allowed, denied string            // the link's targets
}

// swapRun is one run of TestSandboxSymlinkSwap, with the server's sandbox
// in mode: "required" must keep the marker from the client, "off" (the
// control) must not.
func swapRun(t *testing.T, mode string, tc swapCase) {
	home, conf, aegisHome := tempDir(t), tempDir(t), tempDir(t)
	writeFiles(t, home, tc.files)
	writeFiles(t, conf, map[string]string{
		"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  fs: {builtin: filesystem, sandbox: " + mode + "}\n",
		"policy.yaml": "version: 1\nrules:\n" +
			"  - {id: tools, effect: allow, server: fs, tool: read_text_file}\n" +
			"  - {id: home, effect: allow, capability: fs.read, path_under: ['~']}\n" +
			"  - {id: no-ssh, effect: deny, capability: [fs.read, fs.write], path_under: ['~/.ssh']}\n",
	})
	sw := &swapper{link: filepath.Join(home, tc.link), allowed: filepath.Join(home, tc.allowed), denied: filepath.Join(home, tc.denied)}
	if err := sw.set(sw.allowed); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ss := startSwapSession(ctx, t, home, conf, aegisHome, sw)
	session, stderr, stop := ss.session, &ss.stderr, ss.stop

	// A call is one of: allowed, and the allowed file read (the swap
	// came after the open); denied by aegis (it came before the check);
	// allowed, and the server found nothing (it landed between the check
	// and the open, and the mask hid the file); or the marker (it landed,
	// and nothing hid the file).
	var calls, read, denied, landed, leaked int
	var odd string
	for calls < swapMaxCalls && landed+leaked < swapWant && odd == "" {
		calls++
		if err := sw.arm(); err != nil {
			break
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": filepath.Join(home, tc.read)}})
		if err != nil {
			sw.close()
			stop()
			t.Fatalf("call %d: %v\nstderr:\n%s", calls, err, stderr.String())
		}
		text := resultText(res)
		switch {
		case strings.Contains(text, swapMarker):
			leaked++
		case !res.IsError && text == swapAllowed:
			read++
		case res.IsError && strings.HasPrefix(text, "aegis denied this call: ") && strings.Contains(text, `"no-ssh"`):
			denied++
		case res.IsError && (strings.Contains(text, "ENOENT") || strings.Contains(text, "EACCES") ||
			// The server's words for ENOENT while it resolves the link
			// (validatePath).
			strings.HasPrefix(text, "Parent directory does not exist: ")):
			landed++
		default:
			odd = text
		}
	}
	swapErr := sw.close()
	stop()
	t.Logf("%d calls: %d read the allowed file, %d denied by aegis, %d landed between the check and the open (found nothing), %d leaked",
		calls, read, denied, landed, leaked)
	if swapErr != nil {
		t.Fatalf("swapping the link: %v", swapErr)
	}
	if odd != "" {
		t.Fatalf("call %d: an answer of no expected kind: %q", calls, odd)
	}
	switch {
	case mode == "off" && leaked < swapWant:
		t.Errorf("without the sandbox, the denied file's content reached the client in %d of %d calls, want %d: the test cannot see a leak", leaked, calls, swapWant)
	case mode != "off" && leaked > 0:
		t.Errorf("the denied file's content reached the client in %d of %d calls", leaked, calls)
	}
	if landed+leaked < swapWant {
		t.Errorf("the swap landed between the check and the open only %d times in %d calls, want %d: the race was not run", landed+leaked, calls, swapWant)
	}
	if mode == "required" && !strings.Contains(stderr.String(), "sandbox: mode=required applied=true") {
		t.Errorf("aegis did not report the sandbox:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "DATA RACE") {
		t.Errorf("aegis reported a data race:\n%s", stderr.String())
	}
}

// TestSandboxSwapMakesNoDeniedTree: ~/.ssh does not exist, and the policy
// lets the filesystem server write anywhere in the home but there. The
// client moves a directory to ~/p/.ssh, where ~/p names ~/pub when aegis
// checks the call and the home itself when the server resolves it: the
// server would make ~/.ssh, with the directory's authorized_keys in it.
// Under `sandbox: required` no mount can hide the absent ~/.ssh, but the
// write grant stops short of it (the home is frozen): the rename fails,
// and ~/.ssh is never made. Under `off`, the control, it is.
func TestSandboxSwapMakesNoDeniedTree(t *testing.T) {
	needNode(t)
	for _, mode := range []string{"off", "required"} {
		t.Run(mode, func(t *testing.T) {
			home, conf, aegisHome := tempDir(t), tempDir(t), tempDir(t)
			writeFiles(t, home, map[string]string{"pub/keep": "", "stage/keep": ""})
			writeFiles(t, conf, map[string]string{
				"aegis.yaml": "version: 1\npolicy: policy.yaml\nservers:\n  fs: {builtin: filesystem, sandbox: " + mode + "}\n",
				"policy.yaml": "version: 1\nrules:\n" +
					"  - {id: tools, effect: allow, server: fs, tool: move_file}\n" +
					"  - {id: home, effect: allow, capability: [fs.read, fs.write], path_under: ['~']}\n" +
					"  - {id: no-ssh, effect: deny, capability: [fs.read, fs.write], path_under: ['~/.ssh']}\n",
			})
			sw := &swapper{link: filepath.Join(home, "p"), allowed: filepath.Join(home, "pub"), denied: home}
			if err := sw.set(sw.allowed); err != nil {
				t.Fatal(err)
			}
			ssh, staged, moved := filepath.Join(home, ".ssh"), filepath.Join(home, "stage/ssh"), filepath.Join(home, "pub/.ssh")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			ss := startSwapSession(ctx, t, home, conf, aegisHome, sw)

			// A call is one of: allowed, and the directory moved into
			// ~/pub (the swap came after the server resolved the path);
			// denied by aegis (before the check); allowed, and the
			// server refused the rename (it landed between the check and
			// the rename, and the grant stopped it); or ~/.ssh made.
			var calls, moves, denied, landed, made int
			var odd string
			for calls < swapMaxCalls && landed+made < swapWant && odd == "" {
				calls++
				os.RemoveAll(moved)
				os.RemoveAll(ssh)
				writeFiles(t, home, map[string]string{"stage/ssh/authorized_keys": "ssh-ed25519 AAAA e2e-attacker\n"})
				if err := sw.arm(); err != nil {
					break
				}
				res, err := ss.session.CallTool(ctx, &mcp.CallToolParams{Name: "move_file", Arguments: map[string]any{
					"source": staged, "destination": filepath.Join(home, "p/.ssh"),
				}})
				if err != nil {
					sw.close()
					ss.stop()
					t.Fatalf("call %d: %v\nstderr:\n%s", calls, err, ss.stderr.String())
				}
				text := resultText(res)
				_, statErr := os.Lstat(ssh)
				switch {
				case statErr == nil:
					made++
				case !res.IsError:
					moves++
				case strings.HasPrefix(text, "aegis denied this call: ") && strings.Contains(text, `"no-ssh"`):
					denied++
				case strings.Contains(text, "EACCES") || strings.Contains(text, "EPERM"):
					landed++
				default:
					odd = text
				}
			}
			swapErr := sw.close()
			ss.stop()
			t.Logf("%d calls: %d moved into ~/pub, %d denied by aegis, %d landed and refused, %d made ~/.ssh", calls, moves, denied, landed, made)
			if swapErr != nil {
				t.Fatalf("swapping the link: %v", swapErr)
			}
			if odd != "" {
				t.Fatalf("call %d: an answer of no expected kind: %q", calls, odd)
			}
			switch {
			case mode == "off" && made < swapWant:
				t.Errorf("without the sandbox, ~/.ssh was made in %d of %d calls, want %d: the test cannot see it", made, calls, swapWant)
			case mode != "off" && made > 0:
				t.Errorf("the server made ~/.ssh in %d of %d calls", made, calls)
			}
			if landed+made < swapWant {
				t.Errorf("the swap landed between the check and the rename only %d times in %d calls, want %d: the race was not run", landed+made, calls, swapWant)
			}
			if mode == "required" && !strings.Contains(ss.stderr.String(), "frozen=["+home+"]") {
				t.Errorf("aegis did not report the home frozen:\n%s", ss.stderr.String())
			}
		})
	}
}

// A swapSession is aegis run wrapping the filesystem server, its allowed
// directory the home, with a swapper watching its envelopes.
type swapSession struct {
	session *mcp.ClientSession
	stderr  bytes.Buffer // complete once stop has returned
	stop    func()
}

// startSwapSession starts aegis with conf/aegis.yaml and lists the tools
// (aegis checks a tool's arguments against the schema the server listed),
// then starts sw.
func startSwapSession(ctx context.Context, t *testing.T, home, conf, aegisHome string, sw *swapper) *swapSession {
	t.Helper()
	ss := &swapSession{}
	c := exec.Command(aegisBin, "run", "--config", filepath.Join(conf, "aegis.yaml"), "--server", "fs", "--principal", "e2e",
		"--", nodeBin, filepath.Join(e2eDir, filesystemJS), home)
	c.Env = baseEnv(home, aegisHome)
	c.Stderr = &ss.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-e2e-swap", Version: "1.0.0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: c, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting through aegis: %v\nstderr:\n%s", err, ss.stderr.String())
	}
	ss.session = session
	ss.stop = func() {
		if err := session.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
	}
	if _, err := session.ListTools(ctx, nil); err != nil {
		ss.stop()
		t.Fatalf("tools/list: %v\nstderr:\n%s", err, ss.stderr.String())
	}
	if err := sw.start(filepath.Join(aegisHome, "envelopes", "fs")); err != nil {
		ss.stop()
		t.Fatal(err)
	}
	return ss
}

// A swapper points a symbolic link at its allowed target before each call
// and, once armed, at its denied target as soon as aegis writes in the
// envelope directory. Each swap is a rename over the link, so the link
// always names one of the two.
type swapper struct {
	link, allowed, denied string

	mu     sync.Mutex // serialises swaps
	armed  bool
	err    error
	events *os.File // the inotify descriptor
	done   chan struct{}
}

// set points the link at target.
func (s *swapper) set(target string) error {
	tmp := s.link + ".swap"
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, s.link)
}

// start watches dir for writes, and swaps on the first one after each arm.
func (s *swapper) start(dir string) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	// Non-blocking, so that Close ends a Read.
	s.events = os.NewFile(uintptr(fd), "inotify")
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			if _, err := s.events.Read(buf); err != nil {
				return
			}
			s.mu.Lock()
			if s.armed && s.err == nil {
				s.armed = false
				s.err = s.set(s.denied)
			}
			s.mu.Unlock()
		}
	}()
	return nil
}

// arm points the link at the allowed target and lets the next write swap
// it. It returns the first error of a swap.
func (s *swapper) arm() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = s.set(s.allowed)
	}
	s.armed = s.err == nil
	return s.err
}

// close stops the watch and returns the first error of a swap.
func (s *swapper) close() error {
	if s.events != nil {
		s.events.Close()
		<-s.done
		s.events = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
