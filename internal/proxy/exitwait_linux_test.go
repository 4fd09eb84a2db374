package proxy

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// threads is this process's count of OS threads.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: in /proc/self/status")
	return 0
}

// TestAwaitExit: children waited for by awaitExit hold no thread each
// while they live (os.Process.Wait holds one in waitid), and each wait
// returns once its child has exited, with Wait then reaping it.
func TestAwaitExit(t *testing.T) {
	const children = 64
	var cmds []*exec.Cmd
	var stdins []*os.File
	for range children {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command("cat") // lives until its input closes
		c.Stdin = r
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		cmds, stdins = append(cmds, c), append(stdins, w)
	}
	before := threads(t)
	var wg sync.WaitGroup
	waiting := make(chan struct{}, children)
	results := make([]bool, children)
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waiting <- struct{}{}
			results[i] = awaitExit(c.Process.Pid)
			c.Wait()
		}()
	}
	for range children {
		<-waiting
	}
	// Each goroutine is in awaitExit or about to be; a thread each would
	// show as children more threads once they are all parked. Give them
	// the chance to park by yielding on a pipe round trip per child.
	for range children {
		r, w, _ := os.Pipe()
		w.Write([]byte{1})
		r.Read(make([]byte, 1))
		r.Close()
		w.Close()
	}
	during := threads(t)
	for _, w := range stdins {
		w.Close()
	}
	wg.Wait()
	for i, ok := range results {
		if !ok {
			t.Errorf("child %d: awaitExit returned false", i)
		}
		if cmds[i].ProcessState == nil || !cmds[i].ProcessState.Exited() {
			t.Errorf("child %d: not reaped after awaitExit", i)
		}
	}
	if during-before >= children/2 {
		t.Errorf("%d children being waited for held %d more threads (%d → %d), want far fewer than one each", children, during-before, before, during)
	}
}
