package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns Debian's Chromium, which .ci/run installs; without it
// the test skips, and fails under CI.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("AEGIS_E2E_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set and Chromium is missing (.ci/run installs Debian's chromium)")
	}
	t.Skip("skipping: no Chromium (apt-get install chromium; with CI set this fails)")
	return ""
}

// TestConsoleInChromium: a write that asks is held while a person opens
// `aegis console` in a real browser (headless Chromium) and clicks
// Approve; the held call runs. A second one is denied by clicking Deny,
// and does not run. The chain says both went through the console.
func TestConsoleInChromium(t *testing.T) {
	needNode(t)
	browser := chromium(t)
	h := askingHome(t, "")
	approved, denied := filepath.Join(h.home, "projects/shared/clicked.txt"), filepath.Join(h.home, "projects/shared/refused.txt")

	// The console, as a person starts it.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	con := exec.CommandContext(ctx, aegisBin, "console")
	con.Env = h.env
	out, err := con.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := con.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { con.Process.Signal(os.Interrupt); con.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "aegis console: http://127.") {
		t.Fatalf("aegis console said %q (%v)", line, err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "aegis console: "))

	// The person, in the browser, while the agent's calls wait.
	alloc, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU)...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(alloc)
	defer bcancel()
	origin := url[:strings.Index(url, "/?token=")]
	// click loads the console (as its own refresh would) until the
	// button that xpath finds is there, and clicks it.
	click := func(xpath string) error {
		for {
			// A load the page's own refresh or a form's answer aborts
			// is tried again.
			if err := chromedp.Do(bctx, chromedp.Navigate(origin+"/")); err == nil {
				nodes, err := chromedp.Run(bctx, chromedp.Nodes(chromedp.Search(xpath), chromedp.AtLeast(0)))
				if err == nil && len(nodes) > 0 {
					// The form's answer loads the console again, without
					// the button: only then is the click done.
					return chromedp.Do(bctx, chromedp.Click(chromedp.Search(xpath)), chromedp.WaitNotPresent(chromedp.Search(xpath)))
				}
			}
			select {
			case <-bctx.Done():
				return bctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	clicked := make(chan error, 1)
	go func() {
		// Signing in: the token in the URL becomes the console's cookie.
		if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
			clicked <- err
			return
		}
		if err := click(`//div[@class="card"][contains(., "clicked.txt")]//button[@class="approve"]`); err != nil {
			clicked <- err
			return
		}
		clicked <- click(`//div[@class="card"][contains(., "refused.txt")]//button[@class="deny"]`)
	}()
	calls := []fsCall{
		{name: "write_file approved in the console", tool: "write_file", args: map[string]any{"path": approved, "content": "clicked"}},
		{name: "write_file denied in the console", tool: "write_file", args: map[string]any{"path": denied, "content": "refused"}},
	}
	r := mustDriver(t, h.env, []string{"calls", writePlan(t, calls)}, aegisRun(filepath.Join(h.home, "asking.yaml"), "fs", nodeBin, filepath.Join(e2eDir, filesystemJS), h.home))
	if err := <-clicked; err != nil {
		t.Fatalf("the browser: %v", err)
	}
	results := tsResults(t, r)
	if len(results) != 2 || results[0].isError || !results[1].isError || !strings.Contains(results[1].text, "declined this call") {
		t.Fatalf("results %+v\n%s", results, r.Stderr)
	}
	if b, err := os.ReadFile(approved); err != nil || string(b) != "clicked" {
		t.Errorf("the approved file: %q %v", b, err)
	}
	if _, err := os.Stat(denied); !os.IsNotExist(err) {
		t.Errorf("the denied file exists (%v)", err)
	}
	log, code := aegisCLI(t, h.env, "log", "--server", "fs")
	if code != 0 || strings.Count(log, "through console") != 2 {
		t.Errorf("aegis log (exit %d) does not show both answers through the console:\n%s", code, log)
	}
}
